"""The Evidently workspace of a lake: a `groundwatch` project, its dashboard, one snapshot per window.

`groundwatch drift` adds a snapshot for every window it checks (`GroundwatchWorkspace.add_window`);
`groundwatch ui` serves `<lake>/evidently`. The dashboard shows, over time, for all traffic:
responses audited, mean attribution confidence with its reference and alert limit (the reference
band), the K-S drift p-values with their threshold, attribution coverage and low-confidence claim
rates with the spec's limits, verdict shares, alerts fired and open, and mean attribution
confidence per retriever_version (the panel is rebuilt when a new version appears).

Window-level figures that are not distributions (rates, shares, alert counts, the reference mean)
enter the snapshot as one-value columns measured with `MeanValue`, so that the dashboard plots
them from the snapshots like any other metric.
"""

from __future__ import annotations

import os

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC
from transforms.monitoring.drift import DriftConfig, SlicePlan, WindowEvaluation
from transforms.monitoring.evidently_report import column_name, run_report

__all__ = ["PROJECT_NAME", "GroundwatchWorkspace", "dashboard_panels", "workspace_path"]

PROJECT_NAME = "groundwatch"
_SHARES = ("fully_grounded_share", "partially_grounded_share", "ungrounded_share", "contradicted_share")
_RATES = ("attribution_coverage_rate", "low_confidence_claim_rate", "citation_failure_rate")


def workspace_path(lake_dir: str) -> str:
    """Where a lake's Evidently workspace lives."""
    return os.path.join(os.path.abspath(lake_dir), "evidently")


def _mean(column: str, legend: str):
    from evidently.sdk.models import PanelMetric

    return PanelMetric(legend=legend, metric="MeanValue", metric_labels={"column": column})


def dashboard_panels(retriever_versions: list[str]) -> list:
    """The dashboard's panels, in display order."""
    from evidently.sdk.models import PanelMetric
    from evidently.sdk.panels import bar_plot_panel, counter_panel, line_plot_panel

    drift = [
        PanelMetric(legend=legend, metric="ValueDrift", metric_labels={"column": column_name(metric, ALL_TRAFFIC, "")})
        for metric, legend in (("response_confidence", "attribution confidence"), ("faithfulness", "faithfulness"))
    ]
    return [
        counter_panel("Responses audited (last window)", [_mean("responses", "responses")], size="half"),
        counter_panel("Alerts firing", [_mean("open_alerts", "open alerts")], size="half"),
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
        line_plot_panel(
            "Mean attribution confidence by retriever_version",
            [
                _mean(column_name("attribution_confidence", "retriever_version", v), v)
                for v in sorted(retriever_versions)
            ],
        ),
    ]


class GroundwatchWorkspace:
    """The lake's Evidently workspace and its groundwatch project."""

    def __init__(self, workspace, project_id, retriever_versions: set[str]):
        self._ws = workspace
        self.project_id = project_id
        self._versions = set(retriever_versions)

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
        versions = set()
        for panel in ws.get_dashboard(project.id).panels:
            if panel.title.endswith("by retriever_version"):
                versions = {v.legend for v in panel.values if v.legend}
        board = cls(ws, project.id, versions)
        if not found:
            board._save_dashboard()
        return board

    def _save_dashboard(self) -> None:
        from evidently.sdk.models import DashboardModel, DashboardTabModel

        panels = dashboard_panels(sorted(self._versions))
        tab = DashboardTabModel(title="Overview", panels=[p.id for p in panels])
        self._ws.save_dashboard(self.project_id, DashboardModel(tabs=[tab], panels=panels))

    def add_window(self, frames, evaluation: WindowEvaluation, open_alerts: list, changes: list, config: DriftConfig):
        """Add the snapshot of one checked window (all traffic, per retriever_version means, alerts)."""
        from evidently.metrics import MeanValue, ValueDrift

        plan = evaluation.plans.get((ALL_TRAFFIC, ALL_TRAFFIC))
        if plan is None:
            return None
        versions = {v for d, v in evaluation.plans if d == "retriever_version"}
        if not versions <= self._versions:
            self._versions |= versions
            self._save_dashboard()
        current = _snapshot_columns(evaluation, plan, open_alerts, changes, config)
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
            metrics += [
                ValueDrift(column=c, method="ks", threshold=evaluation.p_threshold or config.drift_p_value) for c in ks
            ]
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


def _snapshot_columns(evaluation, plan: SlicePlan, open_alerts, changes, config: DriftConfig) -> pd.DataFrame:
    parts = [
        pd.DataFrame(
            {column_name("attribution_confidence", ALL_TRAFFIC, ""): plan.sentences["attribution_confidence"]}
        ),
        pd.DataFrame(
            {column_name("response_confidence", ALL_TRAFFIC, ""): plan.responses["mean_attribution_confidence"]}
        ),
        pd.DataFrame({column_name("faithfulness", ALL_TRAFFIC, ""): plan.responses["faithfulness"]}),
    ]
    for (dimension, value), slice_plan in evaluation.plans.items():
        if dimension == "retriever_version":
            column = column_name("attribution_confidence", dimension, value)
            parts.append(pd.DataFrame({column: slice_plan.sentences["attribution_confidence"]}))
    constants = {
        "responses": float(len(plan.responses)),
        "open_alerts": float(len(open_alerts)),
        "alerts_fired": float(sum(1 for a in changes if a.status.value == "firing")),
        "drift_threshold": evaluation.p_threshold or config.drift_p_value,
    }
    if plan.reference_sentences is not None:
        reference_mean = float(plan.reference_sentences["attribution_confidence"].mean())
        constants["reference_mean"] = reference_mean
        constants["alert_limit"] = reference_mean * (1 - config.max_confidence_drop)
    for name in (*_SHARES, *_RATES):
        value = plan.metrics.get(name)
        if value is not None and not pd.isna(value):
            constants[name] = float(value)
    parts.append(pd.DataFrame({k: [v] for k, v in constants.items()}))
    return pd.concat(parts, ignore_index=True).astype(float)
