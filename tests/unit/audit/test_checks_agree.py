"""Checks that agree: a FAILed citation or a claim check against a fully grounded sentence is never silent.

The rule (`transforms.audit.agreement`) runs in routing, so the same cases go through the Beam pipeline's plain
audit, the in-line service (its ASGI app in process) and `groundwatch gate`.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from starlette.testclient import TestClient

from pipelines.cli import main
from pipelines.runner.inline import InlineAuditor
from pipelines.serving.app import ServeConfig, create_app
from tests.support.audit_messages import message
from transforms.audit.agreement import claim_sentence

LAB = {"doc_id": "1", "content": "Lab results showed potassium at 4.2 mmol/L on admission."}
OTHER_LAB = {"doc_id": "2", "content": "Potassium was 3.1 mmol/L on admission."}
UNRELATED = {"doc_id": "2", "content": "Sodium was 140 mmol/L at discharge after the infusion."}
SENTENCE = "Potassium was 4.2 mmol/L on admission"

# A cited passage contradicts a sentence another passage supports: the sentence verifier says fully grounded,
# the citation audit says CONTRADICTS.
CONTRADICTED_CITATION = message("cites-contradiction", answer=f"{SENTENCE} [1][2].", evidence=[LAB, OTHER_LAB])
# The cited passage is unrelated, the sentence is grounded in another: a misattributed citation, no disagreement.
WRONG_CITATION = message("cites-wrong-passage", answer=f"{SENTENCE} [2].", evidence=[LAB, UNRELATED])
# The generator's logged claim names the contradicting passage: its claim check says contradicted.
CONTRADICTED_CLAIM = message(
    "claim-contradicted",
    answer=f"{SENTENCE}.",
    evidence=[LAB, OTHER_LAB],
    claims=[{"claim_text": SENTENCE, "source_doc_ids": ["2"]}],
)


def _reasons(msg: dict) -> list[str]:
    auditor = InlineAuditor(source="test")
    audited = auditor.audit(auditor.parse(json.dumps(msg).encode()))
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"
    return audited.review.reasons


def test_a_cited_passage_that_contradicts_a_grounded_sentence_goes_to_review():
    reasons = _reasons(CONTRADICTED_CITATION)
    assert reasons == ["checks_disagree: sentence 0 fully_grounded but citation [2] (source 2) CONTRADICTS"]


def test_a_misattributed_citation_on_a_grounded_sentence_is_reconciled_not_a_disagreement():
    auditor = InlineAuditor(source="test")
    audited = auditor.audit(auditor.parse(json.dumps(WRONG_CITATION).encode()))
    (citation,) = audited.citations.audit_results
    assert citation.overall_verdict.value == "FAIL" and citation.verification_status.value == "misattributed"
    assert not any(r.startswith("checks_disagree") for r in audited.review.reasons)


def test_a_claim_check_against_the_sentence_verdict_goes_to_review():
    reasons = _reasons(CONTRADICTED_CLAIM)
    assert "checks_disagree: sentence 0 fully_grounded but claim 0 checked contradicted" in reasons


def test_the_service_routes_the_disagreement_the_same_way():
    with TestClient(create_app(ServeConfig())) as client:
        result = client.post("/v1/verify", json=CONTRADICTED_CITATION).json()
    assert result["review"]["needs_review"]
    assert result["review"]["reasons"][0].startswith("checks_disagree: sentence 0 fully_grounded")


def test_the_gate_fails_the_response_whose_checks_disagree(tmp_path):
    traffic = tmp_path / "answers.jsonl"
    traffic.write_text(json.dumps(CONTRADICTED_CITATION) + "\n" + json.dumps(WRONG_CITATION) + "\n")
    junit, summary = tmp_path / "gate.xml", tmp_path / "gate.md"
    flags = ["--junit", str(junit), "--summary", str(summary), "--max-review-share", "0.5"]
    assert main(["gate", "--input", str(traffic), *flags]) == 0
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    failure = cases["cites-contradiction"].find("failure")  # the findings first, then the review reasons
    assert "checks_disagree: sentence 0 fully_grounded" in failure.get("message") + (failure.text or "")
    assert cases["cites-wrong-passage"].find("failure") is None


def test_a_claim_is_matched_to_the_sentence_that_states_it():
    auditor = InlineAuditor(source="test")
    answer = f"{SENTENCE}. The patient was discharged on day three."
    sentences = auditor.audit(auditor.parse(json.dumps(message(answer=answer, evidence=[LAB])).encode())).report
    assert claim_sentence("potassium was 4.2 mmol/L on admission", sentences.sentences).sentence_index == 0
    assert claim_sentence("Patient discharged on day three", sentences.sentences).sentence_index == 1
    assert claim_sentence("Sodium was normal", sentences.sentences) is None
