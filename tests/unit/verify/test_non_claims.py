"""Answers as generators write them: only claims are verified, scored and routed; Markdown does not count."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pandas as pd
import pytest

from pipelines.reporting.gate_report import LineOutcome, gate_figures
from schemas import (
    AttributionVerdict,
    AuditedResponse,
    EvidencePassage,
    LoggedResponse,
    ParsedResponse,
    SentenceVerdict,
)
from tests.support.audit_messages import at, message
from transforms.audit.routing import decide_review
from transforms.audit.stages import audit_response
from transforms.io.lake.rows import to_lake_rows
from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_audited, stats_from_rows
from transforms.verify.base import audit_sentences, build_report
from transforms.verify.heuristic.verifier import HeuristicVerifier

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
EVIDENCE = [
    EvidencePassage(doc_id="kb-1", content="The patient was prescribed 50 mg of metoprolol twice daily."),
    EvidencePassage(doc_id="kb-2", content="Lab results showed potassium at 4.2 mmol/L on admission."),
]
# The shapes real generators produce: a greeting, a lead-in, a header, bold labels, bullets, a numbered
# list and a closing offer of more help. Every claim in it is supported.
CHAT_ANSWER = """Hi there!

Here is what I found:

## Medications
- **Medication:** The patient was prescribed 50 mg of metoprolol twice daily.
- **Labs:** Lab results showed potassium at 4.2 mmol/L on admission.

1. Potassium was 4.2 mmol/L on admission.

Let me know if you need more."""


def audit(answer: str, evidence=EVIDENCE):
    report, _ = audit_sentences("r-1", answer, evidence, HeuristicVerifier(), verification_date=date(2026, 11, 29))
    return report


def test_a_supported_chat_answer_is_faithful_and_has_no_flags():
    report = audit(CHAT_ANSWER)
    kinds = [s.claim_kind for s in report.sentences]
    assert kinds == ["pleasantry", "lead_in", "formatting", "claim", "claim", "claim", "pleasantry"]
    claims = [s for s in report.sentences if s.is_claim]
    assert all(s.attribution_verdict is AttributionVerdict.fully_grounded for s in claims)
    assert report.overall_faithfulness_score == 1.0
    assert report.critical_flags == []
    assert not report.abstention


def test_bold_labels_do_not_lower_confidence():
    plain = audit("The patient was prescribed 50 mg of metoprolol twice daily.").sentences[0]
    bold = audit("**Medication:** The patient was prescribed 50 mg of metoprolol twice daily.").sentences[0]
    assert bold.sentence_text.startswith("**Medication:**")  # the answer's text is kept as written
    assert bold.confidence >= plain.confidence - 0.01


def test_unsupported_spans_are_substrings_of_the_original_sentence():
    report = audit("- **Medication:** The patient was prescribed **75 mg** of *atenolol* at bedtime.")
    (s,) = report.sentences
    assert s.attribution_verdict is not AttributionVerdict.fully_grounded
    assert s.unsupported_spans
    assert all(span in s.sentence_text for span in s.unsupported_spans)


def test_an_abstention_is_reported_and_never_routed_to_review():
    msg = message(answer="I don't know. The documents do not say.", metadata={"tenant": "acme", "risk_level": "high"})
    parsed = ParsedResponse(response=LoggedResponse.model_validate(msg), origin=at(1))
    audited = audit_response(parsed, verifier=HeuristicVerifier(), window_start=NOW, window_end=NOW, now=NOW)
    assert audited.report.abstention
    assert [s.claim_kind for s in audited.report.sentences] == ["abstention", "abstention"]
    assert not audited.review.needs_review, audited.review.reasons
    rows = [row for table, row in to_lake_rows(audited) if table == "sentences"]
    assert [r["claim_kind"] for r in rows] == ["abstention", "abstention"]


def test_only_the_unsupported_claim_sends_a_chat_answer_to_review():
    answer = CHAT_ANSWER.replace("1. Potassium was 4.2", "1. Sodium was 128")
    parsed = ParsedResponse(
        response=LoggedResponse.model_validate(message(answer=answer, evidence=[e.model_dump() for e in EVIDENCE])),
        origin=at(1),
    )
    audited = audit_response(parsed, verifier=HeuristicVerifier(), window_start=NOW, window_end=NOW, now=NOW)
    reasons = audited.review.reasons
    assert reasons and all(r.startswith("sentence 5 ") for r in reasons), reasons


def test_review_reasons_name_each_evidence_id_once():
    # A verifier lists a passage once per excerpt it matched: two contradicting sentences of kb-1054.
    verdict = SentenceVerdict(
        sentence_index=0,
        sentence_text="Potassium was 3.1 mmol/L on admission.",
        attribution_verdict="contradicted",
        confidence=0.6,
        supporting_evidence_ids=["kb-7", "kb-7"],
        contradicting_evidence_ids=["kb-1054", "kb-1054"],
        contradicting_evidence_excerpts=["Potassium was 4.2 mmol/L.", "On admission, potassium was 4.2 mmol/L."],
    )
    report = build_report("r-1", [verdict], threshold=0.7, verification_date=date(2026, 11, 29))
    parsed = ParsedResponse(response=LoggedResponse.model_validate(message()), origin=at(1))
    audited = AuditedResponse(
        parsed=parsed, window_start=NOW, window_end=NOW, verifier="heuristic", verifier_version="1", report=report
    )
    reasons = decide_review(audited, 0.7).reasons
    assert reasons == [
        "sentence 0 contradicted by evidence kb-1054",
        "sentence 0 confidence 0.60 below 0.70 (evidence kb-7)",
    ]


def test_an_abstention_beside_a_claim_counts_nowhere():
    answer = (
        "The patient was prescribed 50 mg of metoprolol twice daily. "
        "I couldn't find the discharge date in the provided documents."
    )
    report = audit(answer)
    claim, refusal = report.sentences
    assert refusal.abstention and not claim.abstention and report.abstention
    assert report.overall_faithfulness_score == 1.0  # the refusal is not a hallucination
    assert report.critical_flags == []
    parsed = ParsedResponse(
        response=LoggedResponse.model_validate(message(answer=answer, evidence=[e.model_dump() for e in EVIDENCE])),
        origin=at(1),
    )
    audited = audit_response(parsed, verifier=HeuristicVerifier(), window_start=NOW, window_end=NOW, now=NOW)
    assert not audited.review.needs_review, audited.review.reasons
    (row,) = [row for table, row in to_lake_rows(audited) if table == "responses"]
    assert row["abstention"] and row["ungrounded_count"] == 0


def test_a_refusal_alone_is_not_scored_and_no_mean_counts_it():
    """The spec's report keeps its number (1: nothing unsupported was said), but the lake stores none, and the
    gate's means leave the response out: a refusal must not raise a faithfulness or confidence figure."""
    refusal = "I'm sorry, I can't find that in the documents."
    report = audit(refusal)
    assert report.overall_faithfulness_score == 1.0 and report.scored_faithfulness is None

    def audited(response_id: str, answer: str) -> AuditedResponse:
        logged = message(response_id, answer=answer, evidence=[e.model_dump() for e in EVIDENCE])
        parsed = ParsedResponse(response=LoggedResponse.model_validate(logged), origin=at(1))
        return audit_response(parsed, verifier=HeuristicVerifier(), window_start=NOW, window_end=NOW, now=NOW)

    answers = [
        audited("refused", refusal),
        audited("grounded", "The patient was prescribed 50 mg of metoprolol twice daily."),
        audited("wrong", "The patient was prescribed 80 mg of metoprolol twice daily."),
    ]
    (row,) = [row for table, row in to_lake_rows(answers[0]) if table == "responses"]
    assert row["abstention"] and row["overall_faithfulness_score"] is None

    figures = gate_figures([LineOutcome(i + 1, audited=a) for i, a in enumerate(answers)])
    claims = [s for a in answers[1:] for s in a.report.sentences]
    assert figures.audited == 3 and figures.sentences == len(claims) == 2
    assert figures.mean_faithfulness == pytest.approx(sum(a.report.overall_faithfulness_score for a in answers[1:]) / 2)
    assert figures.mean_confidence == pytest.approx(sum(s.confidence for s in claims) / 2)

    # The window's mean faithfulness likewise, from the audited responses and from their lake rows.
    scored = [a.report.overall_faithfulness_score for a in answers[1:]]
    assert scored[0] != scored[1]  # the mean would move if the refusal's 1 counted
    (window,) = [r for r in compute_window_metrics(map(stats_from_audited, answers), NOW) if r.slice_dimension == "all"]
    assert window.responses == 3 and window.mean_faithfulness == pytest.approx(sum(scored) / 2)
    rebuilt = stats_from_rows(row, [])
    assert (
        rebuilt.faithfulness is None
        and stats_from_rows({**row, "overall_faithfulness_score": float("nan")}, []).faithfulness is None
    )


def test_a_lake_written_before_the_null_reads_its_refusals_as_unscored(tmp_path):
    """Rows written before refusals had a null score hold the spec's 1: read back, they count nowhere either,
    so a lake that spans the change shows no drop that the change alone made."""
    from dashboards.views import connect_lake
    from pipelines.gate import lake_figures
    from transforms.io.lake.writer import write_table
    from transforms.monitoring.lake_frames import load_lake_frames

    def audited(response_id: str, answer: str) -> AuditedResponse:
        logged = message(response_id, answer=answer, evidence=[e.model_dump() for e in EVIDENCE])
        parsed = ParsedResponse(response=LoggedResponse.model_validate(logged), origin=at(1))
        return audit_response(parsed, verifier=HeuristicVerifier(), window_start=NOW, window_end=NOW, now=NOW)

    lake = str(tmp_path / "lake")
    answers = [
        audited("refused", "I'm sorry, I can't find that in the documents."),
        audited("wrong", "The patient was prescribed 80 mg of metoprolol twice daily."),
    ]
    for answer in answers:
        for table, row in to_lake_rows(answer):
            if table == "responses" and row["overall_faithfulness_score"] is None:
                row = {**row, "overall_faithfulness_score": 1.0}  # as the lake's writer stored it before
            write_table(lake, table, [row])
    stored = connect_lake(lake).sql("SELECT response_id, overall_faithfulness_score FROM responses ORDER BY 1")
    wrong = answers[1].report.overall_faithfulness_score
    assert stored.fetchall() == [("refused", 1.0), ("wrong", wrong)]

    frames = load_lake_frames(lake)
    faithfulness = frames.responses.set_index("response_id")["faithfulness"]
    assert pd.isna(faithfulness["refused"]) and faithfulness["wrong"] == wrong
    (row,) = [r for t, r in to_lake_rows(answers[0]) if t == "responses"]
    assert stats_from_rows({**row, "overall_faithfulness_score": 1.0}, []).faithfulness is None
    assert lake_figures(lake).mean_faithfulness == pytest.approx(wrong)
