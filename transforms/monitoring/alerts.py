"""Alert episodes: a failing check opens an alert once; passing windows in a row clear it.

An alert is keyed by (check, slice dimension, slice value). While its condition persists it is not
raised again; once `clear_after` windows of the slice in a row pass the check (one passing window
in the middle of a regression is common in small windows), the same alert (same `alert_id`) is
rewritten with `status=cleared` and `cleared_at` (the first of those passing windows). Windows
with too few responses or no reference neither raise nor clear; a slice that gets no traffic at all
any more (a rolled-back retriever version) clears after `clear_after` windows. The open alerts come back from the
lake's `alerts` table on the next run, and the passing windows each has counted so far from its `drift_checks`
(a run may check one window at a time, as the monitor's drift stage does)::

    tracker = AlertTracker.from_lake_rows(frames.alerts, checks=frames.drift_checks)
    changed = tracker.update(evaluation, now)              # new and cleared AlertRows
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC, AlertRow, AlertStatus, CheckStatus, DriftCheckRow
from transforms.monitoring.incident_messages import slice_label
from transforms.monitoring.times import later_text

__all__ = ["AlertTracker", "alert_id", "alert_message", "format_alert"]

_METRIC_OF = {
    "confidence_drift": "attribution_confidence",
    "faithfulness_drift": "overall_faithfulness_score",
    "mean_confidence_drop": "mean_attribution_confidence",
    "attribution_coverage": "attribution_coverage_rate",
    "low_confidence_claims": "low_confidence_claim_rate",
    "abstention_rise": "abstention_rate",
    "review_agreement_drop": "review_agreement",
    "context_relevance_drop": "mean_context_relevance",
    "empty_retrieval_rise": "empty_retrieval_rate",
    "evidence_use_drop": "mean_passages_used_share",
}
_WARNING_ONLY = {"confidence_drift", "faithfulness_drift"}


def alert_id(check: str, dimension: str, value: str, started_at: datetime) -> str:
    """A stable id of one alert episode: the same inputs always give the same id."""
    text = "\x1f".join([check, dimension, value, started_at.isoformat()])
    return "alert-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def alert_message(check: DriftCheckRow, context: str = "") -> str:
    """One line saying what moved, where, by how much, by which test, and against what."""
    where = slice_label(check.slice_dimension, check.slice_value)
    when = f"{check.window_start:%Y-%m-%d %H:%M}-{check.window_end:%H:%M}"
    cur, ref = check.current_value, check.reference_value
    if check.check == "mean_confidence_drop":
        change = (cur - ref) / ref if ref else 0.0
        limit = 1 - check.threshold / ref if ref else 0.0
        text = (
            f"mean attribution confidence of {where} fell to {cur:.3f} from {ref:.3f} "
            f"({change:+.0%}; limit -{limit:.0%})"
        )
    elif check.check in ("context_relevance_drop", "evidence_use_drop"):
        name = "context relevance" if check.check == "context_relevance_drop" else "evidence use"
        change = (cur - ref) / ref if ref and cur is not None else 0.0
        text = f"mean {name} of {where} fell to {cur:.3f} from {ref:.3f} ({change:+.0%}; {check.test})"
    elif check.check in _WARNING_ONLY:
        name = "attribution confidence" if check.check == "confidence_drift" else "faithfulness"
        text = (
            f"{name} distribution of {where} drifted down "
            f"(K-S p={check.p_value:.2g} < {check.threshold:g}; mean {ref:.3f} -> {cur:.3f})"
        )
    else:
        text = f"{check.check.replace('_', ' ')} of {where} is {cur:.1%} ({check.test})"
    text += f" in window {when}, {check.current_responses} responses, vs {check.reference}"
    if context:
        text += "; " + context
    return text


class AlertTracker:
    """The alerts currently firing, keyed by (check, slice dimension, slice value)."""

    def __init__(self, open_alerts: dict[tuple[str, str, str], AlertRow] | None = None, clear_after: int = 2):
        if clear_after < 1:
            raise ValueError(f"clear_after must be >= 1 window, got {clear_after}")
        self.open: dict[tuple[str, str, str], AlertRow] = dict(open_alerts or {})
        self.clear_after = clear_after
        self._passing: dict[tuple[str, str, str], list[datetime]] = {}

    @classmethod
    def from_lake_rows(
        cls, alerts: pd.DataFrame, clear_after: int = 2, checks: pd.DataFrame | None = None
    ) -> AlertTracker:
        """Rebuild the open alerts from the `alerts` table (latest row per alert_id), and with `checks` (the
        `drift_checks` table) the passing windows each has counted towards clearing (`_passing_windows`)."""
        open_alerts = {}
        if len(alerts):
            for record in alerts[alerts["status"] == AlertStatus.firing.value].to_dict("records"):
                record = {k: (None if _missing(v) else v) for k, v in record.items()}
                examples = record.get("example_response_ids")
                record["example_response_ids"] = [] if examples is None else [str(e) for e in examples]
                for column in ("window_start", "window_end", "started_at", "updated_at"):
                    record[column] = pd.Timestamp(record[column]).to_pydatetime()
                if record.get("span_start") is not None:  # a lake written before spans has no such column
                    record["span_start"] = pd.Timestamp(record["span_start"]).to_pydatetime()
                row = AlertRow.model_validate(record)
                open_alerts[(row.check, row.slice_dimension, row.slice_value)] = row
        tracker = cls(open_alerts, clear_after)
        if checks is not None and len(checks):
            tracker._passing = _passing_windows(open_alerts, checks)
        return tracker

    def update(self, evaluation, now: datetime, examples: int = 5) -> list[AlertRow]:
        """Raise alerts for newly failing checks and clear those passing again; returns the rows that changed."""
        changed: list[AlertRow] = []
        context = _all_traffic_context(evaluation)
        for check in evaluation.checks:
            key = (check.check, check.slice_dimension, check.slice_value)
            if check.status == CheckStatus.alert:
                self._passing.pop(key, None)
            if check.status == CheckStatus.alert and key not in self.open:
                plan = evaluation.plans[(check.slice_dimension, check.slice_value)]
                extra = context if check.slice_dimension == ALL_TRAFFIC else ""
                row = AlertRow(
                    alert_id=alert_id(*key, check.window_start),
                    check=check.check,
                    metric=_METRIC_OF.get(check.check, check.check),
                    slice_dimension=check.slice_dimension,
                    slice_value=check.slice_value,
                    status=AlertStatus.firing,
                    severity="warning" if check.check in _WARNING_ONLY else "critical",
                    window_start=check.window_start,
                    window_end=check.window_end,
                    started_at=check.window_start,
                    current_value=check.current_value,
                    reference_value=check.reference_value,
                    test=check.test,
                    p_value=check.p_value,
                    threshold=check.threshold,
                    current_responses=check.current_responses,
                    reference_responses=check.reference_responses,
                    reference=check.reference,
                    example_response_ids=plan.example_ids(examples),
                    message=alert_message(check, extra),
                    updated_at=now,
                    span_start=check.span_start,
                )
                self.open[key] = row
                changed.append(row)
            elif check.status == CheckStatus.ok and key in self.open:
                passing = self._passing.setdefault(key, [])
                passing.append(check.window_start)
                if len(passing) < self.clear_after:
                    continue
                del self._passing[key]
                cleared = self.open.pop(key).model_copy(
                    update={
                        "status": AlertStatus.cleared,
                        "cleared_at": passing[0],
                        "cleared_window_start": check.window_start,
                        "updated_at": now,
                    }
                )
                changed.append(cleared)
        changed.extend(self._clear_vanished(evaluation, now))
        return changed

    def _clear_vanished(self, evaluation, now: datetime) -> list[AlertRow]:
        """Clear alerts of slices without any traffic (a rolled-back retriever) for `clear_after` windows."""
        cleared = []
        for key in [k for k in self.open if (k[1], k[2]) not in evaluation.plans]:
            passing = self._passing.setdefault(key, [])
            passing.append(evaluation.window_start)
            if len(passing) < self.clear_after:
                continue
            del self._passing[key]
            row = self.open.pop(key)
            cleared.append(
                row.model_copy(
                    update={
                        "status": AlertStatus.cleared,
                        "cleared_at": passing[0],
                        "cleared_window_start": evaluation.window_start,
                        "message": row.message + " | cleared: the slice has had no traffic since",
                        "updated_at": now,
                    }
                )
            )
        return cleared


def _passing_windows(
    open_alerts: dict[tuple[str, str, str], AlertRow], checks: pd.DataFrame
) -> dict[tuple[str, str, str], list[datetime]]:
    """The windows each open alert has counted towards clearing since it last failed, from the checks the
    earlier runs wrote, counted as `update` counts them window by window: a passing check adds its window, a
    failing one starts again, any other status neither; a window in which the slice had no traffic (no check
    row at all) adds it too (`_clear_vanished`). Without this, a run that checks one window at a time would
    never see `clear_after` passing windows in a row, and no alert would clear."""
    if not open_alerts:
        return {}
    since = min(row.started_at for row in open_alerts.values())
    later = checks[checks["window_start"] > pd.Timestamp(since)]
    # Windows as nanoseconds since the epoch: a large table's Timestamps, one object each, cost seconds.
    later = later.assign(window_ns=later["window_start"].dt.tz_convert("UTC").dt.as_unit("ns").array.asi8)
    windows = sorted(set(later["window_ns"].tolist()))
    slices = dict(iter(later.groupby(["slice_dimension", "slice_value"])))  # one pass over the table
    passing: dict[tuple[str, str, str], list[datetime]] = {}
    for key, row in open_alerts.items():
        check, dimension, value = key
        mine = slices.get((dimension, value), later.iloc[:0])
        present = set(mine["window_ns"].tolist())  # the windows in which the slice had traffic
        own = mine[mine["check"] == check]
        statuses = dict(zip(own["window_ns"].tolist(), own["status"].tolist(), strict=True))
        started, counted = pd.Timestamp(row.started_at).value, []
        # Back from the newest window to the last failing one (or the alert's own): only those count.
        for window in reversed(windows):
            status = statuses.get(window)
            if window <= started or status == CheckStatus.alert.value:
                break
            if window not in present or status == CheckStatus.ok.value:
                counted.append(pd.Timestamp(window, tz=UTC).to_pydatetime())
        if counted:
            passing[key] = counted[::-1]
    return passing


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _all_traffic_context(evaluation) -> str:
    """Where in all traffic to look: versions new in the window, and the least supported retriever_version."""
    plan = evaluation.plans.get((ALL_TRAFFIC, ALL_TRAFFIC))
    if plan is None or plan.reference_responses is None:
        return ""
    parts = []
    for dimension in ("retriever_version", "generator_model"):
        new = sorted(set(plan.responses[dimension]) - set(plan.reference_responses[dimension]))
        if new:
            parts.append(f"new in this window: {dimension}={'/'.join(new)}")
    by_version = plan.responses.groupby("retriever_version")["mean_attribution_confidence"].agg(["mean", "size"])
    by_version = by_version[by_version["size"] >= 5]
    if len(by_version) > 1:
        worst = by_version["mean"].idxmin()
        row = by_version.loc[worst]
        parts.append(
            f"least supported: retriever_version={worst} (mean {row['mean']:.3f} over {int(row['size'])} responses)"
        )
    return "; ".join(parts)


def format_alert(row: AlertRow) -> str:
    """How an alert reads in the log and on the console."""
    if row.status == AlertStatus.cleared:
        where = slice_label(row.slice_dimension, row.slice_value)
        cleared = later_text(row.started_at, row.cleared_at) if row.cleared_at else "?"
        return f"CLEARED {row.check} [{where}] started {row.started_at:%Y-%m-%d %H:%M}, cleared {cleared}"
    examples = ", ".join(row.example_response_ids[:3])
    return f"ALERT {row.severity.upper()} {row.check}: {row.message}. Examples: {examples}"
