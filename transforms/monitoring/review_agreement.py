"""Agreement between the verifier and its reviewers, watched like any other signal.

Reviewers' labels (`reviews`, the latest label of each sentence) are the ground truth on a team's own data.
Per response, `review_counts` gives how many of its sentences carry a label and with how many the reviewer
agreed with the verdict the verifier gave (the four verdicts, compared as they stood when the label was given).
Window metrics pool them per slice (`reviewed_sentences`, `review_agreement`, computed again for a window
whenever a review of one of its responses is recorded), and the drift stage compares each slice's window
with its reference::

    counts = review_counts(con, "window_start IN (?)", [start])   # {response_id: (reviewed, agreed)}
    row = agreement_check(plan, base, config, p_threshold)        # a DriftCheckRow, or None without reviews

`review_agreement_drop` alerts when the window's agreement is more than `max_agreement_drop` (absolute) under
the reference's and a one-sided binomial test at the reference's rate (Laplace-smoothed) puts it under the
window's p-value threshold; with the drop and only p < 0.05 it is `inconclusive`. A window or reference with
fewer than `min_reviews` reviewed sentences is `insufficient_data`; a slice without any review has no row.

The check looks at the reviews in the lake when the drift stage checks the window: labels given later count
in the window metrics at once, and in a check already made when drift checks that window again
(`drift --recompute`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from schemas.monitoring import CheckStatus, DriftCheckRow
from transforms.monitoring.plans import DriftConfig, SlicePlan

__all__ = ["AGREEMENT_CHECK", "REVIEW_COLUMNS", "agreement_check", "agreement_p_value", "review_counts"]

AGREEMENT_CHECK = "review_agreement_drop"
REVIEW_COLUMNS = ("reviewed_sentences", "agreed_sentences")
"""The per-response columns the drift stage's responses frame carries (0 where nothing was reviewed)."""
_INCONCLUSIVE_P_VALUE = 0.05

_COUNTS_SQL = """
WITH latest AS (
    SELECT response_id, label, verifier_verdict FROM reviews {where}
    QUALIFY row_number() OVER (PARTITION BY response_id, sentence_index ORDER BY reviewed_at DESC, review_id DESC) = 1
)
SELECT response_id, count(*), count(*) FILTER (WHERE label = verifier_verdict) FROM latest GROUP BY 1
"""


def review_counts(con: duckdb.DuckDBPyConnection, where: str | None = None, params: Sequence[Any] = ()) -> dict:
    """`{response_id: (reviewed sentences, sentences the reviewer agreed on)}` for the responses that carry any
    label in the `reviews` view of `con`; with `where`, only those matching it (SQL over the `responses` view,
    `?` placeholders for `params`)."""
    restrict = "" if where is None else f"WHERE response_id IN (SELECT response_id FROM responses WHERE {where})"
    rows = con.execute(_COUNTS_SQL.format(where=restrict), list(params)).fetchall()
    return {response_id: (int(reviewed), int(agreed)) for response_id, reviewed, agreed in rows}


def agreement_p_value(agreed: int, reviewed: int, reference_agreed: int, reference_reviewed: int) -> float:
    """P(at most `agreed` of `reviewed` agree) at the reference's smoothed rate (k + 1) / (n + 2)."""
    # Imported here: scipy.stats takes half a second to import, and every audit's start-up would pay it for a
    # test that only the review-agreement check runs.
    from scipy.stats import binom

    rate = (reference_agreed + 1) / (reference_reviewed + 2)
    return float(binom.cdf(agreed, reviewed, rate))


def _totals(frame: pd.DataFrame | None) -> tuple[int, int]:
    if frame is None or REVIEW_COLUMNS[0] not in frame:
        return 0, 0
    return int(frame[REVIEW_COLUMNS[0]].sum()), int(frame[REVIEW_COLUMNS[1]].sum())


def agreement_check(plan: SlicePlan, base: dict, config: DriftConfig, p_threshold: float) -> DriftCheckRow | None:
    """The `review_agreement_drop` row of one judged slice; None when nothing in its window was reviewed."""
    reviewed, agreed = _totals(plan.responses)
    if not reviewed:
        return None
    reference_reviewed, reference_agreed = _totals(plan.reference_responses)
    test = (
        f"review agreement >= reference - {config.max_agreement_drop:.0%} "
        f"(and binomial p_value < {p_threshold:.2g} to alert; {config.min_reviews} reviewed sentences at least)"
    )
    rate = agreed / reviewed
    if min(reviewed, reference_reviewed) < config.min_reviews:
        return DriftCheckRow(
            **base,
            check=AGREEMENT_CHECK,
            status=CheckStatus.insufficient_data,
            test=test,
            current_value=rate,
            reference_value=reference_agreed / reference_reviewed if reference_reviewed else None,
        )
    reference_rate = reference_agreed / reference_reviewed
    p_value = agreement_p_value(agreed, reviewed, reference_agreed, reference_reviewed)
    fallen = rate < reference_rate - config.max_agreement_drop
    if fallen and p_value < p_threshold:
        status = CheckStatus.alert
    elif fallen and p_value < _INCONCLUSIVE_P_VALUE:
        status = CheckStatus.inconclusive
    else:
        status = CheckStatus.ok
    return DriftCheckRow(
        **base,
        check=AGREEMENT_CHECK,
        status=status,
        test=test,
        current_value=rate,
        reference_value=reference_rate,
        p_value=p_value,
        threshold=reference_rate - config.max_agreement_drop,
    )
