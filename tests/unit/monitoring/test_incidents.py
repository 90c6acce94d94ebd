"""Incidents: the alerts of one retriever regression become one incident naming the new retriever."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.drift import run_drift
from pipelines.traffic.scenarios import NEW_RETRIEVER, ScenarioSpec, audit_into_lake, scenario_responses
from transforms.monitoring.drift import DriftConfig


@pytest.mark.parametrize("seed", [3, 7, 11, 23])
def test_a_retriever_regression_is_one_incident_naming_the_new_retriever(tmp_path, seed):
    spec = ScenarioSpec("retriever-regression", windows=24, per_window=40, change_at=0.5, seed=seed)
    lake = str(tmp_path / "lake")
    audit_into_lake(list(scenario_responses(spec)), lake)
    outcome = run_drift(lake, DriftConfig(), workspace=False, out=lambda _: None)
    assert len(outcome.fired) > 5  # many alerts: retriever, models, tenants, all traffic
    (incident,) = outcome.open_incidents
    assert (incident.cause_dimension, incident.cause_value) == ("retriever_version", NEW_RETRIEVER)
    assert incident.cause == "retrieval"
    assert incident.ungrounded_sentences > 0 and incident.example_response_ids
    assert set(incident.alert_ids) >= {a.alert_id for a in outcome.firing}
    rows = duckdb.sql(
        f"SELECT cause_value, status FROM read_parquet('{lake}/incidents/**/*.parquet', hive_partitioning=true)"
    ).fetchall()
    assert rows == [(NEW_RETRIEVER, "firing")]
