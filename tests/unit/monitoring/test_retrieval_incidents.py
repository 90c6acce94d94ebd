"""A retriever regression and a generator regression, told apart: each incident names its own cause.

Scenario lakes (`tests.support.scenario_lakes`: generated traffic audited with the pipeline's plain functions,
then one `run_drift`), read back with DuckDB. Over these seeds, and the wider sweep of
`scripts/bench_drift_retrieval.py`, the off-topic retriever raises a retrieval incident, in the window it
starts, and the generator that ignores its passages a generation incident, with no alert on the passages'
relevance: what alerts is its evidence use.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import duckdb
import pytest

from pipelines.traffic.scenarios import NEW_GENERATOR, NEW_RETRIEVER, ScenarioSpec, change_time

pytestmark = pytest.mark.scenario  # scenario lakes: the integration tier (docs/development.md)

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
RETRIEVAL_ALERTS = ("context_relevance_drop", "empty_retrieval_rise")


def _spec(name: str, seed: int) -> ScenarioSpec:
    """11 windows of ordinary traffic, then the regression for 11 more."""
    return ScenarioSpec(name, windows=22, change_at=0.5, seed=seed, start=START)  # the scenarios' default shares


def _query(lake: str, sql: str):
    tables = {
        t: f"read_parquet('{os.path.join(lake, t, '**', '*.parquet')}', union_by_name = true)"
        for t in (
            "alerts",
            "incidents",
        )
    }
    return duckdb.connect().execute(sql.format(**tables)).fetchall()


def _incidents(lake: str):
    return _query(lake, "SELECT cause_dimension, cause_value, cause, retrieval_moved FROM {incidents}")


@pytest.mark.parametrize("seed", [3, 7])
def test_an_off_topic_retriever_is_a_retrieval_incident_from_its_first_window(scenario_lake, seed):
    built = scenario_lake(_spec("off-topic-retriever", seed))
    assert _incidents(built.lake) == [("retriever_version", NEW_RETRIEVER, "retrieval", True)]
    first = _query(
        built.lake,
        "SELECT min(window_start) FROM {alerts} WHERE slice_value = 'r9' AND \"check\" IN " + str(RETRIEVAL_ALERTS),
    )[0][0]
    assert first == change_time(built.spec)  # seen in the window it starts


@pytest.mark.parametrize("seed", [3, 7])
def test_a_generator_ignoring_good_passages_is_a_generation_incident(scenario_lake, seed):
    built = scenario_lake(_spec("generator-regression", seed))
    assert _incidents(built.lake) == [("generator_model", NEW_GENERATOR, "generation", False)]
    retrieval_alerts = _query(built.lake, 'SELECT count(*) FROM {alerts} WHERE "check" IN ' + str(RETRIEVAL_ALERTS))
    assert retrieval_alerts == [(0,)]  # retrieval held: nothing about the passages alerts ...
    unused = _query(built.lake, "SELECT DISTINCT slice_value FROM {alerts} WHERE \"check\" = 'evidence_use_drop'")
    assert (NEW_GENERATOR,) in unused  # ... but the new model's answers stopped drawing on them
