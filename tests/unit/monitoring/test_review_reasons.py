"""The review queue by reason: the router's reasons, grouped into kinds an operator counts, per tenant."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pandas as pd

from dashboards.review_reasons import REASON_KINDS, reason_kind, review_queue
from schemas import (
    INSUFFICIENT_EVIDENCE,
    AuditedResponse,
    CitationAuditReport,
    CitationAuditResult,
    CitationAuditSummary,
    ClaimAttributionReport,
    ClaimCheck,
    ClaimSupportLevel,
    LoggedResponse,
    OverallVerdict,
    ParsedResponse,
    SentenceVerdict,
    VerificationStatus,
)
from tests.support.audit_messages import at, message
from transforms.audit.limits import describe_limit, limit_flag
from transforms.audit.routing import decide_review
from transforms.verify.base import build_report

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _routed_reasons() -> list[str]:
    """The reasons `decide_review` writes for one high-risk response that trips every one of its rules."""
    sentences = [
        SentenceVerdict(
            sentence_index=0,
            sentence_text="s0",
            attribution_verdict="contradicted",
            confidence=0.9,
            contradicting_evidence_ids=["kb-1054"],
            contradicting_evidence_excerpts=["x"],
        ),
        SentenceVerdict(sentence_index=1, sentence_text="s1", attribution_verdict="ungrounded", confidence=0.9),
        SentenceVerdict(sentence_index=2, sentence_text="s2", attribution_verdict="partially_grounded", confidence=0.5),
    ]
    report = build_report("r-1", sentences, threshold=0.7, verification_date=date(2026, 11, 29))
    extra = [limit_flag("SENTENCES"), INSUFFICIENT_EVIDENCE, "SOME_LATER_STAGE_FLAG"]
    report = report.model_copy(update={"critical_flags": [*report.critical_flags, *extra]})
    failed = CitationAuditResult(
        citation_id="[2]",
        source_exists=True,
        claim_support_level=ClaimSupportLevel.UNRELATED,
        overall_verdict=OverallVerdict.FAIL,
        verification_status=VerificationStatus.misattributed,
        auditor_notes="x",
        doc_id="2",
        sentence_index=1,
    )
    citations = CitationAuditReport(
        audit_results=[failed],
        summary=CitationAuditSummary(total_citations=1, passed=0, failed=1, critical_failures=["[9]"]),
    )
    claims = ClaimAttributionReport(claims=[ClaimCheck(claim_index=0, claim_text="c", low_confidence=True)])
    msg = message("r-1", metadata={"tenant": "acme", "risk_level": "high"})
    audited = AuditedResponse(
        parsed=ParsedResponse(response=LoggedResponse.model_validate(msg), origin=at(1)),
        window_start=T0,
        window_end=T0,
        verifier="heuristic",
        verifier_version="1",
        report=report,
        decided_by=["heuristic"] * len(sentences),
        citations=citations,
        claims=claims,
        judge_status="judge_error",
    )
    return decide_review(audited, threshold=0.7).reasons


def _uncertainty_reasons() -> list[str]:
    """The router's reasons for a sentence inside the escalation band, the random sample, and two checks that
    disagree (a citation that contradicts a sentence called fully grounded)."""
    from tests.unit.audit.test_audit_routing import audited_with

    sure = audited_with([{"attribution_verdict": "fully_grounded", "confidence": 0.8}])
    banded = decide_review(sure.model_copy(update={"escalation_band": (0.7, 0.9)}), 0.7).reasons
    sampled = decide_review(sure, 0.7, review_sample=1.0).reasons
    cited = CitationAuditResult(
        citation_id="[1]",
        doc_id="1",
        sentence_index=0,
        source_exists=True,
        claim_support_level=ClaimSupportLevel.CONTRADICTS,
        overall_verdict=OverallVerdict.FAIL,
        verification_status=VerificationStatus.misattributed,
        auditor_notes="says otherwise",
    )
    summary = CitationAuditSummary(total_citations=1, passed=0, failed=1, critical_failures=[])
    citations = CitationAuditReport(audit_results=[cited], summary=summary)
    disagree = decide_review(sure.model_copy(update={"citations": citations}), 0.7).reasons
    return [*banded, *sampled, disagree[-1]]


def test_each_reason_the_router_writes_has_its_kind():
    # The reasons come from the router itself, so a change of its wording that the patterns miss fails here.
    kinds = [reason_kind(r) for r in _routed_reasons()]
    assert kinds == [
        "contradicted sentence",
        "ungrounded sentence",
        "low-confidence sentence",
        "judge unusable",
        "audit limit",
        "no usable evidence",
        "fabricated citation",
        "high-risk citation failed",
        "high-risk claim",
        "high-risk flag",
    ]
    kinds += [reason_kind(r) for r in _uncertainty_reasons()]
    assert kinds[-3:] == ["uncertain sentence", "random sample", "checks disagree"]
    assert set(REASON_KINDS) - set(kinds) == {"other"}  # every kind but `other` is one the router writes
    assert reason_kind(describe_limit(limit_flag("PASSAGE_CHARS"))) == "audit limit"
    assert reason_kind("something new") == "other"


def test_review_queue_counts_a_response_once_per_kind_with_its_tenant_share():
    responses = pd.DataFrame(
        {
            "tenant": ["acme", "acme", "acme", "acme", "zeta"],
            "needs_review": [True, True, False, False, True],
            "review_reasons": [
                ["sentence 0 contradicted by evidence 1", "sentence 2 contradicted by evidence 3"],
                ["sentence 1 ungrounded (no supporting evidence)"],
                [],
                None,
                ["sentence 0 contradicted by evidence 1"],
            ],
        }
    )
    queue = review_queue(responses)
    rows = {(t, r): (n, s) for t, r, n, s in queue.itertuples(index=False)}
    assert rows == {
        ("acme", "contradicted sentence"): (1, 0.25),
        ("acme", "ungrounded sentence"): (1, 0.25),
        ("zeta", "contradicted sentence"): (1, 1.0),
    }
