"""The monitoring tables of the lake: per-window metrics, drift checks and alerts.

- `WindowMetricsRow` (`window_metrics`): one row per window and slice (all traffic, each
  retriever_version, generator_model and tenant), written by the audit pipeline.
- `DriftCheckRow` (`drift_checks`): what `groundwatch drift` concluded for one check of one slice in
  one window: ok, alert, too few responses, or no reference yet. It is also the drift stage's memory:
  the next run starts after the last window checked and keeps alerting windows out of the baseline.
- `AlertRow` (`alerts`): one row per alert episode, rewritten (same `alert_id`) when it clears, so the
  lake views (latest row per key) show each alert once with its `started_at` and `cleared_at`.
- `IncidentRow` (`incidents`): alerts that fire together for one cause, grouped under the slice that
  explains them, with the drop, examples and why confidence fell; rewritten as alerts join and when it clears.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from schemas.base import StrictModel
from schemas.lake import register_table

__all__ = [
    "ALL_TRAFFIC",
    "SLICE_DIMENSIONS",
    "AlertRow",
    "AlertStatus",
    "CheckStatus",
    "DriftCheckRow",
    "IncidentRow",
    "WindowMetricsRow",
]

ALL_TRAFFIC = "all"
"""The slice dimension (and value) of the whole traffic of a window."""

SLICE_DIMENSIONS = (ALL_TRAFFIC, "retriever_version", "generator_model", "tenant")
"""The dimensions window metrics and drift checks are sliced by, in display order."""


class WindowMetricsRow(StrictModel):
    """The audit figures of one slice of traffic in one window."""

    window_start: datetime
    window_end: datetime
    slice_dimension: str
    """`all`, `retriever_version`, `generator_model` or `tenant`."""
    slice_value: str
    """The slice's value (`all` for all traffic; `unknown` when the metadata was not logged)."""
    responses: int = Field(ge=0)
    sentences: int = Field(ge=0)
    mean_confidence: float | None = None
    median_confidence: float | None = None
    mean_attribution_confidence: float | None = None
    """Mean confidence that a sentence is supported (`confidence` if fully grounded, else 1 - it)."""
    median_attribution_confidence: float | None = None
    mean_faithfulness: float | None = None
    fully_grounded_share: float | None = None
    partially_grounded_share: float | None = None
    ungrounded_share: float | None = None
    contradicted_share: float | None = None
    insufficient_evidence_responses: int = Field(ge=0)
    needs_review_responses: int = Field(ge=0)
    claims: int | None = None
    """Claims logged by the generator; None when no response in the slice logged claims."""
    attribution_coverage_rate: float | None = None
    low_confidence_claim_rate: float | None = None
    citations: int | None = None
    """Citations audited; None when no response in the slice had its citations audited."""
    citation_failure_rate: float | None = None
    abstention_rate: float | None = None
    """Share of responses with a sentence that declines or says the evidence does not tell; None without
    responses. A jump is a sign of a retriever regression (`groundwatch drift`, check `abstention_rise`)."""
    reviewed_sentences: int = Field(default=0, ge=0)
    """Sentences of the slice's responses a reviewer labelled (0 in rows computed before any review)."""
    review_agreement: float | None = None
    """Share of those whose reviewer's label is the verifier's verdict; None without reviews. A fall is the
    verifier drifting from its reviewers (`groundwatch drift`, check `review_agreement_drop`)."""
    sample_reviewed_sentences: int = Field(default=0, ge=0)
    """Of `reviewed_sentences`, those of responses in the random review sample (`--review-sample`)."""
    sample_review_agreement: float | None = None
    """Agreement on the random sample alone: the unbiased estimate (routed responses are the hard cases)."""
    computed_at: datetime
    # Retrieval quality (`transforms.retrieval`); None where no response of the slice had retrieval scored.
    mean_context_relevance: float | None = None
    """Mean over responses of their passages' mean relevance to the query (`context_relevance_drop` watches it)."""
    empty_retrieval_rate: float | None = None
    """Share of responses none of whose passages is relevant (`empty_retrieval_rise` watches it)."""
    mean_passages_used_share: float | None = None
    """Mean over responses of the share of their passages a supported sentence drew on."""


class CheckStatus(StrEnum):
    """The outcome of one drift check of one slice in one window."""

    ok = "ok"
    alert = "alert"
    inconclusive = "inconclusive"
    """Moved the wrong way, but not enough to be sure: keeps an open alert open, raises none."""
    insufficient_data = "insufficient_data"
    no_reference = "no_reference"


class DriftCheckRow(StrictModel):
    """One check (e.g. K-S drift of confidence) of one slice in one window, with its figures."""

    window_start: datetime
    window_end: datetime
    slice_dimension: str
    slice_value: str
    check: str
    """`confidence_drift`, `faithfulness_drift`, `mean_confidence_drop`, `attribution_coverage` or
    `low_confidence_claims`."""
    status: CheckStatus
    test: str
    """The test as Evidently states it (e.g. `K-S p_value < 0.001`)."""
    current_value: float | None = None
    reference_value: float | None = None
    p_value: float | None = None
    threshold: float | None = None
    current_responses: int = Field(ge=0)
    reference_responses: int = Field(ge=0)
    reference: str
    """Which data the window was compared with (e.g. `trailing 6 windows of all traffic`)."""
    in_baseline: bool = False
    """Whether this slice's window joins later baselines (enough responses, no drift alert open)."""
    checked_at: datetime
    span_start: datetime | None = None
    """For a slice too small for one window: the first window of the span it was checked over (its windows
    since its last check, grown until they held `min_responses`). None: this window alone."""


class AlertStatus(StrEnum):
    """Whether an alert's condition still holds."""

    firing = "firing"
    cleared = "cleared"


class AlertRow(StrictModel):
    """One alert episode: what moved, where, by how much, by which test, and when it started and cleared."""

    alert_id: str
    check: str
    metric: str
    slice_dimension: str
    slice_value: str
    status: AlertStatus
    severity: str
    """`critical` for a confidence drop or an operational threshold, `warning` for a distribution drift alone."""
    window_start: datetime
    """The window that raised the alert."""
    window_end: datetime
    started_at: datetime
    cleared_at: datetime | None = None
    cleared_window_start: datetime | None = None
    current_value: float | None = None
    reference_value: float | None = None
    test: str
    p_value: float | None = None
    threshold: float | None = None
    current_responses: int = Field(ge=0)
    reference_responses: int = Field(ge=0)
    reference: str
    example_response_ids: list[str] = Field(default_factory=list)
    """The lowest-confidence responses of the slice in the window that raised the alert."""
    message: str
    updated_at: datetime
    span_start: datetime | None = None
    """For a slice checked over a span of windows (too small for one): the span's first window. None: the
    window alone."""


class IncidentRow(StrictModel):
    """Alerts of one cause: the slice that explains them, the slices affected, the drop and its breakdown."""

    incident_id: str
    status: AlertStatus
    """`firing` while any of its alerts fires; `cleared` once all have cleared."""
    cause_dimension: str
    cause_value: str
    """The slice whose traffic explains the alerts: without it, the other slices' drops vanish."""
    affected_slices: list[str] = Field(default_factory=list)
    """The other slices with an alert of this incident (`generator_model=g2`, `all`)."""
    alert_ids: list[str] = Field(default_factory=list)
    window_start: datetime
    """The window that opened the incident."""
    started_at: datetime
    cleared_at: datetime | None = None
    figures_through: datetime | None = None
    """The last window the figures below pool (from `started_at`): they are refreshed whenever the incident changes."""
    current_value: float | None = None
    """Mean attribution confidence of the cause slice (without other open incidents' causes) over those windows."""
    reference_value: float | None = None
    """The same mean over the windows before `started_at` (all traffic's, for a slice new in the incident)."""
    drop: float | None = None
    """Relative drop of that mean against its reference (0.25 = 25% lower)."""
    responses: int = Field(ge=0)
    """Responses of the cause slice (without other open incidents' causes) over those windows."""
    example_response_ids: list[str] = Field(default_factory=list)
    cause: str
    """`retrieval` when the retrieval evidence moved; otherwise the largest share of the breakdown:
    `retrieval`, `generation` or `citation_hygiene` (ungrounded and uncited count as generation when
    retrieval held)."""
    ungrounded_sentences: int = Field(ge=0)
    uncited_claims: int = Field(ge=0)
    contradicted_sentences: int = Field(ge=0)
    misattributed_citations: int = Field(ge=0)
    fabricated_citations: int = Field(ge=0)
    inexact_quotes: int = Field(ge=0)
    retrieval_share: float | None = None
    """Share of the problems found in the cause slice that point at retrieval (ungrounded, uncited)."""
    generation_share: float | None = None
    """Share that points at generation (contradicted sentences, misattributed citations)."""
    citation_hygiene_share: float | None = None
    """Share that points at citation hygiene (fabricated ids, inexact quotes)."""
    # The retrieval evidence that decides between retrieval and generation (null without retrieval scores).
    context_relevance: float | None = None
    """Mean context relevance of the cause slice over the incident's windows."""
    reference_context_relevance: float | None = None
    """The same over the windows before it (the traffic it replaced, for a new slice)."""
    empty_retrieval_rate: float | None = None
    reference_empty_retrieval_rate: float | None = None
    retrieval_moved: bool | None = None
    """Whether relevance fell or empty retrieval rose significantly: then the likely cause is retrieval."""
    message: str
    updated_at: datetime


register_table(
    "window_metrics",
    WindowMetricsRow,
    time_column="window_start",
    key=("window_start", "slice_dimension", "slice_value"),
    version_column="computed_at",
    # A stream restarted from its last commit reads part of a closed window again, and its first pane then
    # holds only that part: the fuller row stays. A row computed again from the lake holds all of the window.
    prefer=("responses",),
)
register_table(
    "drift_checks",
    DriftCheckRow,
    time_column="window_start",
    key=("window_start", "slice_dimension", "slice_value", "check"),
    version_column="checked_at",
)
register_table("alerts", AlertRow, time_column="started_at", key=("alert_id",), version_column="updated_at")
register_table("incidents", IncidentRow, time_column="started_at", key=("incident_id",), version_column="updated_at")
