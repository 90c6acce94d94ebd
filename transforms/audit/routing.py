"""Whether a human must review an audited response, and why.

    decision = decide_review(audited, threshold=0.7, review_sample=0.02)

A response needs review when any sentence is ungrounded or contradicted, when
any sentence's confidence is under the threshold or its calibrated probability of
"fully grounded" inside the escalation band of the calibration that decided it
(`AuditedResponse.escalation_band`), when an answer came with no
usable evidence, when part of it was past the audit's limits
(`transforms.audit.limits`), and, in high-risk traffic, when anything at all is flagged
critical (citation failures included; and claims under the threshold, without a
source or overconfident), and when two checks of a sentence disagree (`checks_disagree`,
`transforms.audit.agreement`). Every reason names the sentence index
and the evidence ids involved (each once), so a reviewer can go straight to them.
Sentences that make no claim (`SentenceVerdict.claim_kind`) never send an answer to review.

Each reason has a kind, its route (`ReviewRoute`): `uncertain` (low confidence, or inside the band),
`disagreement`, `risk` (high-risk traffic), `flagged` (a confident finding: contradicted or ungrounded,
fabricated citation, no evidence, limits, a failed judge). A response none of these sends is drawn at random
with probability `review_sample`, by a hash of its response id (so reruns agree): route `sample`. Reviewers
otherwise see only the hard cases, and agreement measured on those alone is biased; the sample is the
unbiased estimate.
"""

from __future__ import annotations

from schemas import (
    INSUFFICIENT_EVIDENCE,
    AttributionVerdict,
    AuditedResponse,
    ReviewDecision,
    ReviewRoute,
    RiskLevel,
)
from transforms.audit.agreement import disagreements
from transforms.audit.limits import LIMIT_FLAG_PREFIX, describe_limit
from transforms.ingest.sample import sample_point
from transforms.verify.base import critical_flags

__all__ = ["REVIEW_SAMPLE_SALT", "decide_review", "in_review_sample"]

REVIEW_SAMPLE_SALT = "review-sample:"
"""Salts the review sample's hash, so it is independent of the audit's own `--sample-rate`."""


def _ids(ids: list[str]) -> str:
    # A verifier lists an evidence id once per matching excerpt; a reviewer needs each id once.
    ids = list(dict.fromkeys(ids))
    return ", ".join(ids) if ids else "none"


def in_review_sample(response_id: str, rate: float) -> bool:
    """Whether a response is in the random review sample at `rate` (deterministic: a salted hash of its id)."""
    return rate > 0.0 and sample_point(response_id, REVIEW_SAMPLE_SALT) < rate


def _sentence_reasons(audited: AuditedResponse, threshold: float) -> list[tuple[ReviewRoute, str]]:
    found = []
    band = audited.escalation_band
    for s in audited.report.sentences:
        if not s.is_claim:  # lead-ins, headers, greetings, abstentions state nothing to check
            continue
        if s.attribution_verdict is AttributionVerdict.contradicted:
            ids = _ids(s.contradicting_evidence_ids)
            found.append((ReviewRoute.flagged, f"sentence {s.sentence_index} contradicted by evidence {ids}"))
        elif s.attribution_verdict is AttributionVerdict.ungrounded:
            found.append((ReviewRoute.flagged, f"sentence {s.sentence_index} ungrounded (no supporting evidence)"))
        if s.confidence < threshold:
            found.append(
                (
                    ReviewRoute.uncertain,
                    f"sentence {s.sentence_index} confidence {s.confidence:.2f} below {threshold:.2f}"
                    f" (evidence {_ids(s.supporting_evidence_ids)})",
                )
            )
        elif band is not None and band[0] <= (p := s.grounded_probability) <= band[1]:
            found.append(
                (
                    ReviewRoute.uncertain,
                    f"sentence {s.sentence_index} uncertain: calibrated probability {p:.2f} inside the "
                    f"escalation band [{band[0]:.2f}, {band[1]:.2f}]",
                )
            )
    return found


def decide_review(audited: AuditedResponse, threshold: float, review_sample: float = 0.0) -> ReviewDecision:
    """The routing decision for one audited response (see the module docstring for the rules)."""
    found = _sentence_reasons(audited, threshold)
    # Two checks of one sentence that disagree (transforms.audit.agreement): whatever the risk, a human decides.
    found += [(ReviewRoute.disagreement, reason) for reason in disagreements(audited)]
    found += [(ReviewRoute.flagged, reason) for reason in _finding_reasons(audited)]
    found += [(ReviewRoute.risk, reason) for reason in _risk_reasons(audited, threshold)]
    if not found and in_review_sample(audited.parsed.response.response_id, review_sample):
        found.append((ReviewRoute.sample, f"sample: a confident response drawn at random ({review_sample:.0%})"))
    # Several checks can name the same thing; keep each reason once, in order, and each route once.
    reasons = list(dict.fromkeys(reason for _, reason in found))
    routes = list(dict.fromkeys(route for route, _ in found))
    return ReviewDecision(needs_review=bool(reasons), reasons=reasons, routes=routes)


def _finding_reasons(audited: AuditedResponse) -> list[str]:
    """Confident findings about the whole response: a failed judge, limits, no evidence, fabricated citations."""
    reasons = []
    report = audited.report
    if audited.judge_status in ("judge_validation_failed", "judge_error"):
        # The judge could not settle some sentences, citations or claims: they kept the offline verdict, for a human.
        # A call that got no reply says why (refused, timed out, HTTP 503): the reviewer and the caller need it.
        # The call that failed as the response did (not another task's, nor an attempt that a retry mended).
        failed = [c.error for c in audited.judge_calls if c.error and c.status == audited.judge_status]
        cause = next((" ".join(error.split())[:200] for error in failed), None)
        unusable = f"{cause};" if cause else "judge verdicts unusable,"
        reasons.append(f"{audited.judge_status}: {unusable} offline verdicts kept (see judge_calls)")
    # Part of the response was left unchecked (the audit's limits): whatever its risk, a human sees it.
    reasons.extend(describe_limit(flag) for flag in report.critical_flags if flag.startswith(LIMIT_FLAG_PREFIX))
    if INSUFFICIENT_EVIDENCE in report.critical_flags and audited.parsed.response.answer.strip():
        reasons.append("answer given with no usable evidence (INSUFFICIENT_EVIDENCE)")
    if audited.citations is not None:
        for failure in audited.citations.summary.critical_failures:
            reasons.append(f"citation critical failure: {failure} names no passage of the evidence (fabricated)")
    return reasons


def _risk_reasons(audited: AuditedResponse, threshold: float) -> list[str]:
    """In high-risk traffic: every failed citation, every claim that needs sign-off, every other critical flag."""
    if audited.parsed.response.metadata.risk_level is not RiskLevel.high:
        return []
    reasons = []
    report = audited.report
    if audited.citations is not None:
        for c in audited.citations.audit_results:
            if c.overall_verdict.value == "FAIL":
                where = f"sentence {c.sentence_index}, " if c.sentence_index is not None else ""
                reasons.append(
                    f"high-risk citation {c.citation_id} ({where}source {c.doc_id or 'none'}) failed "
                    f"({c.verification_status.value}): {c.auditor_notes[:200]}"
                )
    if audited.claims is not None:
        # Spec 004's approval gate: low-confidence or unsourced claims need sign-off; so do overconfident ones.
        for c in audited.claims.claims:
            if c.low_confidence or c.missing_source or c.overconfident:
                what = "; ".join(c.issues) or ("low confidence" if c.low_confidence else "missing source")
                reasons.append(f"high-risk claim {c.claim_index}: {what}")
    # Flags the sentence rules already explain are not repeated; any other flag (from later stages) is.
    limits = [flag for flag in report.critical_flags if flag.startswith(LIMIT_FLAG_PREFIX)]
    explained = set(critical_flags(report.sentences, threshold)) | {INSUFFICIENT_EVIDENCE, *limits}
    reasons.extend(f"high-risk critical flag: {flag}" for flag in report.critical_flags if flag not in explained)
    return reasons
