"""The drift stage's retrieval checks: passages less about the question, none about it at all, or left unused.

A retriever that starts returning passages about the wrong topic shows here in the window it starts, before
or without any change in what the answers claim; a generator that stops drawing on good passages shows as
evidence use falling while relevance holds. Three checks per judged slice, on the `responses` columns the
ScoreRetrieval step wrote, against the same reference the confidence checks use::

    rows = retrieval_checks(plan, base, config, p_threshold)   # DriftCheckRows; none without the columns

- `context_relevance_drop`: the responses' mean context relevance fell by more than `max_relevance_drop`
  (relative to the reference) and a one-sided Welch t-test of the fall is under the window's p-value threshold;
- `empty_retrieval_rise`: the share of responses with no relevant passage rose by more than
  `max_empty_retrieval_rise` (absolute) and a one-sided binomial test at the reference's smoothed rate agrees
  (as `abstention_rise` does);
- `evidence_use_drop`: the responses' mean evidence use (`passages_used_share`: the share of their passages
  the supported sentences drew on) fell by more than `max_evidence_use_drop` (relative), by the same Welch
  t-test as relevance. It does not say whose fault: an incident's cause is read from relevance and the
  empty rate (`incident_retrieval`), so a fall in use with retrieval held counts for the generator.

Either one worse than the reference at p < 0.05 without an alert (past its limit but not significant enough,
or significant but within its limit) is `inconclusive`: it keeps an open alert open and the window out of
baselines. The retriever regression's empty-retrieval rate hovers near its limit, and an alert that cleared
after two milder windows would be raised again a window later.
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from schemas.monitoring import CheckStatus, DriftCheckRow
from transforms.monitoring.abstention import rate_rise_figures
from transforms.monitoring.plans import DriftConfig, SlicePlan

__all__ = [
    "EMPTY_RETRIEVAL_CHECK",
    "EVIDENCE_USE_CHECK",
    "RELEVANCE_CHECK",
    "RETRIEVAL_CHECKS",
    "relevance_p_value",
    "retrieval_checks",
    "scored",
]

RELEVANCE_CHECK = "context_relevance_drop"
EMPTY_RETRIEVAL_CHECK = "empty_retrieval_rise"
EVIDENCE_USE_CHECK = "evidence_use_drop"
RETRIEVAL_CHECKS = (RELEVANCE_CHECK, EMPTY_RETRIEVAL_CHECK, EVIDENCE_USE_CHECK)
_INCONCLUSIVE_P_VALUE = 0.05


def scored(frame: pd.DataFrame | None, column: str) -> pd.Series | None:
    """The column's known values (None when the frame lacks the column or has no value in it)."""
    if frame is None or column not in frame:
        return None
    values = frame[column].dropna()
    return values if len(values) else None


def relevance_p_value(current: pd.Series, reference: pd.Series) -> float:
    """One-sided Welch t-test that the current mean is below the reference's (1.0 when it cannot be tested)."""
    if len(current) < 2 or len(reference) < 2 or (current.std() == 0 and reference.std() == 0):
        return 1.0 if current.mean() >= reference.mean() else 0.0
    p = float(stats.ttest_ind(current, reference, equal_var=False, alternative="less").pvalue)
    return 1.0 if math.isnan(p) else p


def _status(moved: bool, p_value: float, p_threshold: float) -> CheckStatus:
    if moved and p_value < p_threshold:
        return CheckStatus.alert
    if p_value < _INCONCLUSIVE_P_VALUE:
        # Still worse than the reference, if not by the limit: a regression's milder windows keep its alert
        # open instead of clearing it and raising it again a window later.
        return CheckStatus.inconclusive
    return CheckStatus.ok


def _mean_drop_row(
    plan: SlicePlan, base: dict, p_threshold: float, *, check: str, column: str, what: str, max_drop: float
) -> DriftCheckRow | None:
    """A check that the responses' mean of `column` did not fall by more than `max_drop` (relative)."""
    current, reference = scored(plan.responses, column), scored(plan.reference_responses, column)
    if current is None or reference is None:
        return None
    mean, reference_mean = float(current.astype(float).mean()), float(reference.astype(float).mean())
    limit = reference_mean * (1 - max_drop)
    p_value = relevance_p_value(current.astype(float), reference.astype(float))
    return DriftCheckRow(
        **base,
        check=check,
        status=_status(mean < limit, p_value, p_threshold),
        test=f"mean {what} >= reference - {max_drop:.0%} (and Welch t p_value < {p_threshold:.2g} to alert)",
        current_value=mean,
        reference_value=reference_mean,
        p_value=p_value,
        threshold=limit,
    )


def _empty_row(plan: SlicePlan, base: dict, config: DriftConfig, p_threshold: float) -> DriftCheckRow | None:
    current = scored(plan.responses, "empty_retrieval")
    reference = scored(plan.reference_responses, "empty_retrieval")
    if current is None or reference is None:
        return None
    figures = rate_rise_figures(
        current.astype(bool),
        reference.astype(bool),
        limit=config.max_empty_retrieval_rise,
        what="empty-retrieval",
        p_threshold=p_threshold,
    )
    status = _status(figures["current_value"] > figures["threshold"], figures["p_value"], p_threshold)
    return DriftCheckRow(**base, check=EMPTY_RETRIEVAL_CHECK, status=status, **figures)


def retrieval_checks(plan: SlicePlan, base: dict, config: DriftConfig, p_threshold: float) -> list[DriftCheckRow]:
    """The retrieval check rows of one judged slice: none for a lake (or a reference) without retrieval scores."""
    rows = (
        _mean_drop_row(
            plan,
            base,
            p_threshold,
            check=RELEVANCE_CHECK,
            column="mean_context_relevance",
            what="context relevance",
            max_drop=config.max_relevance_drop,
        ),
        _empty_row(plan, base, config, p_threshold),
        _mean_drop_row(
            plan,
            base,
            p_threshold,
            check=EVIDENCE_USE_CHECK,
            column="passages_used_share",
            what="evidence use",
            max_drop=config.max_evidence_use_drop,
        ),
    )
    return [row for row in rows if row is not None]
