"""The judge's citation audit and claim checks merged over the offline ones; the pipeline runs them end to end."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from schemas import AuditedResponse, LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message, raw
from tests.support.openai_server import OpenAIServer, Scripted, grounded_reply
from transforms.attribution.citations import audit_citations, validate_citation_report
from transforms.attribution.claims import check_claims
from transforms.audit.stages import verify_response
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.judge.client import JudgeClient
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.harness import judge_items
from transforms.verify.judge.reports import merge_citations, merge_claims, report_items, worst_status
from transforms.verify.judge.schema import Task

NOW = datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
ANSWER = "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024 [1]. Rest was advised [9]."
CLAIMS = [
    {"claim_text": "50 mg of metoprolol twice daily", "source_doc_ids": ["1"], "confidence": "HIGH"},
    {"claim_text": "Rest was advised", "source_doc_ids": ["9"], "confidence": 0.9},
]


def audited() -> AuditedResponse:
    response = LoggedResponse.model_validate(message("r-1", answer=ANSWER, claims=CLAIMS))
    verifier = HeuristicVerifier()
    base = verify_response(
        ParsedResponse(response=response, origin=at(1)),
        verifier=verifier,
        threshold=0.7,
        window_start=NOW,
        window_end=NOW,
        now=NOW,
    )
    return base.model_copy(
        update={"citations": audit_citations(response, verifier), "claims": check_claims(response, verifier)}
    )


def judged(task: Task, reply):
    a = audited()
    [item] = [i for i in report_items(a, [task]) if i.task is task]
    with OpenAIServer() as server:
        server.script(Scripted(content=reply))
        client = JudgeClient(JudgeConfig(base_url=server.base_url, model="scripted-judge"))
        [outcome] = judge_items(client, task, [item])
    return a, item, outcome


def test_citation_items_use_positions_and_the_cited_passage():
    a = audited()
    [item] = report_items(a, [Task.citations])
    assert [(c.citation_id, c.cited_evidence_id) for c in item.citations] == [("c0", "1"), ("c1", "9")]
    assert report_items(a, [Task.claims])[0].claims[1].source_doc_ids == ["9"]


@pytest.mark.server
def test_the_judge_settles_support_but_a_fabricated_citation_stays_fabricated():
    def unrelated(request):
        document = json.loads(grounded_reply(request))
        document["answers"][0]["audit_results"][0].update(
            claim_support_level="PARTIALLY_SUPPORTS",
            verification_status="partial_match",
            overall_verdict="FAIL",
            auditor_notes="twice daily is not in the passage",
        )
        return json.dumps(document)

    a, _, outcome = judged(Task.citations, unrelated)
    assert outcome.status == "judged"
    merged = merge_citations(a.citations, outcome, "openai:scripted-judge")
    first, second = merged.audit_results
    assert (first.claim_support_level.value, first.verification_status.value, first.overall_verdict.value) == (
        "PARTIALLY_SUPPORTS",
        "partial_match",
        "FAIL",
    )
    assert first.auditor_notes.startswith("judge: ")
    assert (second.verification_status.value, second.overall_verdict.value) == ("fabricated", "FAIL")
    assert (merged.summary.passed, merged.summary.failed) == (0, 2)
    assert validate_citation_report(merged, a.parsed.response) == []


@pytest.mark.server
def test_the_judge_verdict_on_a_claim_recomputes_overconfidence():
    def contradicted(request):
        document = json.loads(grounded_reply(request))
        claim = document["answers"][0]["claims"][0]
        claim.update(attribution_verdict="contradicted", confidence=0.9, notes="the dose differs")
        return json.dumps(document)

    a, _, outcome = judged(Task.claims, contradicted)
    merged = merge_claims(a.claims, outcome, "openai:scripted-judge")
    first = merged.claims[0]
    assert (first.verified_verdict.value, first.verified_confidence, first.overconfident) == ("contradicted", 0.9, True)
    assert [i for i in first.issues if i.startswith("overconfident")] == [
        "overconfident: the judge finds contradicted (the dose differs)"
    ]
    assert merged.verifier == "openai:scripted-judge"


def test_worst_status_prefers_errors_to_failures_to_success():
    assert worst_status([None, "judged"]) == "judged"
    assert worst_status(["judged", "judge_validation_failed"]) == "judge_validation_failed"
    assert worst_status(["judge_error", "judge_validation_failed", None]) == "judge_error"


@pytest.mark.server
def test_audit_command_runs_all_three_judge_tasks(tmp_path):
    traffic, lake = tmp_path / "traffic.jsonl", tmp_path / "lake"
    traffic.write_bytes(raw(message("r-1", answer=ANSWER, claims=CLAIMS)) + b"\n")
    with OpenAIServer() as server:
        code = groundwatch(
            [
                "audit",
                "--input",
                str(traffic),
                "--lake",
                str(lake),
                "--verifier",
                "openai",
                "--judge-base-url",
                server.base_url,
                "--judge-model",
                "scripted-judge",
                "--judge-tasks",
                "sentences,citations,claims",
            ]
        )
    assert code == 0
    con = connect_lake(str(lake))
    tasks = con.execute("SELECT task, status FROM judge_calls ORDER BY task").fetchall()
    assert tasks == [("citations", "judged"), ("claims", "judged"), ("sentences", "judged")]
    assert con.execute("SELECT DISTINCT decided_by FROM sentences").fetchall() == [("openai",)]
