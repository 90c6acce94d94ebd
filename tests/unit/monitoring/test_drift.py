"""Drift detection end to end: scenarios through the audit pipeline (or its plain functions), then `groundwatch drift`.

One scenario test runs the real Beam pipeline (`groundwatch audit`'s `run`); the tests of the alert logic
itself (episodes, clearing, too few responses, incremental runs) audit the scenario with the pipeline's plain
functions into the lake, which is the same lake, faster. Scenario lakes that a test only reads come from the
session's `scenario_lake` fixture (`tests.support.scenario_lakes`), built once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from datetime import timedelta

import duckdb
import pandas as pd
import pytest

from pipelines import drift as drift_command
from pipelines.runner.drift_run import run_drift, send_alerts_to_kafka
from pipelines.traffic.scenarios import (
    NEW_RETRIEVER,
    ScenarioSpec,
    audit_into_lake,
    change_time,
    recovery_time,
    scenario_responses,
)
from schemas import LoggedResponse
from schemas.monitoring import AlertStatus, CheckStatus
from tests.support.documented import groundwatch_bin
from tests.support.kafka_fixtures import consume_all
from tests.support.ports import free_port
from transforms.monitoring.drift import DRIFT_CHECKS, DriftConfig

pytestmark = pytest.mark.scenario  # scenario lakes: the integration tier (docs/development.md)

WINDOW = timedelta(seconds=60)


def _quiet(_line: str) -> None:
    pass


def _alerts_table(lake: str) -> list[dict]:
    con = duckdb.connect()
    frame = con.execute(
        "SELECT * FROM read_parquet(?, hive_partitioning = true)", [os.path.join(lake, "alerts", "**", "*.parquet")]
    ).df()
    return frame.to_dict("records")


def test_retriever_regression_through_the_pipeline_names_the_new_retriever(scenario_lake):
    spec = ScenarioSpec("retriever-regression", windows=22, per_window=50, change_at=0.6, seed=11)
    built = scenario_lake(spec, how="pipeline")
    lake, outcome = built.lake, built.outcome
    change = change_time(spec)

    assert not [a for a in outcome.fired if a.window_start < change], "alert before the regression started"
    named = [a for a in outcome.fired if (a.slice_dimension, a.slice_value) == ("retriever_version", NEW_RETRIEVER)]
    assert named, f"no alert named retriever_version={NEW_RETRIEVER}: {[a.message for a in outcome.fired]}"
    first = min(named, key=lambda a: a.window_start)
    assert first.window_start <= change + WINDOW, "detected later than the 2nd window after the change"

    # The alert says what moved, where, against what, by which test, and where to look.
    assert first.reference_value is not None and first.current_value < first.reference_value
    assert first.test and (first.p_value is not None or first.threshold is not None)
    assert first.reference_responses >= 20 and first.current_responses >= 20
    assert NEW_RETRIEVER in first.message and "all traffic" in first.reference
    assert first.status == AlertStatus.firing and first.cleared_at is None
    con = duckdb.connect()
    served_by = dict(
        con.execute(
            "SELECT response_id, retriever_version FROM read_parquet(?)",
            [os.path.join(lake, "responses", "**", "*.parquet")],
        ).fetchall()
    )
    assert first.example_response_ids and {served_by[r] for r in first.example_response_ids} == {NEW_RETRIEVER}
    # ... and the lake has it, once per episode.
    stored = [r for r in _alerts_table(lake) if r["alert_id"] == first.alert_id]
    assert len(stored) == 1 and stored[0]["slice_value"] == NEW_RETRIEVER


@pytest.fixture
def episode_lake(scenario_lake):
    """A regression that is rolled back: the lake after one drift run, and the run's outcome."""
    spec = ScenarioSpec("retriever-regression", windows=30, per_window=50, change_at=0.4, recover_at=0.7, seed=4)
    built = scenario_lake(spec)
    return built.lake, built.spec, built.outcome


def _checked_over_spans(outcome) -> set[tuple[str, str]]:
    """The slices too small for one window, checked over spans of windows (`span_start`)."""
    return {(c.slice_dimension, c.slice_value) for c in outcome.checks if c.span_start is not None}


def test_alerts_are_episodes_not_repeated_and_clear_after_recovery(episode_lake):
    lake, spec, outcome = episode_lake
    change, recovered = change_time(spec), recovery_time(spec)
    # Tenants (a few responses a window) are checked over spans: they alert later (in the window completing a
    # span) and clear slower (two passing spans), so the claims below are the window-checked slices'. A span
    # alert joins the retriever's incident and does not hold it open once the window alerts cleared.
    assert "tenant" in {d for d, _ in _checked_over_spans(outcome)}
    span_alerts = [a for a in outcome.fired if a.span_start is not None]
    assert span_alerts and all(a.window_start >= change for a in span_alerts)
    incidents = {i.incident_id: i for i in outcome.incident_changes}  # the last row of each
    assert [(i.cause_value, i.status) for i in incidents.values()] == [(NEW_RETRIEVER, AlertStatus.cleared)]
    (incident,) = incidents.values()
    assert {a.alert_id for a in span_alerts} <= set(incident.alert_ids)
    fired = [a for a in outcome.fired if a.span_start is None]
    assert fired and all(change <= a.window_start < recovered for a in fired)
    keys = [(a.check, a.slice_dimension, a.slice_value) for a in fired]
    regression_windows = (recovered - change) // WINDOW
    assert len(keys) < len(set(keys)) + regression_windows // 2, "alerts repeated while the condition persisted"
    cleared = [a for a in outcome.changes if a.status == AlertStatus.cleared and a.span_start is None]
    assert {a.alert_id for a in cleared} == {a.alert_id for a in fired}, "every alert clears once traffic recovers"
    for alert in cleared:
        assert alert.started_at < alert.cleared_at
    # Claim-rate alerts may flicker around their limit; the regression's own drift alerts last until it ends.
    r9_drift = [a for a in cleared if a.slice_value == NEW_RETRIEVER and a.check in DRIFT_CHECKS]
    assert r9_drift and all(a.cleared_at >= recovered for a in r9_drift)
    assert all(a.span_start is not None for a in outcome.firing)
    # One row per episode in the lake (the cleared row replaced the firing one).
    rows = _alerts_table(lake)
    assert len(rows) == len(outcome.fired)
    assert {r["status"] for r in rows if pd.isna(r["span_start"])} == {"cleared"}


def test_a_second_run_checks_nothing_twice_and_keeps_the_alerts(episode_lake, tmp_path):
    lake, _, first = episode_lake
    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    again = run_drift(copy, DriftConfig(), workspace=False, out=_quiet)
    assert again.windows == [] and again.changes == []
    assert len(_alerts_table(copy)) == len(first.fired)


def test_runs_one_window_at_a_time_clear_alerts_as_one_run_over_all_of_them(tmp_path):
    """The monitor's drift stage checks each window as it closes, one run each; alerts must still clear."""
    spec = ScenarioSpec("retriever-regression", windows=14, per_window=40, change_at=0.4, recover_at=0.7, seed=4)
    messages = list(scenario_responses(spec))
    whole, stepwise = str(tmp_path / "whole"), str(tmp_path / "stepwise")
    audit_into_lake(messages, whole)
    at_once = run_drift(whole, DriftConfig(), workspace=False, out=_quiet)
    assert at_once.fired and not at_once.firing  # the regression alerted and was rolled back: all cleared
    window = spec.window_seconds
    in_windows: dict[int, list[dict]] = {}
    for message in messages:
        epoch = LoggedResponse.model_validate(message).timestamp.timestamp()
        in_windows.setdefault(int(epoch) // window, []).append(message)
    for _, arrived in sorted(in_windows.items()):
        audit_into_lake(arrived, stepwise)
        last = run_drift(stepwise, DriftConfig(), workspace=False, out=_quiet)
        assert len(last.windows) == 1
    assert not last.firing
    episodes = "alert_id, status, started_at, cleared_at, cleared_window_start, message"
    incidents = "incident_id, status, started_at, alert_ids, message"
    # The checks' floats may differ in the last digit (the sums' order); their outcomes may not.
    checks = 'window_start, slice_dimension, slice_value, "check", status, current_responses, reference'
    for table, columns in (("alerts", episodes), ("incidents", incidents), ("drift_checks", checks)):
        query = f"SELECT {columns} FROM read_parquet(?, hive_partitioning = true) ORDER BY ALL"
        rows = [duckdb.connect().execute(query, [os.path.join(lake, table, "**", "*.parquet")]).fetchall()
                for lake in (whole, stepwise)]  # fmt: skip
        assert rows[0] and rows[0] == rows[1], table


GROWING = DriftConfig(min_responses=20)  # spans of at most a week, the default


def test_windows_with_too_few_responses_are_reported_as_such(tmp_path):
    lake = str(tmp_path / "lake")
    spec = ScenarioSpec("retriever-regression", windows=12, per_window=6, change_at=0.5, seed=3)
    audit_into_lake(list(scenario_responses(spec)), lake)
    # With growing off (0), every window is too small; with it on (the default), its windows pool into spans.
    alone = run_drift(lake, DriftConfig(min_responses=20, max_span_hours=0), workspace=False, out=_quiet)
    assert alone.fired == []
    assert {c.status for c in alone.checks} == {CheckStatus.insufficient_data}
    assert all(c.current_responses < 20 for c in alone.checks)
    grown = run_drift(lake, GROWING, workspace=False, out=_quiet, recompute=True)
    spans = [c for c in grown.checks if c.span_start is not None and c.slice_dimension == "all"]
    assert spans and all(c.current_responses >= 20 and c.span_start < c.window_start for c in spans)


def test_fixed_reference_period_and_fail_on_alert_exit_code(tmp_path, capsys):
    lake = str(tmp_path / "lake")
    spec = ScenarioSpec("retriever-regression", windows=16, per_window=50, change_at=0.6, seed=8)
    audit_into_lake(list(scenario_responses(spec)), lake)
    start = spec.start.strftime("%Y-%m-%dT%H:%MZ")
    end = (spec.start + 6 * WINDOW).strftime("%Y-%m-%dT%H:%MZ")
    parser = argparse.ArgumentParser()
    drift_command.add_arguments(parser)
    args = parser.parse_args(
        [
            "--lake",
            lake,
            "--reference-from",
            start,
            "--reference-to",
            end,
            "--no-workspace",
            "--fail-on-alert",
            "--json",
        ]
    )
    args.kafka_bootstrap = None
    assert drift_command.main(args) == 1
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert printed and all(a["reference"].startswith("fixed period") for a in printed)
    assert any(a["slice_value"] == NEW_RETRIEVER for a in printed)
    # Still firing on the next run: still a failure, and nothing is raised twice.
    assert drift_command.main(args) == 1
    assert len(_alerts_table(lake)) == len({a["alert_id"] for a in printed})
    args.lake = str(tmp_path / "missing")
    assert drift_command.main(args) == 2


@pytest.mark.kafka
def test_alerts_go_to_the_kafka_alerts_topic(episode_lake):
    bootstrap = os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP")
    if not bootstrap:
        pytest.skip("GROUNDWATCH_KAFKA_BOOTSTRAP is not set (scripts/test.sh starts a broker)")
    from kafka import KafkaConsumer

    _, _, outcome = episode_lake
    topic = f"rag.alerts.test-{os.getpid()}"
    assert send_alerts_to_kafka(outcome.changes, bootstrap, topic) == len(outcome.changes)
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10000
    )
    try:
        received = [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()
    assert [r["alert_id"] for r in received] == [a.alert_id for a in outcome.changes]
    assert {r["status"] for r in received} == {"firing", "cleared"}


def _drift_command(lake: str, bootstrap: str, topic: str, cwd) -> subprocess.CompletedProcess:
    """`groundwatch drift` over the whole lake again, sending to Kafka, as a user runs it: its own process."""
    argv = [groundwatch_bin(), "drift", "--lake", lake, "--recompute", "--no-workspace", "--bootstrap-servers",
            bootstrap, "--alerts-topic", topic]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd, check=False)


@pytest.mark.kafka
def test_the_drift_command_prints_each_alert_once_and_sends_them(episode_lake, kafka_bootstrap, new_topic, tmp_path):
    lake = str(shutil.copytree(episode_lake[0], tmp_path / "lake"))
    topic = new_topic(auto=True)
    done = _drift_command(lake, kafka_bootstrap, topic, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    alerts = [line for line in done.stderr.splitlines() if " groundwatch.drift: " in line]
    assert any(" ALERT " in line for line in alerts) and any(" CLEARED " in line for line in alerts), done.stderr
    # Importing Beam gives the root logger a handler: passed on to it, each line came a second time, unstamped.
    assert not [line for line in done.stderr.splitlines() if line.startswith(("WARNING:groundwatch", "INFO:ground"))]
    assert len(alerts) == len(set(alerts)), done.stderr
    sent = len(consume_all(kafka_bootstrap, topic, idle_ms=10000))
    assert f"sent {sent} alert updates to Kafka topic {topic}" in done.stdout and sent == len(alerts)


def test_the_drift_command_with_kafka_away_says_so_before_checking_any_window(episode_lake, tmp_path):
    lake = shutil.copytree(episode_lake[0], tmp_path / "lake")
    before = sorted((p.relative_to(lake), p.stat().st_mtime_ns) for p in lake.rglob("*"))
    away = f"127.0.0.1:{free_port()}"  # nothing listens there; kafka-python gives up after 30 s
    done = _drift_command(str(lake), away, "rag.alerts", tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    said = f"groundwatch drift: cannot reach Kafka at --bootstrap-servers {away}: KafkaTimeoutError"
    assert done.stderr.splitlines()[-1].startswith(said), done.stderr[-3000:]
    # `--recompute` would have removed the lake's checks and alerts before checking again: nothing was touched.
    assert sorted((p.relative_to(lake), p.stat().st_mtime_ns) for p in lake.rglob("*")) == before


@pytest.mark.kafka
def test_an_alert_the_broker_refuses_is_an_error_not_a_count(episode_lake, kafka_bootstrap, new_topic):
    from transforms.io.kafka.client import KafkaFailed

    _, _, outcome = episode_lake
    topic = new_topic(config={"max.message.bytes": "200"})  # every alert's JSON is longer
    # kafka-python's `flush` does not raise a refusal (it logs it): the refusal is in each record's future.
    with pytest.raises(KafkaFailed, match=rf"^Kafka at --bootstrap-servers {kafka_bootstrap}: .*MessageSizeTooLarge"):
        send_alerts_to_kafka(outcome.changes, kafka_bootstrap, topic)


@pytest.mark.kafka
def test_the_streams_drift_stage_with_kafka_away_checks_nothing_and_the_next_run_sends(
    kafka_bootstrap, new_topic, tmp_path
):
    from pipelines.runner.drift_stage import StreamDrift

    lake = str(tmp_path / "lake")
    spec = ScenarioSpec("retriever-regression", windows=16, per_window=50, change_at=0.6, seed=8)
    audit_into_lake(list(scenario_responses(spec)), lake)
    topic = new_topic(auto=True)

    def stage(connection: dict) -> StreamDrift:
        return StreamDrift(lake, DriftConfig(), connection=connection, alerts_topic=topic, workspace=False, out=_quiet)

    away = stage({"bootstrap_servers": f"127.0.0.1:{free_port()}", "bootstrap_timeout_ms": 200})  # nothing listens
    assert away.run_once() is None and away.errors == 1
    # Checked windows would be done with: their alerts, never sent, would stay unsent.
    assert not os.path.exists(os.path.join(lake, "drift_checks"))
    outcome = stage({"bootstrap_servers": kafka_bootstrap}).run_once()
    assert outcome is not None and outcome.fired
    sent = consume_all(kafka_bootstrap, topic, idle_ms=10000)
    assert len(sent) == len(outcome.changes) + len(outcome.incident_changes)
