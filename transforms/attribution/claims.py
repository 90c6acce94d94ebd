"""Claim-attribution checks (spec 004) for responses whose generator logged its claims.

Each `LoggedClaim` is checked the way the spec's validators describe, and then
verified: its own text is judged against the passages it cites with the same
verifier the sentence audit uses, so a claim the generator marked HIGH that
the evidence does not fully support is `overconfident`::

    report = check_claims(response, make_verifier("heuristic"), threshold=0.7)
    report.attribution_coverage_rate, report.low_confidence_claim_rate

The checks: at least one source id (else `missing_source`, and an issue when
the generator did not flag it); every cited id in the evidence
(`unknown_source_ids`); a confidence given; a claim under the threshold
carries a `low_confidence_reason`; an `attribution_span` is a real span of a
cited passage; every cited passage carries its provenance (chunk index, retrieval
timestamp, source URI). Per response: attribution coverage (claims with at least one
valid source id) and the low-confidence rate (claims under the threshold):
the two rates monitoring alerts on (coverage under 95%, low confidence over 10%).
"""

from __future__ import annotations

from schemas import (
    AttributionVerdict,
    AuditedResponse,
    ClaimAttributionReport,
    ClaimCheck,
    ConfidenceLabel,
    LoggedClaim,
    LoggedResponse,
    QuoteMatch,
)
from transforms.text.quotes import match_quote
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD, Verifier
from transforms.verify.registry import make_verifier

__all__ = [
    "COVERAGE_ALERT_BELOW",
    "HIGH_CONFIDENCE",
    "LABEL_SCORES",
    "LOW_CONFIDENCE_ALERT_ABOVE",
    "AuditClaimsStep",
    "check_claim",
    "check_claims",
    "claim_score",
]

LABEL_SCORES = {
    ConfidenceLabel.HIGH: 0.9,
    ConfidenceLabel.MEDIUM: 0.7,
    ConfidenceLabel.LOW: 0.4,
    ConfidenceLabel.UNSUPPORTED: 0.0,
}
"""Where the categorical labels sit on the 0-1 scale, so one threshold serves both (MEDIUM is not low at 0.7)."""

HIGH_CONFIDENCE = 0.85
"""A numeric confidence at or above this claims what HIGH claims: direct, unambiguous support."""

COVERAGE_ALERT_BELOW = 0.95
LOW_CONFIDENCE_ALERT_ABOVE = 0.10


def claim_score(confidence: ConfidenceLabel | float | None) -> float | None:
    """A claim's confidence on the 0-1 scale (labels through `LABEL_SCORES`); None when it has none."""
    if confidence is None:
        return None
    if isinstance(confidence, ConfidenceLabel):
        return LABEL_SCORES[confidence]
    return float(confidence)


def _claims_high(confidence: ConfidenceLabel | float | None) -> bool:
    if isinstance(confidence, ConfidenceLabel):
        return confidence is ConfidenceLabel.HIGH
    return confidence is not None and confidence >= HIGH_CONFIDENCE


def check_claim(
    index: int, claim: LoggedClaim, response: LoggedResponse, verifier: Verifier, *, threshold: float
) -> ClaimCheck:
    """The checks and the verification of one logged claim."""
    passages = response.passages_by_id
    ids = list(dict.fromkeys(claim.source_doc_ids))
    known = [passages[i] for i in ids if i in passages]
    unknown = [i for i in ids if i not in passages]
    score = claim_score(claim.confidence)
    issues: list[str] = []

    missing_source = not known
    if unknown:
        issues.append(f"cited ids not in the evidence: {', '.join(unknown)}")
    # A claim the generator itself flags missing_source is the spec's honest form (it still lowers coverage).
    if missing_source and not claim.missing_source:
        issues.append(("no source id" if not ids else "no valid source") + " and missing_source is not flagged")
    if score is None:
        issues.append("no confidence given")
    low = score is not None and score < threshold
    missing_reason = low and not (claim.low_confidence_reason or "").strip()
    if missing_reason:
        issues.append(f"confidence {score:.2f} is under {threshold:.2f} and no low_confidence_reason is given")
    bare = [p.doc_id for p in known if p.chunk_index is None or p.retrieval_timestamp is None or not p.source_uri]
    if bare:
        # Spec 004 asks for full provenance of every cited source; a gap is reported, not routed.
        issues.append(
            f"cited passages without full provenance (chunk_index, retrieval_timestamp, source_uri): {', '.join(bare)}"
        )
    if claim.attribution_span and known:
        if all(match_quote(claim.attribution_span, p.content).match is QuoteMatch.none for p in known):
            issues.append("attribution_span is not a span of any cited passage")

    verdict = (
        verifier.verify([claim.claim_text], known).verdicts[0]
        if known and any(p.content.strip() for p in known)
        else None
    )
    overconfident = False
    if verdict is not None and _claims_high(claim.confidence):
        overconfident = verdict.attribution_verdict is not AttributionVerdict.fully_grounded
    elif verdict is None and _claims_high(claim.confidence):
        overconfident = True  # HIGH confidence with nothing to stand on
    if overconfident:
        found = verdict.attribution_verdict.value if verdict is not None else "no cited passage"
        issues.append(f"overconfident: marked {_label(claim.confidence)} but the cited evidence gives {found}")
    elif verdict is not None and verdict.attribution_verdict is AttributionVerdict.contradicted:
        against = ", ".join(verdict.contradicting_evidence_ids) or ", ".join(p.doc_id for p in known)
        issues.append(f"contradicted by its cited evidence ({against})")

    return ClaimCheck(
        claim_index=index,
        claim_text=claim.claim_text,
        source_doc_ids=ids,
        confidence_label=claim.confidence if isinstance(claim.confidence, ConfidenceLabel) else None,
        confidence_score=score,
        missing_source=missing_source,
        unknown_source_ids=unknown,
        low_confidence=low,
        missing_low_confidence_reason=missing_reason,
        verified_verdict=None if verdict is None else verdict.attribution_verdict,
        verified_confidence=None if verdict is None else verdict.confidence,
        overconfident=overconfident,
        issues=issues,
    )


def _label(confidence: ConfidenceLabel | float | None) -> str:
    return confidence.value if isinstance(confidence, ConfidenceLabel) else f"{confidence:.2f}"


def check_claims(
    response: LoggedResponse, verifier: Verifier, *, threshold: float = DEFAULT_CONFIDENCE_THRESHOLD
) -> ClaimAttributionReport | None:
    """The claim checks of a response and its two rates; None when the response logged no claims."""
    if response.claims is None:
        return None
    checks = [check_claim(i, c, response, verifier, threshold=threshold) for i, c in enumerate(response.claims)]
    n = len(checks)
    return ClaimAttributionReport(
        claims=checks,
        attribution_coverage_rate=sum(not c.missing_source for c in checks) / n if n else None,
        low_confidence_claim_rate=sum(c.low_confidence for c in checks) / n if n else None,
        verifier=verifier.name,
        verifier_version=str(verifier.version),
    )


class AuditClaimsStep:
    """The pipeline's audit step: adds the claim checks to an AuditedResponse (verifier built on first use)."""

    def __init__(self, verifier: str = "heuristic", *, threshold: float = DEFAULT_CONFIDENCE_THRESHOLD, **config):
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"confidence threshold must be in [0, 1], got {threshold}")
        self._name, self._threshold, self._config = verifier, threshold, config
        self._verifier: Verifier | None = None

    def __getstate__(self):
        return {**self.__dict__, "_verifier": None}

    def __call__(self, audited: AuditedResponse) -> AuditedResponse:
        if self._verifier is None:
            self._verifier = make_verifier(self._name, **self._config)
        report = check_claims(audited.parsed.response, self._verifier, threshold=self._threshold)
        return audited.model_copy(update={"claims": report})
