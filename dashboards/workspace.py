"""The Evidently workspace of a lake: a `groundwatch` project, its dashboard, one snapshot per window.

`groundwatch drift` adds a snapshot for every window it checks (`GroundwatchWorkspace.add_window`);
`groundwatch ui` serves `<lake>/evidently`. The dashboard answers an operator's first questions first:
open incidents and firing alerts, the review queue's share per tenant and its reasons, and the worst
slices (mean attribution confidence per retriever_version and generator_model: the lowest line is the
worst slice; a panel is rebuilt when a new value appears). Then, for all traffic: responses
audited, mean attribution confidence with its reference and alert limit (the reference band), the K-S
drift p-values with their threshold, attribution coverage and low-confidence claim rates with the
spec's limits, verdict shares, alerts fired and open. Every legend names its slice.

Window-level figures that are not distributions (rates, shares, alert counts, the reference mean)
enter the snapshot as one-value columns measured with `MeanValue`, so that the dashboard plots
them from the snapshots like any other metric.
"""

from __future__ import annotations

import os

import pandas as pd

from dashboards.review_reasons import REASON_KINDS, review_queue
from schemas.monitoring import ALL_TRAFFIC
from transforms.io.lake import filesystem as lakefs
from transforms.monitoring.drift import DriftConfig, SlicePlan, WindowEvaluation
from transforms.monitoring.evidently_report import column_name, run_report

__all__ = ["PROJECT_NAME", "GroundwatchWorkspace", "dashboard_panels", "workspace_path"]

PROJECT_NAME = "groundwatch"
_SHARES = ("fully_grounded_share", "partially_grounded_share", "ungrounded_share", "contradicted_share")
_RATES = ("attribution_coverage_rate", "low_confidence_claim_rate", "citation_failure_rate")
_SLICE_DIMENSIONS = ("retriever_version", "generator_model", "tenant")
"""Dimensions whose values the dashboard's panels list (a panel is rebuilt when a new value appears)."""
_CONFIDENCE_PANELS = ("retriever_version", "generator_model")
"""Dimensions with a confidence panel, one line per value: where the worst slice shows. Not tenants: with a
few responses each per window their means swing too much to read; the report ranks them over its period."""
_REVIEW_TITLE = "Review queue by tenant"


def _review_column(tenant: str) -> str:
    return f"review_count|tenant={tenant}"


def _reason_column(kind: str) -> str:
    return f"review_reason|{kind}"


def workspace_path(lake_dir: str) -> str:
    """Where a lake's Evidently workspace lives: `<lake>/evidently`, a folder, or a prefix in object storage
    (worked on as a local copy: `dashboards.workspace_sync`)."""
    if lakefs.is_remote(lake_dir):
        return lakefs.join(lakefs.normalize(lake_dir), "evidently")
    return os.path.join(os.path.abspath(lake_dir), "evidently")


def _mean(column: str, legend: str):
    from evidently.sdk.models import PanelMetric

    return PanelMetric(legend=legend, metric="MeanValue", metric_labels={"column": column})


def dashboard_panels(slices: dict[str, list[str]]) -> list:
    """The dashboard's panels, in display order; `slices` gives the values of each slice dimension to plot."""
    from evidently.sdk.models import PanelMetric
    from evidently.sdk.panels import bar_plot_panel, counter_panel, line_plot_panel

    drift = [
        PanelMetric(legend=legend, metric="ValueDrift", metric_labels={"column": column_name(metric, ALL_TRAFFIC, "")})
        for metric, legend in (
            ("response_confidence", "all traffic: attribution confidence"),
            ("faithfulness", "all traffic: faithfulness"),
        )
    ]
    by_slice = [
        line_plot_panel(
            f"Mean attribution confidence by {dimension}",
            [_mean(column_name("attribution_confidence", dimension, v), f"{dimension}={v}") for v in sorted(values)],
            description="The lowest line is the worst slice of that dimension.",
            size="half" if dimension != "retriever_version" else "full",
        )
        for dimension in _CONFIDENCE_PANELS
        if (values := slices.get(dimension, [])) or dimension == "retriever_version"
    ]
    return [
        counter_panel("Open incidents", [_mean("open_incidents", "open incidents")], size="half"),
        counter_panel("Alerts firing", [_mean("open_alerts", "open alerts")], size="half"),
        bar_plot_panel(
            _REVIEW_TITLE,
            [_mean(_review_column(t), f"tenant={t}") for t in sorted(slices.get("tenant", []))],
            stacked=True,
            # Counts, not shares: a tenant with two responses in a window would swing between 0% and 100%.
            description="Responses routed to human review in the window, per tenant.",
            size="half",
        ),
        bar_plot_panel(
            "Review queue by reason",
            [_mean(_reason_column(kind), kind) for kind in REASON_KINDS],
            stacked=True,
            description="Responses routed to review in the window, per kind of reason (once per kind).",
            size="half",
        ),
        *by_slice,
        counter_panel("Responses audited (last window)", [_mean("responses", "responses")], size="half"),
        line_plot_panel(
            "Mean attribution confidence and its reference band",
            [
                _mean(column_name("attribution_confidence", ALL_TRAFFIC, ""), "this window"),
                _mean("reference_mean", "reference mean"),
                _mean("alert_limit", "alert limit (reference - 10%)"),
            ],
            description="All traffic; confidence that a sentence is supported by its evidence.",
        ),
        line_plot_panel(
            "Drift test p-value (K-S)",
            [*drift, _mean("drift_threshold", "alert threshold")],
            description="Below the threshold, with a lower mean: a drift alert.",
            size="half",
        ),
        line_plot_panel(
            "Attribution coverage and low-confidence claim rates",
            [
                _mean("attribution_coverage_rate", "coverage"),
                _mean("low_confidence_claim_rate", "low-confidence claims"),
                _mean("citation_failure_rate", "citation failures"),
            ],
            description="Alerts: coverage under 95%, low-confidence claims over 10%.",
            size="half",
        ),
        bar_plot_panel(
            "Verdict shares",
            [_mean(share, share.removesuffix("_share").replace("_", " ")) for share in _SHARES],
            stacked=True,
            size="half",
        ),
        bar_plot_panel("Alerts", [_mean("alerts_fired", "fired"), _mean("open_alerts", "firing")], size="half"),
    ]


class GroundwatchWorkspace:
    """The lake's Evidently workspace and its groundwatch project."""

    def __init__(self, workspace, project_id, slices: dict[str, set[str]]):
        self._ws = workspace
        self.project_id = project_id
        self._slices = {d: set(slices.get(d, ())) for d in _SLICE_DIMENSIONS}

    @classmethod
    def open(cls, lake_dir: str, *, path: str | None = None, project_name: str = PROJECT_NAME) -> GroundwatchWorkspace:
        """Open (or create) the workspace (`<lake>/evidently` unless `path`), the project and its dashboard."""
        from evidently.ui.workspace import Workspace

        ws = Workspace.create(path or workspace_path(lake_dir))
        found = ws.search_project(project_name)
        if found:
            project = found[0]
        else:
            project = ws.create_project(project_name, description="Are RAG answers supported by their evidence?")
            project.save()
        slices: dict[str, set[str]] = {}
        for panel in ws.get_dashboard(project.id).panels:
            for dimension in _SLICE_DIMENSIONS:
                if panel.title.endswith(f"by {dimension}"):
                    slices[dimension] = {v.legend.split("=", 1)[-1] for v in panel.values if v.legend}
        board = cls(ws, project.id, slices)
        if not found:
            board._save_dashboard()
        return board

    def _save_dashboard(self) -> None:
        from evidently.sdk.models import DashboardModel, DashboardTabModel

        panels = dashboard_panels({d: sorted(v) for d, v in self._slices.items()})
        tab = DashboardTabModel(title="Overview", panels=[p.id for p in panels])
        self._ws.save_dashboard(self.project_id, DashboardModel(tabs=[tab], panels=panels))

    def add_window(
        self,
        frames,
        evaluation: WindowEvaluation,
        open_alerts: list,
        changes: list,
        config: DriftConfig,
        open_incidents: int = 0,
    ):
        """Add the snapshot of one checked window (all traffic, per-slice means, review queue, alerts, incidents)."""
        from evidently.metrics import MeanValue, ValueDrift

        plan = evaluation.plans.get((ALL_TRAFFIC, ALL_TRAFFIC))
        if plan is None:
            return None
        seen = {d: {v for dd, v in evaluation.plans if dd == d} for d in _SLICE_DIMENSIONS}
        if any(not seen[d] <= self._slices[d] for d in _SLICE_DIMENSIONS):
            for d in _SLICE_DIMENSIONS:
                self._slices[d] |= seen[d]
            self._save_dashboard()
        current = _snapshot_columns(evaluation, plan, open_alerts, changes, config)
        extra = {"open_incidents": float(open_incidents), **_review_columns(evaluation, frames)}
        current = pd.concat([current, pd.DataFrame({k: [v] for k, v in extra.items()})], ignore_index=True)
        metrics = [MeanValue(column=c, tests=[]) for c in current.columns if not c.startswith(_KS_PREFIXES)]
        reference = pd.DataFrame(columns=current.columns, dtype=float)
        if plan.reference_responses is not None and plan.status is None:
            ks = {
                column_name("response_confidence", ALL_TRAFFIC, ""): plan.reference_responses[
                    "mean_attribution_confidence"
                ],
                column_name("faithfulness", ALL_TRAFFIC, ""): plan.reference_responses["faithfulness"],
            }
            reference = pd.concat([pd.DataFrame({c: s.dropna().to_numpy(float)}) for c, s in ks.items()])
            reference = reference.reindex(columns=current.columns)
            # One threshold for every window: a threshold per window (the family-wise one varies with the number
            # of judged slices) makes a metric per window, which the panel drew as a series each. The window's
            # own threshold is the `drift_threshold` line.
            metrics += [ValueDrift(column=c, method="ks", threshold=config.drift_p_value) for c in ks]
        else:
            current = current.drop(columns=[c for c in current.columns if c.startswith(_KS_PREFIXES)])
            reference = None
        snapshot = run_report(
            current,
            reference,
            metrics,
            timestamp=evaluation.window_start.replace(tzinfo=None),
            tags=["window"],
            metadata={
                "window_start": evaluation.window_start.isoformat(),
                "window_end": evaluation.window_end.isoformat(),
            },
        )
        self._ws.add_run(self.project_id, snapshot, include_data=False)
        return snapshot


_KS_PREFIXES = ("response_confidence|", "faithfulness|")


def _review_columns(evaluation, frames) -> dict[str, float]:
    """The window's responses in review per tenant (from its window metrics) and per reason kind."""
    columns = {}
    for (dimension, value), slice_plan in evaluation.plans.items():
        responses = slice_plan.metrics.get("responses")
        in_review = slice_plan.metrics.get("needs_review_responses")
        if dimension == "tenant" and responses and in_review is not None and not pd.isna(in_review):
            columns[_review_column(value)] = float(in_review)
    window = frames.responses_in(evaluation.window_start) if frames is not None else None
    if window is not None and len(window) and "review_reasons" in window:
        per_kind = review_queue(window).groupby("reason")["responses_in_review"].sum()
        columns.update({_reason_column(k): float(n) for k, n in per_kind.items() if n})
    return columns


def _snapshot_columns(evaluation, plan: SlicePlan, open_alerts, changes, config: DriftConfig) -> pd.DataFrame:
    parts = [
        pd.DataFrame({column_name("attribution_confidence", ALL_TRAFFIC, ""): plan.sentences["grounded_probability"]}),
        pd.DataFrame(
            {column_name("response_confidence", ALL_TRAFFIC, ""): plan.responses["mean_attribution_confidence"]}
        ),
        pd.DataFrame({column_name("faithfulness", ALL_TRAFFIC, ""): plan.responses["faithfulness"]}),
    ]
    for (dimension, value), slice_plan in evaluation.plans.items():
        if dimension in _CONFIDENCE_PANELS:
            column = column_name("attribution_confidence", dimension, value)
            parts.append(pd.DataFrame({column: slice_plan.sentences["grounded_probability"]}))
    constants = {
        "responses": float(len(plan.responses)),
        "open_alerts": float(len(open_alerts)),
        "alerts_fired": float(sum(1 for a in changes if a.status.value == "firing")),
        "drift_threshold": evaluation.p_threshold or config.drift_p_value,
    }
    if plan.reference_sentences is not None:
        reference_mean = float(plan.reference_sentences["grounded_probability"].mean())
        constants["reference_mean"] = reference_mean
        constants["alert_limit"] = reference_mean * (1 - config.max_confidence_drop)
    for name in (*_SHARES, *_RATES):
        value = plan.metrics.get(name)
        if value is not None and not pd.isna(value):
            constants[name] = float(value)
    parts.append(pd.DataFrame({k: [v] for k, v in constants.items()}))
    return pd.concat(parts, ignore_index=True).astype(float)
