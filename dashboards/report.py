"""A standalone HTML report of the lake: incidents, alerts, the review queue, charts, slices, and an Evidently report.

The page answers an operator's first questions first: what is broken (open incidents, named by the slice
that explains them, then their raw alerts), what waits for a human (the review queue by tenant and reason),
and where (the worst slices by mean attribution confidence); the charts and the Evidently report follow.

    html = build_report(lake_dir, start=None, end=None)   # the period [start, end), default all of it

Charts are matplotlib PNGs inlined as data URIs; the Evidently report (the period against the
equally long period before it, or against its own first third when nothing precedes it) is
embedded as an `<iframe srcdoc>` and carries its own scripts, so the file opens offline.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from datetime import UTC, datetime

import pandas as pd

from dashboards.report_sections import (
    INCIDENT_COLUMNS,
    SLICE_COLUMNS,
    incidents_frame,
    review_frame,
    worst_slices,
)
from schemas.monitoring import ALL_TRAFFIC
from transforms.monitoring.evidently_report import run_report
from transforms.monitoring.incident_messages import slice_label
from transforms.monitoring.lake_frames import load_lake_frames

__all__ = ["REPORT_STEPS", "build_report", "evidently_period_report"]

_CHECK_COLUMNS = [
    "slice_dimension",
    "slice_value",
    "check",
    "status",
    "window_start",
    "reference_value",
    "threshold",
    "p_value",
]

_CSS = """
body{font-family:DejaVu Sans,Arial,sans-serif;margin:24px;color:#1d2433;max-width:1200px}
h1{margin-bottom:4px} .meta{color:#5b6475} .cards{display:flex;gap:16px;margin:16px 0}
.card{border:1px solid #d8dde6;border-radius:8px;padding:12px 18px;min-width:150px}
.card b{display:block;font-size:28px} table{border-collapse:collapse;margin:8px 0 24px;font-size:13px}
th,td{border:1px solid #d8dde6;padding:4px 8px;text-align:left} th{background:#f2f4f8}
.firing{color:#b3261e;font-weight:bold} img{max-width:100%} iframe{width:100%;height:900px;border:1px solid #d8dde6}
"""


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="chart" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


_KS_METRICS = {"confidence_drift": "response confidence", "faithfulness_drift": "faithfulness"}


def _charts(metrics: pd.DataFrame, checks: pd.DataFrame, causes: list[tuple[str, str]] | None = None) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts = []
    overall = metrics[metrics["slice_dimension"] == ALL_TRAFFIC].sort_values("window_start")
    if overall.empty:
        return charts
    fig, ax = plt.subplots(figsize=(11, 3.2))
    ax.plot(
        overall["window_start"],
        overall["mean_attribution_confidence"],
        marker="o",
        ms=3,
        label="mean attribution confidence",
    )
    drops = checks[(checks["slice_dimension"] == ALL_TRAFFIC) & (checks["check"] == "mean_confidence_drop")]
    drops = drops.dropna(subset=["reference_value"]).sort_values("window_start")
    if not drops.empty:
        ax.plot(drops["window_start"], drops["reference_value"], label="reference mean")
        ax.fill_between(
            drops["window_start"], drops["threshold"], drops["reference_value"], alpha=0.15, label="tolerated band"
        )
    alerts = checks[(checks["slice_dimension"] == ALL_TRAFFIC) & (checks["status"] == "alert")]
    if not alerts.empty:
        flagged = overall[overall["window_start"].isin(alerts["window_start"])]
        ax.scatter(
            flagged["window_start"], flagged["mean_attribution_confidence"], color="#b3261e", zorder=3, label="alert"
        )
    ax.set_title("All traffic: mean attribution confidence per window")
    ax.legend(loc="lower left", fontsize=8)
    charts.append(_png(fig))

    fig, ax = plt.subplots(figsize=(11, 3.2))
    for dimension_value, group in metrics[metrics["slice_dimension"] == "retriever_version"].groupby("slice_value"):
        group = group.sort_values("window_start")
        ax.plot(group["window_start"], group["mean_attribution_confidence"], marker="o", ms=3, label=dimension_value)
    ax.set_title("Mean attribution confidence by retriever_version")
    ax.legend(fontsize=8)
    charts.append(_png(fig))

    # All traffic, and the cause slice of each incident: every line's legend names its slice and its metric.
    shown = [(ALL_TRAFFIC, ALL_TRAFFIC), *[c for c in causes or [] if c[0] != ALL_TRAFFIC]]
    ks = checks[checks["check"].isin(list(_KS_METRICS))].dropna(subset=["p_value"])
    ks = ks[[(d, v) in shown for d, v in zip(ks["slice_dimension"], ks["slice_value"], strict=True)]]
    if not ks.empty:
        fig, ax = plt.subplots(figsize=(11, 3.2))
        for (dimension, value, check), group in ks.groupby(["slice_dimension", "slice_value", "check"]):
            group = group.sort_values("window_start")
            label = f"{slice_label(dimension, value)}: {_KS_METRICS[check]}"
            style = "-" if check == "confidence_drift" else ":"
            ax.semilogy(group["window_start"], group["p_value"].clip(lower=1e-12), style, marker="o", ms=3, label=label)
        # The threshold is family-wise (the window's p-value over its judged slices): its highest value is the bar.
        ax.axhline(float(ks["threshold"].max()), color="#b3261e", ls="--", label="alert threshold (at most)")
        ax.set_title("K-S drift p-values by slice (log scale; lower is more drifted)")
        ax.legend(fontsize=8, loc="lower left")
        charts.append(_png(fig))

    fig, ax = plt.subplots(figsize=(11, 3.0))
    shares = ["fully_grounded_share", "partially_grounded_share", "ungrounded_share", "contradicted_share"]
    bottom = None
    for share in shares:
        values = overall[share].fillna(0.0).to_numpy()
        ax.bar(overall["window_start"], values, width=0.0005, bottom=bottom, label=share.removesuffix("_share"))
        bottom = values if bottom is None else bottom + values
    ax.set_title("Verdict shares per window")
    ax.legend(fontsize=8, ncol=4)
    charts.append(_png(fig))

    rates = overall.dropna(subset=["attribution_coverage_rate"])
    if not rates.empty:
        fig, ax = plt.subplots(figsize=(11, 3.0))
        ax.plot(
            rates["window_start"], rates["attribution_coverage_rate"], marker="o", ms=3, label="attribution coverage"
        )
        ax.plot(
            rates["window_start"], rates["low_confidence_claim_rate"], marker="o", ms=3, label="low-confidence claims"
        )
        ax.axhline(0.95, color="#1f6feb", ls="--", lw=1)
        ax.axhline(0.10, color="#b3261e", ls="--", lw=1)
        ax.set_title("Claim rates (alerts: coverage < 95%, low confidence > 10%)")
        ax.legend(fontsize=8)
        charts.append(_png(fig))
    return charts


def _table(frame: pd.DataFrame, columns: list[str]) -> str:
    if frame.empty:
        return "<p>None.</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    rows = []
    for record in frame[columns].to_dict("records"):
        cells = []
        for column in columns:
            value = record[column]
            if value is None or (not isinstance(value, list | tuple) and pd.isna(value)):
                text = ""
            elif isinstance(value, datetime):  # pandas' Timestamp too: minutes are what an operator reads
                text = f"{value:%Y-%m-%d %H:%M}"
            else:
                text = f"{value:.3g}" if isinstance(value, float) else str(value)
            css = ' class="firing"' if column == "status" and value == "firing" else ""
            cells.append(f"<td{css}>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def evidently_period_report(
    sentences: pd.DataFrame, responses: pd.DataFrame, split: datetime, start, end
) -> str | None:
    """The Evidently report of [split, end) against [start, split), as standalone HTML (None when either is empty)."""
    from evidently.metrics import MeanValue, ValueDrift
    from evidently.tests import Reference, gte

    def frame(lo, hi):
        s = sentences[(sentences["window_start"] >= lo) & (sentences["window_start"] < hi)]
        r = responses[(responses["window_start"] >= lo) & (responses["window_start"] < hi)]
        return pd.concat(
            [
                pd.DataFrame({"attribution_confidence": s["grounded_probability"].to_numpy(float)}),
                pd.DataFrame({"response_confidence": r["mean_attribution_confidence"].dropna().to_numpy(float)}),
                pd.DataFrame({"faithfulness": r["faithfulness"].dropna().to_numpy(float)}),  # none: no claim
            ],
            ignore_index=True,
        )

    reference, current = frame(start, split), frame(split, end)
    if reference.empty or current.empty:
        return None
    metrics = [
        ValueDrift(column="response_confidence", method="ks", threshold=0.001),
        ValueDrift(column="faithfulness", method="ks", threshold=0.001),
        MeanValue(column="attribution_confidence", tests=[gte(Reference(relative=0.10))]),
    ]
    snapshot = run_report(current, reference, metrics, timestamp=split.replace(tzinfo=None))
    return snapshot.get_html_str(as_iframe=False)


def _overall_confidence(overall: pd.DataFrame) -> str:
    rows = overall.dropna(subset=["mean_attribution_confidence"])
    if not len(rows) or not rows["responses"].sum():
        return "n/a"
    return f"{(rows['mean_attribution_confidence'] * rows['responses']).sum() / rows['responses'].sum():.3f}"


REPORT_STEPS = 3
"""The steps `build_report` calls `advance` after: the lake read, the Evidently section, the charts."""


def build_report(
    lake_dir: str,
    start: datetime | None = None,
    end: datetime | None = None,
    *,
    advance: Callable[[], None] = lambda: None,
) -> str:
    """The report of the period [start, end) of the lake (all of it by default) as one HTML page; `advance` is
    called after each of its `REPORT_STEPS` slow steps, for a progress bar."""
    frames = load_lake_frames(lake_dir)
    advance()
    metrics, checks = frames.window_metrics, frames.drift_checks
    if metrics.empty:
        raise ValueError(f"the lake {lake_dir!r} has no window_metrics yet: audit some traffic first")
    first, last = metrics["window_start"].min(), metrics["window_end"].max()
    start = pd.Timestamp(start) if start is not None else first
    end = pd.Timestamp(end) if end is not None else last
    metrics = metrics[(metrics["window_start"] >= start) & (metrics["window_start"] < end)]
    if len(checks):
        checks = checks[(checks["window_start"] >= start) & (checks["window_start"] < end)]
    alerts = frames.alerts
    if len(alerts):
        alerts = alerts[(alerts["started_at"] < end) & (alerts["cleared_at"].isna() | (alerts["cleared_at"] >= start))]
    overall = metrics[metrics["slice_dimension"] == ALL_TRAFFIC]
    incidents = incidents_frame(frames.incidents, start, end)
    causes = []
    if len(frames.incidents):
        causes = sorted(set(zip(frames.incidents["cause_dimension"], frames.incidents["cause_value"], strict=True)))
    responses = frames.responses
    responses = responses[(responses["window_start"] >= start) & (responses["window_start"] < end)]
    in_review = int(responses["needs_review"].fillna(False).sum()) if "needs_review" in responses else 0

    # The Evidently section: this period against the one just before it (or its own first third).
    length = end - start
    if start - length >= first:
        split, reference_start, label = start, start - length, "the equally long period before it"
    else:
        split, reference_start, label = start + length / 3, start, "its own first third"
    evidently_html = evidently_period_report(
        frames.sentences, frames.responses, split.to_pydatetime(), reference_start, end
    )
    advance()

    by_version = (
        metrics[metrics["slice_dimension"] == "retriever_version"]
        .groupby("slice_value")
        .agg(
            windows=("window_start", "nunique"),
            responses=("responses", "sum"),
            mean_attribution_confidence=("mean_attribution_confidence", "mean"),
            mean_faithfulness=("mean_faithfulness", "mean"),
        )
    )
    by_version = by_version.reset_index().rename(columns={"slice_value": "retriever_version"})
    cards = [
        ("responses audited", int(overall["responses"].sum())),
        ("windows", int(overall["window_start"].nunique())),
        ("in review", f"{in_review} ({in_review / len(responses):.0%})" if len(responses) else "0"),
        ("open incidents", int((incidents["status"] == "firing").sum())),
        ("alerts firing", int((alerts["status"] == "firing").sum()) if len(alerts) else 0),
    ]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>groundwatch report</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>groundwatch report</h1>",
        f"<p class='meta'>Lake {html.escape(lake_dir)} &middot; "
        f"period {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
        f" &middot; generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC</p>",
        "<div class='cards'>"
        + "".join(f"<div class='card'><b>{v}</b>{html.escape(k)}</div>" for k, v in cards)
        + "</div>",
        "<h2>Open incidents</h2>",
        "<p class='meta'>Alerts of one cause, grouped under the slice that explains them; the alerts follow.</p>",
        _table(incidents, INCIDENT_COLUMNS),
        "<h2>Alerts</h2>",
        _table(
            # Firing first, then by start; within a start, the slice's dimension groups what fired together.
            alerts.sort_values(
                ["status", "started_at", "slice_dimension", "slice_value", "check"],
                key=lambda c: c != "firing" if c.name == "status" else c,
            )
            if len(alerts)
            else alerts,
            ["status", "severity", "check", "slice_dimension", "slice_value", "started_at", "cleared_at", "message"],
        ),
        "<h2>Review queue by tenant and reason</h2>",
        "<p class='meta'>Responses routed to a human, per tenant and kind of reason (a response counts once per "
        "kind); the share is of the tenant's responses in the period.</p>",
        _table(review_frame(responses), ["tenant", "reason", "responses_in_review", "share_of_tenant"]),
        "<h2>Worst slices by confidence</h2>",
        f"<p class='meta'>Tenants, retriever versions and generator models with at least 20 responses, lowest mean "
        f"attribution confidence first (all traffic: {_overall_confidence(overall)}).</p>",
        _table(worst_slices(metrics), SLICE_COLUMNS),
        "<h2>Over time</h2>",
        *_charts(metrics, checks if len(checks) else pd.DataFrame(columns=_CHECK_COLUMNS), causes),
        "<h2>Retriever versions</h2>",
        _table(by_version.sort_values("mean_attribution_confidence"), list(by_version.columns)),
        f"<h2>Evidently drift report</h2><p class='meta'>The period from {split:%Y-%m-%d %H:%M} against {label}.</p>",
        f"<iframe title='Evidently report' srcdoc=\"{html.escape(evidently_html, quote=True)}\"></iframe>"
        if evidently_html
        else "<p>Not enough data for an Evidently comparison.</p>",
        "</body></html>",
    ]
    advance()
    return "\n".join(parts)
