"""Whether a human must review an audited response, and why.

    decision = decide_review(audited, threshold=0.7)

A response needs review when any sentence is ungrounded or contradicted, when
any sentence's confidence is under the threshold, when an answer came with no
usable evidence, when part of it was past the audit's limits
(`transforms.audit.limits`), and, in high-risk traffic, when anything at all is flagged
critical (citation failures included; and claims under the threshold, without a
source or overconfident), and when two checks of a sentence disagree (`checks_disagree`,
`transforms.audit.agreement`). Every reason names the sentence index
and the evidence ids involved (each once), so a reviewer can go straight to them.
Sentences that make no claim (`SentenceVerdict.claim_kind`) never send an answer to review.
"""

from __future__ import annotations

from schemas import INSUFFICIENT_EVIDENCE, AttributionVerdict, AuditedResponse, ReviewDecision, RiskLevel
from transforms.audit.agreement import disagreements
from transforms.audit.limits import LIMIT_FLAG_PREFIX, describe_limit
from transforms.verify.base import critical_flags

__all__ = ["decide_review"]


def _ids(ids: list[str]) -> str:
    # A verifier lists an evidence id once per matching excerpt; a reviewer needs each id once.
    ids = list(dict.fromkeys(ids))
    return ", ".join(ids) if ids else "none"


def decide_review(audited: AuditedResponse, threshold: float) -> ReviewDecision:
    """The routing decision for one audited response (see the module docstring for the rules)."""
    reasons: list[str] = []
    report = audited.report
    high_risk = audited.parsed.response.metadata.risk_level is RiskLevel.high
    for s in report.sentences:
        if not s.is_claim:  # lead-ins, headers, greetings, abstentions state nothing to check
            continue
        if s.attribution_verdict is AttributionVerdict.contradicted:
            reasons.append(f"sentence {s.sentence_index} contradicted by evidence {_ids(s.contradicting_evidence_ids)}")
        elif s.attribution_verdict is AttributionVerdict.ungrounded:
            reasons.append(f"sentence {s.sentence_index} ungrounded (no supporting evidence)")
        if s.confidence < threshold:
            reasons.append(
                f"sentence {s.sentence_index} confidence {s.confidence:.2f} below {threshold:.2f}"
                f" (evidence {_ids(s.supporting_evidence_ids)})"
            )
    # Two checks of one sentence that disagree (transforms.audit.agreement): whatever the risk, a human decides.
    reasons.extend(disagreements(audited))
    if audited.judge_status in ("judge_validation_failed", "judge_error"):
        # The judge could not settle some sentences, citations or claims: they kept the offline verdict, for a human.
        reasons.append(f"{audited.judge_status}: judge verdicts unusable, offline verdicts kept (see judge_calls)")
    # Part of the response was left unchecked (the audit's limits): whatever its risk, a human sees it.
    limits = [flag for flag in report.critical_flags if flag.startswith(LIMIT_FLAG_PREFIX)]
    reasons.extend(describe_limit(flag) for flag in limits)
    if INSUFFICIENT_EVIDENCE in report.critical_flags and audited.parsed.response.answer.strip():
        reasons.append("answer given with no usable evidence (INSUFFICIENT_EVIDENCE)")
    if audited.citations is not None:
        for failure in audited.citations.summary.critical_failures:
            reasons.append(f"citation critical failure: {failure} names no passage of the evidence (fabricated)")
        if high_risk:
            for c in audited.citations.audit_results:
                if c.overall_verdict.value == "FAIL":
                    where = f"sentence {c.sentence_index}, " if c.sentence_index is not None else ""
                    reasons.append(
                        f"high-risk citation {c.citation_id} ({where}source {c.doc_id or 'none'}) failed "
                        f"({c.verification_status.value}): {c.auditor_notes[:200]}"
                    )
    if audited.claims is not None and high_risk:
        # Spec 004's approval gate: low-confidence or unsourced claims need sign-off; so do overconfident ones.
        for c in audited.claims.claims:
            if c.low_confidence or c.missing_source or c.overconfident:
                what = "; ".join(c.issues) or ("low confidence" if c.low_confidence else "missing source")
                reasons.append(f"high-risk claim {c.claim_index}: {what}")
    if high_risk:
        # Flags the sentence rules above already explain are not repeated; any other flag (from later stages) is.
        explained = set(critical_flags(report.sentences, threshold)) | {INSUFFICIENT_EVIDENCE, *limits}
        reasons.extend(f"high-risk critical flag: {flag}" for flag in report.critical_flags if flag not in explained)
    # Several checks can name the same thing; keep each reason once, in order.
    reasons = list(dict.fromkeys(reasons))
    return ReviewDecision(needs_review=bool(reasons), reasons=reasons)
