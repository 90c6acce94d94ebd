"""Claim-attribution checks (spec 004) on a clinical record like those of the project's sample traffic."""

import pickle
from datetime import UTC, datetime

import pytest

from schemas import AttributionVerdict, AuditedResponse, ConfidenceLabel, LoggedResponse, Origin, ParsedResponse
from transforms.attribution.claims import AuditClaimsStep, check_claims, claim_score
from transforms.verify.base import audit_sentences
from transforms.verify.registry import make_verifier

KB_1 = "On August 1, 2025, the patient was started on 250 mg of amoxicillin twice daily. The note was reviewed."
KB_2 = "The chart lists an allergy to penicillin. Vital signs were recorded every four hours."
STARTED = "The patient was started on 250 mg of amoxicillin twice daily on August 1, 2025"


@pytest.fixture(scope="module")
def verifier():
    return make_verifier("heuristic")


def response(claims):
    return LoggedResponse(
        response_id="med-000001",
        timestamp="2026-11-29T09:00:00Z",
        answer="The patient was started on amoxicillin. The chart lists an allergy to penicillin.",
        evidence=[
            {
                "doc_id": "kb-1",
                "content": KB_1,
                "chunk_index": 3,
                "source_uri": "ehr://notes/kb-1",
                "retrieval_timestamp": "2026-11-29T08:59:58Z",
            },
            {"doc_id": "kb-2", "content": KB_2},  # no provenance
        ],
        claims=claims,
    )


def one(report):
    (check,) = report.claims
    return check


def test_a_sourced_confident_supported_claim_has_no_issue(verifier):
    report = check_claims(
        response([{"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": "HIGH"}]), verifier
    )
    check = one(report)
    assert check.issues == [] and not check.overconfident and not check.missing_source
    assert check.verified_verdict is AttributionVerdict.fully_grounded
    assert (report.attribution_coverage_rate, report.low_confidence_claim_rate) == (1.0, 0.0)


def test_high_confidence_claim_with_a_changed_number_is_overconfident(verifier):
    changed = STARTED.replace("250 mg", "875 mg")
    check = one(
        check_claims(response([{"claim_text": changed, "source_doc_ids": ["kb-1"], "confidence": "HIGH"}]), verifier)
    )
    assert check.verified_verdict is AttributionVerdict.contradicted
    assert check.overconfident and any(i.startswith("overconfident: marked HIGH") for i in check.issues)
    numeric = one(
        check_claims(response([{"claim_text": changed, "source_doc_ids": ["kb-1"], "confidence": 0.95}]), verifier)
    )
    assert numeric.overconfident
    hedged = {
        "claim_text": changed,
        "source_doc_ids": ["kb-1"],
        "confidence": "LOW",
        "low_confidence_reason": "dose unclear",
    }
    low = one(check_claims(response([hedged]), verifier))
    assert not low.overconfident and low.issues == ["contradicted by its cited evidence (kb-1)"]


def test_missing_and_unknown_sources(verifier):
    unflagged = one(check_claims(response([{"claim_text": "Dosing was adjusted.", "confidence": "MEDIUM"}]), verifier))
    assert unflagged.missing_source and unflagged.issues == ["no source id and missing_source is not flagged"]
    flagged = one(
        check_claims(
            response(
                [
                    {
                        "claim_text": "Dosing was adjusted.",
                        "confidence": "UNSUPPORTED",
                        "missing_source": True,
                        "low_confidence_reason": "not in the retrieved notes",
                    }
                ]
            ),
            verifier,
        )
    )
    assert flagged.missing_source and flagged.issues == [] and flagged.low_confidence
    unknown = one(
        check_claims(response([{"claim_text": STARTED, "source_doc_ids": ["kb-9"], "confidence": 0.9}]), verifier)
    )
    assert unknown.unknown_source_ids == ["kb-9"] and unknown.missing_source
    assert "cited ids not in the evidence: kb-9" in unknown.issues
    assert "no valid source and missing_source is not flagged" in unknown.issues
    assert unknown.overconfident  # 0.9 with no passage to stand on


def test_low_confidence_needs_a_reason_and_medium_is_not_low(verifier):
    claims = [
        {"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": 0.55},
        {"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": 0.55, "low_confidence_reason": "paraphrase"},
        {"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": "MEDIUM"},
    ]
    checks = check_claims(response(claims), verifier).claims
    assert [c.low_confidence for c in checks] == [True, True, False]
    assert [c.missing_low_confidence_reason for c in checks] == [True, False, False]
    assert claim_score(ConfidenceLabel.MEDIUM) == 0.7 and claim_score(None) is None


def test_rates_per_response(verifier):
    claims = [
        {"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": "HIGH"},
        {"claim_text": "The chart lists an allergy to penicillin", "source_doc_ids": ["kb-2"], "confidence": "MEDIUM"},
        {
            "claim_text": "Vital signs were recorded every four hours",
            "source_doc_ids": ["kb-2", "kb-7"],
            "confidence": 0.8,
        },
        {"claim_text": "A follow-up visit is planned.", "source_doc_ids": [], "confidence": "LOW"},
    ]
    report = check_claims(response(claims), verifier)
    # Three of four claims cite at least one passage that exists; one of four is under 0.7.
    assert report.attribution_coverage_rate == 3 / 4
    assert report.low_confidence_claim_rate == 1 / 4
    assert report.claims[2].unknown_source_ids == ["kb-7"] and not report.claims[2].missing_source


def test_attribution_span_must_be_in_a_cited_passage(verifier):
    good = {
        "claim_text": STARTED,
        "source_doc_ids": ["kb-1"],
        "confidence": "HIGH",
        "attribution_span": "250 mg of amoxicillin",
    }
    bad = dict(good, attribution_span="500 mg of amoxicillin")
    assert one(check_claims(response([good]), verifier)).issues == []
    assert "attribution_span is not a span of any cited passage" in one(check_claims(response([bad]), verifier)).issues


def test_responses_without_claims(verifier):
    assert check_claims(response(None), verifier) is None
    empty = check_claims(response([]), verifier)
    assert empty.claims == [] and empty.attribution_coverage_rate is None


def test_pipeline_step_adds_the_report_and_pickles_without_its_verifier(verifier):
    parsed = ParsedResponse(
        response=response([{"claim_text": STARTED, "source_doc_ids": ["kb-1"], "confidence": "HIGH"}]),
        origin=Origin(source="test"),
    )
    now = datetime(2026, 11, 29, 9, tzinfo=UTC)
    report, result = audit_sentences(
        "med-000001", parsed.response.answer, parsed.response.evidence, verifier, verification_date=now.date()
    )
    audited = AuditedResponse(
        parsed=parsed,
        window_start=now,
        window_end=now,
        verifier="heuristic",
        verifier_version=verifier.version,
        report=report,
        decided_by=list(result.decided_by),
        audited_at=now,
    )
    step = AuditClaimsStep("heuristic", threshold=0.7)
    out = step(audited)
    assert out.claims.attribution_coverage_rate == 1.0 and out.report == audited.report
    clone = pickle.loads(pickle.dumps(step))
    assert clone._verifier is None and clone(audited).claims == out.claims
    with pytest.raises(ValueError):
        AuditClaimsStep(threshold=1.5)


def test_cited_passages_without_provenance_are_reported(verifier):
    claim = {"claim_text": "The chart lists an allergy to penicillin", "source_doc_ids": ["kb-2"], "confidence": "HIGH"}
    check = one(check_claims(response([claim]), verifier))
    assert any(i.startswith("cited passages without full provenance") and i.endswith("kb-2") for i in check.issues)
