"""`Verifier.verify()` returns a `VerificationResult`: what it decided travels in the result, not on the verifier.

The judge-backed verifiers talk to a real HTTP server on 127.0.0.1 (`tests/support/openai_server.py`) whose
replies depend on the request, so each answer's outcome is fixed whatever order the calls arrive in.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from schemas import AttributionVerdict, EvidencePassage, LoggedResponse, ParsedResponse, SentenceVerdict
from tests.support.audit_messages import at, message
from tests.support.openai_server import OpenAIServer, data_document, grounded_reply
from transforms.audit.stages import audit_response
from transforms.verify.base import NO_VERDICTS, VerificationResult, audit_sentences
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.judge.verifier import merge_verdicts
from transforms.verify.registry import make_verifier

EVIDENCE = [
    EvidencePassage(doc_id="1", content="The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024."),
    EvidencePassage(doc_id="2", content="Lab results showed potassium at 4.2 mmol/L on admission."),
]
JUDGED = ["The patient was prescribed 50 mg of metoprolol twice daily.", "Potassium was 3.1 mmol/L on admission."]
REFUSED = ["Potassium was 4.2 mmol/L on admission.", "Unicorns live in the ward.", "The dose was 50 mg."]
"""The judge answers sentences about unicorns with junk: that answer ends judge_validation_failed."""
NOW = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def refuse_unicorns(request) -> str:
    if any("Unicorns" in a.get("full_answer", "") for a in data_document(request)["answers"]):
        return "not an audit"
    return grounded_reply(request)


def verdict(index: int) -> SentenceVerdict:
    return SentenceVerdict(
        sentence_index=index, sentence_text=f"s{index}", attribution_verdict=AttributionVerdict.ungrounded, confidence=1
    )


def test_a_result_is_frozen_and_one_decider_per_verdict():
    result = VerificationResult([verdict(0), verdict(1)], ["heuristic", "openai"])
    assert isinstance(result.verdicts, tuple) and result.decided_by == ("heuristic", "openai")
    assert (result.judge_status, result.judge_calls) == (None, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.judge_status = "judged"
    with pytest.raises(ValueError, match="2 verdicts but 1 decided_by"):
        VerificationResult([verdict(0), verdict(1)], ["heuristic"])
    assert VerificationResult.decided("heuristic", [verdict(0), verdict(1)]).decided_by == ("heuristic", "heuristic")
    assert (NO_VERDICTS.verdicts, NO_VERDICTS.decided_by, NO_VERDICTS.judge_status) == ((), (), None)


def test_the_heuristic_result_names_the_heuristic_for_every_sentence():
    result = HeuristicVerifier().verify(JUDGED, EVIDENCE)
    assert [v.sentence_index for v in result.verdicts] == [0, 1]
    assert (result.decided_by, result.judge_status, result.judge_calls) == (("heuristic", "heuristic"), None, ())


def test_merge_without_a_judge_outcome_is_all_heuristic_and_no_status():
    heuristic = HeuristicVerifier().verify(JUDGED, EVIDENCE).verdicts
    merged = merge_verdicts(heuristic, None)
    assert (merged.verdicts, merged.decided_by, merged.judge_status) == (heuristic, ("heuristic", "heuristic"), None)


@pytest.mark.server
def test_a_result_is_unchanged_by_the_next_call_on_the_same_cascade():
    with OpenAIServer(refuse_unicorns) as server:
        cascade = make_verifier("cascade", base_url=server.base_url, model="scripted-judge", band=(0.0, 1.0))
        first = cascade.verify(JUDGED, EVIDENCE)
        kept = (first.decided_by, first.judge_status, len(first.judge_calls))
        second = cascade.verify(REFUSED, EVIDENCE)
    assert kept == (("openai", "openai"), "judged", 1)
    assert (first.decided_by, first.judge_status, len(first.judge_calls)) == kept
    assert (second.decided_by, second.judge_status, len(second.judge_calls)) == (
        ("heuristic",) * 3,
        "judge_validation_failed",
        3,
    )
    assert {c.response_id for c in first.judge_calls}.isdisjoint(c.response_id for c in second.judge_calls)


@pytest.mark.server
def test_one_cascade_serves_threads_and_each_gets_its_own_answer():
    inputs = [JUDGED, REFUSED] * 4

    def summary(result):
        return result.decided_by, result.judge_status, len(result.judge_calls)

    with OpenAIServer(refuse_unicorns, latency_s=0.05) as server:
        options = {"base_url": server.base_url, "model": "scripted-judge", "band": (0.0, 1.0)}
        alone = [summary(make_verifier("cascade", **options).verify(s, EVIDENCE)) for s in (JUDGED, REFUSED)]
        shared = make_verifier("cascade", **options)
        with ThreadPoolExecutor(max_workers=4) as pool:
            together = list(pool.map(lambda s: summary(shared.verify(s, EVIDENCE)), inputs))
    assert alone[0][1] == "judged" and alone[1][1] == "judge_validation_failed"
    assert together == alone * 4


@pytest.mark.server
def test_an_answer_without_evidence_carries_no_judge_status_from_the_answer_before():
    blank = ParsedResponse(response=LoggedResponse.model_validate(message("r-blank", evidence=[])), origin=at(2))
    judged = ParsedResponse(response=LoggedResponse.model_validate(message("r-judged")), origin=at(1))
    with OpenAIServer() as server:
        verifier = make_verifier("openai", base_url=server.base_url, model="scripted-judge")
        first = audit_response(judged, verifier=verifier, window_start=NOW, window_end=NOW, now=NOW)
        after = audit_response(blank, verifier=verifier, window_start=NOW, window_end=NOW, now=NOW)
    assert (first.judge_status, len(first.judge_calls)) == ("judged", 1)
    assert (after.judge_status, after.judge_calls, after.decided_by) == (None, [], [])
    _, result = audit_sentences("a", "One.", [], verifier, verification_date=NOW.date())
    assert result is NO_VERDICTS
