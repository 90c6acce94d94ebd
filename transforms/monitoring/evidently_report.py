"""The Evidently side of drift detection: the long frames, the metrics with their tests, the snapshot's results.

One `Report` per window checks every slice that can be judged: each metric of each slice is a column
(`attribution_confidence|retriever_version=r9`), NaN where a row belongs to another slice, so one
report holds all of them. `snapshot_results` reads back the values and which tests passed.
"""

from __future__ import annotations

import math
import warnings
from datetime import datetime

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC
from transforms.monitoring.plans import DriftConfig, SlicePlan

__all__ = [
    "column_name",
    "frames_for_report",
    "judged_rate",
    "present",
    "report_metrics",
    "run_report",
    "series",
    "snapshot_results",
]


def column_name(metric: str, dimension: str, value: str) -> str:
    """The Evidently column of one metric of one slice: `confidence|all`, `confidence|tenant=acme`."""
    return f"{metric}|{ALL_TRAFFIC}" if dimension == ALL_TRAFFIC else f"{metric}|{dimension}={value}"


# Evidently column -> (frame, column) of a slice plan: what each test reads. The K-S tests read one
# value per response (a response's sentences are not independent draws, so a sentence-level K-S
# test would call ordinary traffic drifted); the mean-drop test reads every sentence (spec 000's
# "average confidence"). `attribution_confidence` is the sentences' grounded probability: the metric keeps
# the name Evidently workspaces and the alerts have always shown.
_SERIES = {
    "attribution_confidence": ("sentences", "grounded_probability"),
    "response_confidence": ("responses", "mean_attribution_confidence"),
    "faithfulness": ("responses", "faithfulness"),
}


def series(plan: SlicePlan, metric: str, reference: bool = False) -> pd.Series:
    level, column = _SERIES[metric]
    frame = getattr(plan, f"reference_{level}" if reference else level)
    return frame[column].dropna().astype(float)


def frames_for_report(plans: list[SlicePlan], config: DriftConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Long current and reference frames: one column per metric and slice, NaN where a row is not in it."""
    current, reference = [], []
    for plan in plans:
        if plan.status is not None:
            continue
        d, v = plan.key
        for metric in _SERIES:
            current.append(pd.DataFrame({column_name(metric, d, v): series(plan, metric).to_numpy()}))
            reference.append(pd.DataFrame({column_name(metric, d, v): series(plan, metric, True).to_numpy()}))
        for metric in ("attribution_coverage_rate", "low_confidence_claim_rate"):
            if judged_rate(plan, metric, config):
                current.append(pd.DataFrame({column_name(metric, d, v): [float(plan.metrics[metric])]}))
    if not current:
        return pd.DataFrame(), pd.DataFrame()
    cur, ref = pd.concat(current, ignore_index=True), pd.concat(reference, ignore_index=True)
    return cur, ref.reindex(columns=cur.columns)


def judged_rate(plan: SlicePlan, metric: str, config: DriftConfig) -> bool:
    """Whether a claim rate of the slice is present and rests on enough claims to be judged."""
    claims = plan.metrics.get("claims")
    return present(plan.metrics.get(metric)) and present(claims) and claims >= config.min_claims


def present(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def report_metrics(plans: list[SlicePlan], config: DriftConfig, p_thresholds: dict[tuple[str, str], float]) -> list:
    from evidently.metrics import MeanValue, ValueDrift
    from evidently.tests import Reference, gte, lte

    metrics = []
    for plan in plans:
        if plan.status is not None:
            continue
        d, v = plan.key
        for metric in ("response_confidence", "faithfulness"):
            metrics.append(ValueDrift(column=column_name(metric, d, v), method="ks", threshold=p_thresholds[plan.key]))
        metrics.append(
            MeanValue(
                column=column_name("attribution_confidence", d, v),
                tests=[gte(Reference(relative=config.max_confidence_drop))],
            )
        )
        if judged_rate(plan, "attribution_coverage_rate", config):
            metrics.append(
                MeanValue(column=column_name("attribution_coverage_rate", d, v), tests=[gte(config.min_coverage)])
            )
        if judged_rate(plan, "low_confidence_claim_rate", config):
            metrics.append(
                MeanValue(column=column_name("low_confidence_claim_rate", d, v), tests=[lte(config.max_low_confidence)])
            )
    return metrics


def run_report(
    current: pd.DataFrame, reference: pd.DataFrame, metrics: list, *, timestamp: datetime, tags=None, metadata=None
):
    """Run an Evidently report with tests over two frames of numeric columns; returns the snapshot."""
    from evidently import DataDefinition, Dataset, Report

    definition = DataDefinition(numerical_columns=list(current.columns))
    with warnings.catch_warnings():
        # All-NaN reference columns (rates that only the current window has) make numpy warn; they are expected.
        warnings.simplefilter("ignore", RuntimeWarning)
        return Report(metrics, include_tests=True).run(
            current_data=Dataset.from_pandas(current, data_definition=definition),
            reference_data=None if reference is None else Dataset.from_pandas(reference, data_definition=definition),
            timestamp=timestamp,
            tags=tags or [],
            metadata=metadata or {},
        )


def snapshot_results(snapshot) -> tuple[dict, dict]:
    """(metric type, column) -> value, and (metric type, column) -> test passed, from an Evidently snapshot."""
    data = snapshot.dict()
    values = {(m["config"]["type"].rsplit(":", 1)[-1], m["config"].get("column")): m["value"] for m in data["metrics"]}
    passed = {}
    for test in data["tests"]:
        params = test["metric_config"]["params"]
        status = getattr(test["status"], "value", test["status"])
        passed[(params["type"].rsplit(":", 1)[-1], params.get("column"))] = status == "SUCCESS"
    return values, passed
