"""The plain functions behind the audit composites: audit_response, routing, the verifier registry, lake rows."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from schemas import AuditedResponse, LoggedResponse, ParsedResponse, SentenceVerdict
from tests.support.audit_messages import at, message
from transforms.audit.routing import decide_review
from transforms.audit.stages import audit_response
from transforms.io.lake.rows import to_lake_rows
from transforms.verify.base import Verifier, build_report
from transforms.verify.registry import available_verifiers, make_verifier

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
WINDOW = (datetime(2026, 11, 29, 9, 0, tzinfo=UTC), datetime(2026, 11, 29, 9, 1, tzinfo=UTC))


def parsed(risk: str = "medium", **changes) -> ParsedResponse:
    msg = message("r-1", metadata={"tenant": "acme", "risk_level": risk}, **changes)
    return ParsedResponse(response=LoggedResponse.model_validate(msg), origin=at(1))


def audited_with(verdicts: list[dict], risk: str = "medium") -> AuditedResponse:
    sentences = [SentenceVerdict(sentence_index=i, sentence_text=f"s{i}", **v) for i, v in enumerate(verdicts)]
    report = build_report("r-1", sentences, threshold=0.7, verification_date=date(2026, 11, 29))
    return AuditedResponse(
        parsed=parsed(risk),
        window_start=WINDOW[0],
        window_end=WINDOW[1],
        verifier="heuristic",
        verifier_version="1",
        report=report,
        decided_by=["heuristic"] * len(sentences),
    )


def test_grounded_confident_answer_needs_no_review():
    decision = decide_review(audited_with([{"attribution_verdict": "fully_grounded", "confidence": 0.95}]), 0.7)
    assert not decision.needs_review and decision.reasons == []


def test_reasons_name_sentence_indexes_and_evidence_ids():
    audited = audited_with(
        [
            {"attribution_verdict": "fully_grounded", "confidence": 0.95},
            {
                "attribution_verdict": "contradicted",
                "confidence": 0.9,
                "contradicting_evidence_ids": ["2"],
                "contradicting_evidence_excerpts": ["Potassium 4.2"],
            },
            {"attribution_verdict": "partially_grounded", "confidence": 0.55, "supporting_evidence_ids": ["1"]},
            {"attribution_verdict": "ungrounded", "confidence": 0.99},
        ]
    )
    reasons = decide_review(audited, 0.7).reasons
    assert reasons == [
        "sentence 1 contradicted by evidence 2",
        "sentence 2 confidence 0.55 below 0.70 (evidence 1)",
        "sentence 3 ungrounded (no supporting evidence)",
    ]


def test_threshold_is_the_callers():
    audited = audited_with([{"attribution_verdict": "fully_grounded", "confidence": 0.8}])
    assert not decide_review(audited, 0.7).needs_review
    assert decide_review(audited, 0.9).reasons == ["sentence 0 confidence 0.80 below 0.90 (evidence none)"]


def test_empty_evidence_is_audited_with_insufficient_evidence_and_reviewed():
    audited = audit_response(
        parsed(evidence=[]), verifier=make_verifier("heuristic"), window_start=WINDOW[0], window_end=WINDOW[1], now=NOW
    )
    assert audited.report.sentences == [] and audited.report.critical_flags == ["INSUFFICIENT_EVIDENCE"]
    assert audited.review.needs_review and "INSUFFICIENT_EVIDENCE" in audited.review.reasons[0]
    [(table, row)] = to_lake_rows(audited)[:1]
    assert table == "responses" and row["insufficient_evidence"] and row["sentence_count"] == 0


def test_audit_response_runs_steps_in_order_then_routes():
    seen = []

    def step(name):
        def run(audited):
            seen.append(name)
            return audited

        return run

    audited = audit_response(
        parsed(),
        verifier=make_verifier("heuristic"),
        window_start=WINDOW[0],
        window_end=WINDOW[1],
        now=NOW,
        steps=[step("citations"), step("claims")],
    )
    assert seen == ["citations", "claims"] and audited.review is not None and audited.audited_at == NOW
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"


def test_lake_rows_carry_window_slice_and_verdict_counts():
    audited = audit_response(
        parsed("high"), verifier=make_verifier("heuristic"), window_start=WINDOW[0], window_end=WINDOW[1], now=NOW
    )
    rows = to_lake_rows(audited)
    response = next(r for t, r in rows if t == "responses")
    sentences = [r for t, r in rows if t == "sentences"]
    assert (response["window_start"], response["window_end"], response["audited_at"]) == (*WINDOW, NOW)
    assert response["risk_level"] == "high" and response["tenant"] == "acme"
    assert response["sentence_count"] == len(sentences) == response["fully_grounded_count"] == 1
    assert sentences[0]["window_start"] == WINDOW[0] and sentences[0]["decided_by"] == "heuristic"


def test_registry_builds_by_name_and_names_the_choices():
    assert "heuristic" in available_verifiers()
    verifier = make_verifier("heuristic", threshold=0.7, not_a_heuristic_setting=1)  # unknown keys are ignored
    assert isinstance(verifier, Verifier) and verifier.name == "heuristic"
    with pytest.raises(ValueError, match="unknown verifier 'nope'; choose one of: .*heuristic"):
        make_verifier("nope")
