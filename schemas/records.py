"""What flows through the pipeline between parsing and the lake.

`Origin` says where a message came from (a file line or a Kafka offset); a
`ParsedResponse` is a valid `LoggedResponse` with its origin; an
`AuditedResponse` accumulates, stage by stage, the sentence audit, the
citation audit, the claim checks and the routing decision of one response.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from schemas.base import StrictModel
from schemas.judge import JudgeCallRow
from schemas.reports import CitationAuditReport, ClaimAttributionReport, SentenceAuditReport
from schemas.responses import LoggedResponse
from schemas.retrieval import RetrievalReport

__all__ = [
    "DEAD_LETTER_NAMESPACE",
    "METRICS_NAMESPACE",
    "AuditedResponse",
    "Origin",
    "ParsedResponse",
    "ReviewDecision",
    "ReviewRoute",
]

METRICS_NAMESPACE = "groundwatch"
"""The Beam metrics namespace of a run's counts (read, parsed, skipped blank, ...), which every reader and stage
counts into and `pipelines.runner.counts` reads back."""
DEAD_LETTER_NAMESPACE = "groundwatch.dead_letters"
"""The namespace of the dead-letter counters, one per reason."""


class Origin(StrictModel):
    """Where a message came from: `file:<path>` with the line number, or `kafka:<topic>` with partition and offset."""

    source: str
    partition: int | None = None
    offset: int | None = None


class ParsedResponse(StrictModel):
    """A valid logged response and where it was read."""

    response: LoggedResponse
    origin: Origin
    input_flags: list[str] = Field(default_factory=list)
    raw: bytes | None = Field(default=None, repr=False)
    """The original message bytes, kept through the audit so that the dead letter of a duplicate, or of a
    response some later stage fails on, holds the message as it was read."""


class ReviewRoute(StrEnum):
    """Why a response was sent to review, as a kind (`transforms.audit.routing` gives each reason's)."""

    uncertain = "uncertain"
    """A sentence's confidence is under the threshold, or its calibrated probability inside the escalation band."""
    disagreement = "disagreement"
    """Two checks of one sentence disagree (`checks_disagree`)."""
    risk = "risk"
    """High-risk traffic with a failure or critical flag."""
    flagged = "flagged"
    """A confident finding: a contradicted or ungrounded sentence, a fabricated citation, no usable evidence,
    part of the response past the audit's limits, or a judge that failed."""
    sample = "sample"
    """A confident response drawn at random (`--review-sample`): the unbiased measure of agreement."""


class ReviewDecision(StrictModel):
    """Whether a human must look at a response, and why (sentence indexes and evidence ids in the reasons)."""

    needs_review: bool
    reasons: list[str] = Field(default_factory=list)
    routes: list[ReviewRoute] = Field(default_factory=list)
    """Why it was sent, in kinds (`uncertain`, `disagreement`, `risk`, `flagged`, `sample`), each once."""


class AuditedResponse(StrictModel):
    """One response and everything the audit stages have found about it."""

    parsed: ParsedResponse
    window_start: datetime
    window_end: datetime
    verifier: str
    verifier_version: str
    calibration_sha256: str | None = None
    """SHA-256 of the calibration file that mapped the verdicts' confidence; None: uncalibrated."""
    calibration_section: str | None = None
    """The file's section that decided: the tenant's own, or `default`; None: uncalibrated."""
    escalation_band: tuple[float, float] | None = None
    """The calibrated probabilities of "fully grounded" the deciding verifier is not sure of (routing: uncertain)."""
    report: SentenceAuditReport
    decided_by: list[str] = Field(default_factory=list)
    """The name of the verifier that decided each sentence, parallel to `report.sentences`."""
    citations: CitationAuditReport | None = None
    claims: ClaimAttributionReport | None = None
    retrieval: RetrievalReport | None = None
    """What the ScoreRetrieval step found of the evidence; None when it did not run."""
    review: ReviewDecision | None = None
    audited_at: datetime | None = None
    """When the audit ran (processing time); the lake views keep the latest audit of a response."""
    judge_status: str | None = None
    """The LLM judge's final status (judged, judge_validation_failed, judge_error); None when it did not run."""
    judge_calls: list[JudgeCallRow] = Field(default_factory=list)
    """The judge's call log for this response, written to the `judge_calls` table."""
