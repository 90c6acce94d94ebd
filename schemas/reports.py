"""The audit reports, with the specification's exact field names and enums.

- `SentenceAuditReport` / `SentenceVerdict`: the sentence-level attribution audit (spec 000).
- `CitationAuditReport` / `CitationAuditResult`: the citation audit (spec 002).
- `ClaimAttributionReport` / `ClaimCheck`: checks of generator-logged claims (spec 004).

A verdict's `confidence` is the spec's: how sure the verifier is of the verdict it gave, so a confidently
`ungrounded` sentence has a high one. What calibration, routing, drift and the dashboards need is the other
reading of the same number, the verifier's probability that the sentence is fully grounded:
`SentenceVerdict.grounded_probability`. It is derived here and nowhere else (`grounded_probability`, its
inverse `verdict_confidence`, and `GROUNDED_PROBABILITY_SQL` for lake files written before the `sentences`
table stored it).

Verifiers produce these; the lake rows in `schemas.lake` are derived from them.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from schemas.base import Confidence, NonEmptyStr, StrictModel
from schemas.responses import ConfidenceLabel

__all__ = [
    "GROUNDED_PROBABILITY_SQL",
    "INSUFFICIENT_EVIDENCE",
    "LIMIT_FLAG_PREFIX",
    "AttributionVerdict",
    "CitationAuditReport",
    "CitationAuditResult",
    "CitationAuditSummary",
    "ClaimAttributionReport",
    "ClaimCheck",
    "ClaimSupportLevel",
    "OverallVerdict",
    "QuoteMatch",
    "SentenceAuditReport",
    "SentenceVerdict",
    "VerificationStatus",
    "grounded_probability",
    "verdict_confidence",
]

INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"

LIMIT_FLAG_PREFIX = "LIMIT_EXCEEDED_"
"""How the critical flag of an audit limit a response reached begins (`transforms.audit.limits`)."""


class AttributionVerdict(str, Enum):
    """How far a sentence is supported by the evidence (spec 000)."""

    fully_grounded = "fully_grounded"
    partially_grounded = "partially_grounded"
    ungrounded = "ungrounded"
    contradicted = "contradicted"


def grounded_probability(verdict: AttributionVerdict | str, confidence: float) -> float:
    """The verifier's probability that the sentence is fully grounded, from its verdict and its confidence in
    that verdict: the confidence itself for `fully_grounded`, its complement for the three other verdicts."""
    grounded = verdict in (AttributionVerdict.fully_grounded, AttributionVerdict.fully_grounded.value)
    return float(confidence) if grounded else 1.0 - float(confidence)


def verdict_confidence(verdict: AttributionVerdict | str, probability: float) -> float:
    """The spec's `confidence` of `verdict` given by a verifier whose grounded probability is `probability`:
    the inverse of `grounded_probability` (the same complement, read the other way)."""
    return grounded_probability(verdict, probability)


GROUNDED_PROBABILITY_SQL = "CASE WHEN attribution_verdict = 'fully_grounded' THEN confidence ELSE 1 - confidence END"
"""`grounded_probability` in SQL over a row's `attribution_verdict` and `confidence`: what the lake's reader
gives for `sentences` rows written before the table had the column (`schemas.lake`)."""


class SentenceVerdict(StrictModel):
    """The verdict on one answer sentence (spec 000 field names)."""

    sentence_index: int = Field(ge=0)
    sentence_text: str
    attribution_verdict: AttributionVerdict
    confidence: Confidence
    supporting_evidence_ids: list[str] = Field(default_factory=list)
    supporting_evidence_excerpts: list[str] = Field(default_factory=list)
    unsupported_spans: list[str] = Field(default_factory=list)
    contradicting_evidence_ids: list[str] = Field(default_factory=list)
    contradicting_evidence_excerpts: list[str] = Field(default_factory=list)
    multi_source_flag: bool = False
    provenance_notes: str = ""
    claim_kind: SkipJsonSchema[str] = "claim"
    """`claim` for a sentence that states a fact and was verified; otherwise what it is instead (`lead_in`,
    `abstention`, `formatting`, `pleasantry`: `transforms.text.claims.ClaimKind`). A non-claim is not verified:
    it carries `fully_grounded` with confidence 1 only so the four verdicts stay the claims' own, and it never
    counts in scores, flags, metrics or review. Left out of the judge's reply schema: the judge sees claims only."""

    @property
    def grounded_probability(self) -> float:
        """The verifier's probability that the sentence is fully grounded (`grounded_probability`): what ROC
        curves, calibration, escalation bands and the drift checks read, where `confidence` is the spec's
        confidence in whichever verdict was given."""
        return grounded_probability(self.attribution_verdict, self.confidence)

    @property
    def is_claim(self) -> bool:
        """Whether this sentence is a claim that was verified (not a lead-in, greeting, header or abstention)."""
        return self.claim_kind == "claim"

    @property
    def abstention(self) -> bool:
        """Whether this sentence declines to answer or says the evidence does not tell (`claim_kind`
        `abstention`): not verified, not in the faithfulness score or the ungrounded count, no review reason."""
        return self.claim_kind == "abstention"


class SentenceAuditReport(StrictModel):
    """The sentence-level audit of one answer (spec 000)."""

    answer_id: NonEmptyStr
    verification_date: str
    sentences: list[SentenceVerdict]
    overall_faithfulness_score: Confidence
    critical_flags: list[str] = Field(default_factory=list)
    abstention: bool = False
    """The answer declines, or says the evidence does not tell, in at least one sentence."""

    @property
    def scored_faithfulness(self) -> float | None:
        """`overall_faithfulness_score` where there was something to score: None when every sentence is a
        non-claim (a refusal, a greeting), whose spec score of 1 means only that nothing unsupported was said.
        What the lake stores and every mean reads, so that refusals never raise a faithfulness figure. An answer
        with no sentences checked (no usable evidence) keeps its 0."""
        if self.sentences and not any(s.is_claim for s in self.sentences):
            return None
        return self.overall_faithfulness_score

    @model_validator(mode="after")
    def _indexes_in_order(self) -> SentenceAuditReport:
        indexes = [s.sentence_index for s in self.sentences]
        if indexes != list(range(len(indexes))):
            raise ValueError(f"sentence_index must run 0..n-1 in order, got {indexes}")
        return self


class ClaimSupportLevel(str, Enum):
    """How the cited source relates to the claim it is attached to (spec 002)."""

    SUPPORTS = "SUPPORTS"
    PARTIALLY_SUPPORTS = "PARTIALLY_SUPPORTS"
    CONTRADICTS = "CONTRADICTS"
    UNRELATED = "UNRELATED"


class OverallVerdict(str, Enum):
    """PASS or FAIL for one citation (spec 002)."""

    PASS = "PASS"
    FAIL = "FAIL"


class VerificationStatus(str, Enum):
    """The harness-level status of one citation (spec 002)."""

    accurate = "accurate"
    misattributed = "misattributed"
    fabricated = "fabricated"
    partial_match = "partial_match"
    unverifiable = "unverifiable"


class QuoteMatch(str, Enum):
    """How a quoted span matched its cited passage."""

    exact = "exact"
    normalized = "normalized"
    none = "none"


class CitationAuditResult(StrictModel):
    """The audit of one citation: the spec's fields, then where it sits and how its quote matched."""

    citation_id: NonEmptyStr
    source_exists: bool
    quote_accurate: bool | None = None
    claim_support_level: ClaimSupportLevel
    contextual_fidelity_issues: list[str] = Field(default_factory=list)
    overall_verdict: OverallVerdict
    auditor_notes: str = ""
    verification_status: VerificationStatus
    claim_summary: str = ""
    source_text_excerpt: str = ""
    doc_id: str = ""
    sentence_index: int | None = None
    quote: str | None = None
    quote_match: QuoteMatch | None = None
    quote_start: int | None = None
    quote_end: int | None = None
    supporting_doc_id: str | None = None


class CitationAuditSummary(StrictModel):
    """Totals over one answer's citations (spec 002)."""

    total_citations: int = Field(ge=0)
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    critical_failures: list[str] = Field(default_factory=list)
    note: str = ""

    @model_validator(mode="after")
    def _adds_up(self) -> CitationAuditSummary:
        if self.passed + self.failed != self.total_citations:
            raise ValueError(f"passed ({self.passed}) + failed ({self.failed}) != total ({self.total_citations})")
        return self


class CitationAuditReport(StrictModel):
    """The citation audit of one answer (spec 002)."""

    audit_results: list[CitationAuditResult]
    summary: CitationAuditSummary
    verifier: str = ""
    """Name of the verifier that judged claim support (the audit trail)."""
    verifier_version: str = ""


class ClaimCheck(StrictModel):
    """The checks of one generator-logged claim (spec 004)."""

    claim_index: int = Field(ge=0)
    claim_text: str
    source_doc_ids: list[str] = Field(default_factory=list)
    confidence_label: ConfidenceLabel | None = None
    confidence_score: Confidence | None = None
    missing_source: bool = False
    unknown_source_ids: list[str] = Field(default_factory=list)
    low_confidence: bool = False
    missing_low_confidence_reason: bool = False
    verified_verdict: AttributionVerdict | None = None
    verified_confidence: Confidence | None = None
    overconfident: bool = False
    issues: list[str] = Field(default_factory=list)


class ClaimAttributionReport(StrictModel):
    """Claim checks of one answer with the two rates monitoring watches (spec 004)."""

    claims: list[ClaimCheck]
    attribution_coverage_rate: Confidence | None = None
    low_confidence_claim_rate: Confidence | None = None
    verifier: str = ""
    """Name of the verifier that checked the claims against their passages (the audit trail)."""
    verifier_version: str = ""
