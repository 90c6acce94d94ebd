"""The audit's per-message limits: a response over one is flagged with the limit named and sent to review, and
the part within the limit is still audited; a response within every limit is audited as it is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import EVIDENCE, message
from transforms.audit import limits
from transforms.audit.limits import bound_response
from transforms.audit.stages import audit_response
from transforms.audit.steps import audit_steps
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
from transforms.verify.registry import make_verifier

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
FACT = "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024"
FILLER = "Unrelated notes about the ward schedule were filed. "


def _audit(msg: dict):
    parsed = ParsedResponse(response=LoggedResponse.model_validate(msg), origin={"source": "test"})
    steps = [step for _, _, step in audit_steps(DEFAULT_CONFIDENCE_THRESHOLD)]
    return audit_response(
        parsed, verifier=make_verifier("heuristic"), window_start=NOW, window_end=NOW, now=NOW, steps=steps
    )


def _assert_flagged(audited, name: str) -> None:
    flag = f"LIMIT_EXCEEDED_{name}"
    assert flag in audited.report.critical_flags
    assert audited.review.needs_review
    assert any(r.startswith(flag) and f"{limits.LIMITS[name]:,}" in r for r in audited.review.reasons)


def test_a_passage_over_the_limit_is_flagged_and_its_head_still_supports():
    long_passage = FACT + ". " + FILLER * (limits.MAX_PASSAGE_CHARS // len(FILLER) + 10)
    audited = _audit(message("long", evidence=[{"doc_id": "1", "content": long_passage}]))
    _assert_flagged(audited, "PASSAGE_CHARS")
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"
    assert len(audited.parsed.response.evidence[0].content) <= limits.MAX_PASSAGE_CHARS


def test_evidence_over_the_total_keeps_later_passages_by_id_without_content():
    half = FILLER * (limits.MAX_EVIDENCE_CHARS // len(FILLER) // 2 + 50)
    evidence = [{"doc_id": "1", "content": FACT + ". " + half}, {"doc_id": "a", "content": half}, EVIDENCE[1]]
    audited = _audit(message("total", evidence=evidence))
    _assert_flagged(audited, "EVIDENCE_CHARS")
    kept = audited.parsed.response.evidence
    assert [p.doc_id for p in kept] == ["1", "a", "2"] and kept[2].content == ""
    assert sum(len(p.content) for p in kept) <= limits.MAX_EVIDENCE_CHARS
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"


def test_passages_over_the_limit_are_flagged_and_the_first_ones_audited():
    evidence = [EVIDENCE[0]] + [{"doc_id": f"x{i}", "content": "Other text."} for i in range(limits.MAX_PASSAGES)]
    audited = _audit(message("passages", evidence=evidence))
    _assert_flagged(audited, "PASSAGES")
    assert len(audited.parsed.response.evidence) == limits.MAX_PASSAGES
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"


def test_sentences_over_the_limit_are_flagged_and_the_first_ones_verified():
    answer = " ".join([f"{FACT} [1]."] * (limits.MAX_SENTENCES + 20))
    audited = _audit(message("sentences", answer=answer))
    _assert_flagged(audited, "SENTENCES")
    assert len(audited.report.sentences) == limits.MAX_SENTENCES
    assert all(s.attribution_verdict.value == "fully_grounded" for s in audited.report.sentences)


def test_markers_over_the_limit_are_flagged_and_the_first_ones_audited():
    answer = f"{FACT} " + "[1]" * (limits.MAX_MARKERS + 5) + "."
    audited = _audit(message("markers", answer=answer))
    _assert_flagged(audited, "MARKERS")
    assert audited.parsed.response.answer.count("[1]") == limits.MAX_MARKERS
    assert audited.citations is not None and audited.citations.summary.total_citations >= 1
    assert audited.report.sentences[0].attribution_verdict.value == "fully_grounded"


@pytest.mark.parametrize(("name", "field", "limit"), [("CLAIMS", "claims", 100), ("CITATIONS", "citations", 100)])
def test_logged_claims_and_citations_over_the_limit_are_flagged_and_the_first_ones_checked(name, field, limit):
    assert limits.LIMITS[name] == limit
    items = {
        "claims": [{"claim_text": FACT, "source_doc_ids": ["1"]} for _ in range(limit + 3)],
        "citations": [
            {"citation_id": f"c{i}", "doc_id": "1", "quote": "50 mg of metoprolol"} for i in range(limit + 3)
        ],
    }[field]
    audited = _audit(message(field, **{field: items}))
    _assert_flagged(audited, name)
    assert len(getattr(audited.parsed.response, field)) == limit
    if field == "claims":
        assert len(audited.claims.claims) == limit


def test_a_response_within_every_limit_is_audited_as_it_is():
    response = LoggedResponse.model_validate(message("ordinary"))
    bounded, exceeded = bound_response(response)
    assert bounded is response and exceeded == []
    audited = _audit(message("ordinary"))
    assert not any(f.startswith("LIMIT_EXCEEDED_") for f in audited.report.critical_flags)
