"""The drift stage's plain types: `DriftConfig` (how windows are compared) and `SlicePlan` (one slice of one window).

They sit below both `transforms.monitoring.drift` (which builds the plans and judges them) and
`transforms.monitoring.evidently_report` (which turns them into Evidently frames and metrics), so neither
of those imports the other's types back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from schemas.monitoring import CheckStatus

__all__ = ["CHECK_COLUMNS", "DriftConfig", "SlicePlan"]

CHECK_COLUMNS = {
    "abstention_rise": "abstention",
    "context_relevance_drop": "mean_context_relevance",
    "empty_retrieval_rise": "empty_retrieval",
    "evidence_use_drop": "passages_used_share",
}
"""The `responses` column a check compares, for the checks whose column lakes written by older versions lack."""


@dataclass(frozen=True)
class DriftConfig:
    """How windows are compared and what counts as an alert."""

    baseline_windows: int = 6
    """Trailing windows pooled into the reference (when no fixed period is named)."""
    reference_from: datetime | None = None
    """Start of a fixed reference period (inclusive); with `reference_to`, replaces the trailing baseline."""
    reference_to: datetime | None = None
    """End of the fixed reference period (exclusive)."""
    min_responses: int = 20
    """A slice's window with fewer responses is `insufficient_data`, not drift; a reference needs as many."""
    drift_p_value: float = 0.001
    """Family-wise K-S p-value of a window: each of its m judged slices is tested at `drift_p_value / m`."""
    max_confidence_drop: float = 0.10
    """Largest tolerated drop of mean confidence, relative to the reference."""
    min_claims: int = 50
    """A slice's window with fewer logged claims does not judge coverage and low-confidence rates."""
    min_coverage: float = 0.95
    """Lowest tolerated attribution coverage rate (spec 004)."""
    max_low_confidence: float = 0.10
    """Highest tolerated low-confidence claim rate (spec 004)."""
    max_abstention_rise: float = 0.10
    """Largest tolerated rise of the share of abstaining responses over the reference (absolute)."""
    min_reviews: int = 20
    """A slice's window (or reference) with fewer reviewed sentences does not judge reviewer agreement."""
    max_agreement_drop: float = 0.15
    """Largest tolerated fall of the share of reviewed sentences the reviewer agreed with (absolute)."""
    max_relevance_drop: float = 0.25
    """Largest tolerated fall of mean context relevance, relative to the reference. Wider than the confidence
    limit: a window's relevance moves with its mix of topics (at 0.10, stable scenario traffic raised three
    alerts in 180 windows, on falls of 18-23%; an off-topic retriever falls by 35-45%)."""
    max_empty_retrieval_rise: float = 0.10
    """Largest tolerated rise of the share of responses with no relevant passage over the reference (absolute)."""
    max_evidence_use_drop: float = 0.25
    """Largest tolerated fall of mean evidence use (the share of its passages a response's supported sentences
    drew on), relative to the reference. On stable scenario traffic a response's share has a standard
    deviation of 0.24 around 0.73, so a 40-response window's mean moves by about 5%; a generator that ignores
    its passages, or a retriever that returns passages off the topic, takes 30% or more off it."""
    examples: int = 5
    """Response ids attached to an alert (the slice's lowest-confidence responses in the window)."""
    clear_after: int = 2
    """Consecutive passing windows that clear an alert."""
    max_span_hours: float = 168.0
    """How far back a small slice's windows grow to reach `min_responses` (a week); 0 turns growing off."""

    def __post_init__(self):
        if self.baseline_windows < 1:
            raise ValueError(f"--baseline-windows must be >= 1, got {self.baseline_windows}")
        if self.max_span_hours < 0:
            raise ValueError(f"--max-span-hours must be >= 0, got {self.max_span_hours}")
        if self.min_responses < 2:
            raise ValueError(f"--min-responses must be >= 2, got {self.min_responses}")
        if not 0 < self.drift_p_value < 1:
            raise ValueError(f"--drift-p-value must be in (0, 1), got {self.drift_p_value}")
        if not 0 < self.max_confidence_drop < 1:
            raise ValueError(f"--max-confidence-drop must be in (0, 1), got {self.max_confidence_drop}")
        if not 0 < self.max_abstention_rise < 1:
            raise ValueError(f"max_abstention_rise must be in (0, 1), got {self.max_abstention_rise}")
        if self.min_reviews < 1 or not 0 < self.max_agreement_drop < 1:
            raise ValueError("min_reviews must be >= 1 and max_agreement_drop in (0, 1)")
        for name in ("max_relevance_drop", "max_empty_retrieval_rise", "max_evidence_use_drop"):
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        if (self.reference_from is None) != (self.reference_to is None):
            raise ValueError("--reference-from and --reference-to go together")
        if self.reference_from is not None and self.reference_from >= self.reference_to:
            raise ValueError("--reference-from must be before --reference-to")

    @property
    def fixed_reference(self) -> bool:
        return self.reference_from is not None


@dataclass
class SlicePlan:
    """One slice of one window: its current data, its reference, and whether it can be judged."""

    dimension: str
    value: str
    responses: pd.DataFrame
    sentences: pd.DataFrame
    metrics: dict
    reference_responses: pd.DataFrame | None = None
    reference_sentences: pd.DataFrame | None = None
    reference_label: str = ""
    status: CheckStatus | None = None
    """Set when the slice cannot be judged (`insufficient_data` or `no_reference`)."""
    span_start: datetime | None = None
    """Set when the slice's current data spans its windows from this one on, not only the window checked."""

    @property
    def key(self) -> tuple[str, str]:
        return self.dimension, self.value

    def example_ids(self, count: int) -> list[str]:
        ranked = self.responses.sort_values(["mean_attribution_confidence", "faithfulness"], na_position="last")
        return ranked["response_id"].head(count).tolist()
