"""The drift stage's abstention check: a jump in answers that decline is a sign of a retriever regression.

When the retriever stops finding the passages, a careful generator says so ("I couldn't find that in the
documents") instead of inventing: the confidence of what it does claim may not move at all, but the share
of responses with an abstaining sentence rises. `abstention_rise` compares that share in a slice's window
with its reference (the same reference the confidence checks use)::

    row = abstention_check(plan, base, config, p_threshold)   # a DriftCheckRow, or None without a column

It alerts when the window's share exceeds the reference's by more than `max_abstention_rise` (absolute) and a
one-sided binomial test at the reference's rate (Laplace-smoothed, so a reference without abstentions does not
make one abstention significant) puts it under the window's p-value threshold; with the rise and only p < 0.05
it is `inconclusive`, which keeps an open alert open and the window out of baselines, as for the other checks.
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import binom

from schemas.monitoring import CheckStatus, DriftCheckRow
from transforms.monitoring.plans import DriftConfig, SlicePlan

__all__ = ["ABSTENTION_CHECK", "abstention_check", "abstention_p_value", "rate_rise_figures"]

ABSTENTION_CHECK = "abstention_rise"
_INCONCLUSIVE_P_VALUE = 0.05


def _flags(frame: pd.DataFrame | None) -> pd.Series | None:
    if frame is None or "abstention" not in frame:
        return None
    return frame["abstention"].fillna(False).astype(bool)


def abstention_p_value(current: int, responses: int, reference: int, reference_responses: int) -> float:
    """P(at least `current` of `responses` abstain) at the reference's smoothed rate (k + 1) / (n + 2)."""
    rate = (reference + 1) / (reference_responses + 2)
    return float(binom.sf(current - 1, responses, rate)) if current > 0 else 1.0


def rate_rise_figures(current: pd.Series, reference: pd.Series, *, limit: float, what: str, p_threshold: float) -> dict:
    """The figures of a check that the share of flagged responses (`current`, booleans) rose by at most `limit`
    (absolute) over the reference's, under the binomial test above: a `DriftCheckRow`'s `current_value`,
    `reference_value`, `p_value`, `threshold` and `test` (the abstention and empty-retrieval checks)."""
    rate, reference_rate = float(current.mean()), float(reference.mean())
    return {
        "current_value": rate,
        "reference_value": reference_rate,
        "p_value": abstention_p_value(int(current.sum()), len(current), int(reference.sum()), len(reference)),
        "threshold": reference_rate + limit,
        "test": f"{what} rate <= reference + {limit:.0%} (and binomial p_value < {p_threshold:.2g} to alert)",
    }


def abstention_check(plan: SlicePlan, base: dict, config: DriftConfig, p_threshold: float) -> DriftCheckRow | None:
    """The `abstention_rise` row of one judged slice; None when the lake has no abstention column."""
    current, reference = _flags(plan.responses), _flags(plan.reference_responses)
    if current is None or reference is None or not len(current) or not len(reference):
        return None
    figures = rate_rise_figures(
        current, reference, limit=config.max_abstention_rise, what="abstention", p_threshold=p_threshold
    )
    risen, p_value = figures["current_value"] > figures["threshold"], figures["p_value"]
    if risen and p_value < p_threshold:
        status = CheckStatus.alert
    elif risen and p_value < _INCONCLUSIVE_P_VALUE:
        status = CheckStatus.inconclusive
    else:
        status = CheckStatus.ok
    return DriftCheckRow(**base, check=ABSTENTION_CHECK, status=status, **figures)
