"""The operator's sections of the HTML report: open incidents, the review queue by tenant and reason, the worst slices.

    incidents_frame(frames.incidents, start, end)      # the period's incidents, open ones first
    review_frame(responses_of_the_period)              # responses in review per tenant and reason kind
    worst_slices(window_metrics_of_the_period)         # the slices of lowest mean attribution confidence

Each returns a plain frame that `dashboards.report` renders as a table; none of them reads the lake.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboards.review_reasons import review_queue
from schemas.monitoring import ALL_TRAFFIC, IncidentRow
from transforms.monitoring.incident_messages import retrieval_evidence_text, share_labels, slice_label
from transforms.monitoring.incident_retrieval import RETRIEVAL_FIELDS

__all__ = ["INCIDENT_COLUMNS", "SLICE_COLUMNS", "incidents_frame", "review_frame", "worst_slices"]

INCIDENT_COLUMNS = [
    "status",
    "cause_slice",
    "started_at",
    "cleared_at",
    "drop",
    "responses",
    "likely_cause",
    "breakdown",
    "alerts",
    "also_affected",
    "examples",
]
SLICE_COLUMNS = ["slice", "windows", "responses", "mean_attribution_confidence", "mean_faithfulness", "review_share"]
MIN_SLICE_RESPONSES = 20
"""A slice with fewer responses in the period is left out of the worst slices: its mean is mostly noise."""


def _percent(value) -> str:
    return "" if value is None or pd.isna(value) else f"{100 * float(value):.0f}%"


def _items(value) -> list:
    """A list cell of a lake row (a numpy array once read back), as a list."""
    return [] if value is None or (isinstance(value, float) and pd.isna(value)) else list(value)


def _evidence_for_the_call(r: dict) -> str:
    """`: retrieval moved (context relevance 0.29 -> 0.24, empty retrieval 2% -> 22%)`, as the incident's
    message gives it; empty for a lake without retrieval scores."""
    fields: dict[str, Any] = {k: (None if pd.isna(v) else v) for k in RETRIEVAL_FIELDS if (v := r.get(k)) is not None}
    return retrieval_evidence_text(IncidentRow.model_construct(**fields))


def incidents_frame(incidents: pd.DataFrame, start, end) -> pd.DataFrame:
    """The incidents open at some time in [start, end), firing first, the most alerts first, then the latest."""
    if not len(incidents):
        return pd.DataFrame(columns=INCIDENT_COLUMNS)
    still_open = incidents["cleared_at"].isna() | (incidents["cleared_at"] >= start)
    period = incidents[(incidents["started_at"] < end) & still_open]
    rows = []
    for r in period.sort_values("started_at", ascending=False).to_dict("records"):
        moved = r.get("retrieval_moved")  # null (NaN here) for a lake without retrieval scores
        labels = share_labels(moved is not None and not pd.isna(moved) and bool(moved))
        shares = (r.get("retrieval_share"), r.get("generation_share"), r.get("citation_hygiene_share"))
        breakdown = ", ".join(f"{label} {_percent(share)}" for label, share in zip(labels, shares, strict=True))
        rows.append(
            {
                "status": r["status"],
                "cause_slice": slice_label(r["cause_dimension"], r["cause_value"]),
                "started_at": f"{r['started_at']:%Y-%m-%d %H:%M}",
                "cleared_at": "" if pd.isna(r["cleared_at"]) else f"{r['cleared_at']:%Y-%m-%d %H:%M}",
                "drop": f"-{_percent(r['drop'])}" if not pd.isna(r["drop"]) else "",
                "responses": int(r["responses"]),
                "likely_cause": str(r["cause"]).replace("_", " ") + _evidence_for_the_call(r),
                "breakdown": breakdown,
                "alerts": len(_items(r["alert_ids"])),
                "also_affected": ", ".join(_items(r["affected_slices"])),  # written by slice_label already
                "examples": ", ".join(_items(r["example_response_ids"])[:3]),
            }
        )
    frame = pd.DataFrame(rows, columns=INCIDENT_COLUMNS)
    # Open ones first; among them the one with the most alerts (the widest cause), then the latest.
    frame["_firing"] = frame["status"] != "firing"
    frame = frame.sort_values(["_firing", "alerts"], ascending=[True, False], kind="stable")
    return frame.drop(columns="_firing")


def review_frame(responses: pd.DataFrame, limit: int = 15) -> pd.DataFrame:
    """The review queue of the period per tenant and reason kind, the largest first, with the share in percent."""
    if not len(responses) or "needs_review" not in responses:
        return pd.DataFrame(columns=["tenant", "reason", "responses_in_review", "share_of_tenant"])
    queue = review_queue(responses).head(limit).copy()
    queue["share_of_tenant"] = queue["share_of_tenant"].map(_percent)
    return queue


def worst_slices(metrics: pd.DataFrame, limit: int = 8) -> pd.DataFrame:
    """Slices (not all traffic) with at least `MIN_SLICE_RESPONSES` responses, lowest mean confidence first.

    Means are weighted by each window's responses, so a small window counts as little as it should; a window
    without a mean (its responses claimed nothing: refusals) counts in the slice's responses and review share,
    not in its means."""
    sliced = metrics[metrics["slice_dimension"] != ALL_TRAFFIC]
    if not sliced["mean_attribution_confidence"].notna().any():
        return pd.DataFrame(columns=SLICE_COLUMNS)

    def weighted(column: str) -> dict[str, pd.Series]:
        known = sliced[column].notna()
        return {
            f"{column}_sum": (sliced[column] * sliced["responses"]).where(known, 0.0),
            f"{column}_weight": sliced["responses"].where(known, 0),
        }

    sliced = sliced.assign(**weighted("mean_attribution_confidence"), **weighted("mean_faithfulness"))
    grouped = sliced.groupby(["slice_dimension", "slice_value"]).agg(
        windows=("window_start", "nunique"),
        responses=("responses", "sum"),
        conf_sum=("mean_attribution_confidence_sum", "sum"),
        conf_weight=("mean_attribution_confidence_weight", "sum"),
        faith_sum=("mean_faithfulness_sum", "sum"),
        faith_weight=("mean_faithfulness_weight", "sum"),
        in_review=("needs_review_responses", "sum"),
    )
    grouped = grouped[(grouped["responses"] >= MIN_SLICE_RESPONSES) & (grouped["conf_weight"] > 0)].reset_index()
    if not len(grouped):
        return pd.DataFrame(columns=SLICE_COLUMNS)
    frame = pd.DataFrame(
        {
            "slice": [
                slice_label(d, v) for d, v in zip(grouped["slice_dimension"], grouped["slice_value"], strict=True)
            ],
            "windows": grouped["windows"],
            "responses": grouped["responses"],
            "mean_attribution_confidence": grouped["conf_sum"] / grouped["conf_weight"],
            "mean_faithfulness": grouped["faith_sum"] / grouped["faith_weight"].where(grouped["faith_weight"] > 0),
            "review_share": (grouped["in_review"] / grouped["responses"]).map(_percent),
        }
    )
    return frame.sort_values(["mean_attribution_confidence", "slice"]).head(limit)[SLICE_COLUMNS]
