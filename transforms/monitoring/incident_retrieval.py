"""Did the retrieval of an incident's cause slice change? The evidence that tells retrieval from generation.

Counting problems cannot tell the two apart: an ungrounded sentence is what a retriever that lost the passage
and a generator that ignored it both produce, and a contradicted number is what a stale index and a misquote
both produce. The retrieval scores can: they measure the passages against the query, before any answer. Pooled
over the incident's windows, the cause slice's responses are compared with the same reference as its drop::

    evidence = retrieval_evidence(now, before, p_value=0.001, min_change=0.10)
    evidence.moved      # True: the passages got less relevant, or more responses got none that is relevant
    attribute(evidence, counts)   # ("retrieval" | "generation" | "citation_hygiene" | "unknown", shares)

Retrieval *moved* when mean context relevance fell by at least `min_change` (relative) under a one-sided Welch
t-test at `p_value`, or the empty-retrieval rate rose by at least `min_change` (absolute) under a one-sided
binomial test at the reference's smoothed rate. Then the cause is retrieval, whatever the problems counted. When
it held, the faithfulness fall is the generator's: ungrounded sentences and uncited claims count as generation.
Without retrieval scores on both sides (a lake written before them) there is no evidence, and the problem
counts decide as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from transforms.monitoring.abstention import abstention_p_value
from transforms.monitoring.incident_stats import breakdown_shares
from transforms.monitoring.retrieval_checks import relevance_p_value, scored

__all__ = ["RETRIEVAL_FIELDS", "RetrievalEvidence", "attribute", "retrieval_evidence"]

RETRIEVAL_FIELDS = (
    "context_relevance",
    "reference_context_relevance",
    "empty_retrieval_rate",
    "reference_empty_retrieval_rate",
    "retrieval_moved",
)
"""The `incidents` columns of the retrieval evidence (null when the lake has no retrieval scores)."""


@dataclass(frozen=True)
class RetrievalEvidence:
    """The cause slice's retrieval figures now and before the incident, and whether they moved."""

    relevance: float
    reference_relevance: float
    empty_rate: float
    reference_empty_rate: float
    moved: bool

    def fields(self) -> dict[str, object]:
        """The `incidents` columns (`RETRIEVAL_FIELDS`)."""
        values = (self.relevance, self.reference_relevance, self.empty_rate, self.reference_empty_rate, self.moved)
        return dict(zip(RETRIEVAL_FIELDS, values, strict=True))


def retrieval_evidence(
    now: pd.DataFrame, before: pd.DataFrame, *, p_value: float, min_change: float
) -> RetrievalEvidence | None:
    """The evidence of the responses `now` against `before`; None unless both have retrieval scores."""
    relevance, reference = scored(now, "mean_context_relevance"), scored(before, "mean_context_relevance")
    empty, reference_empty = scored(now, "empty_retrieval"), scored(before, "empty_retrieval")
    if relevance is None or reference is None or empty is None or reference_empty is None:
        return None
    relevance, reference = relevance.astype(float), reference.astype(float)
    empty, reference_empty = empty.astype(bool), reference_empty.astype(bool)
    mean, reference_mean = float(relevance.mean()), float(reference.mean())
    rate, reference_rate = float(empty.mean()), float(reference_empty.mean())
    fell = mean <= reference_mean * (1 - min_change) and relevance_p_value(relevance, reference) < p_value
    rose = rate >= reference_rate + min_change and (
        abstention_p_value(int(empty.sum()), len(empty), int(reference_empty.sum()), len(reference_empty)) < p_value
    )
    return RetrievalEvidence(mean, reference_mean, rate, reference_rate, bool(fell or rose))


def attribute(evidence: RetrievalEvidence | None, counts: dict[str, int]) -> tuple[str, dict[str, float | None]]:
    """The likely cause and the breakdown's shares, given the retrieval evidence (see the module's docstring)."""
    if evidence is None:
        return breakdown_shares(counts)
    if evidence.moved:
        return "retrieval", breakdown_shares(counts)[1]
    kind, shares = breakdown_shares(counts, retrieval_held=True)
    return ("generation" if kind == "unknown" else kind), shares
