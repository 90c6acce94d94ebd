"""Drift inside the stream: `groundwatch monitor` raises the alerts itself, no separate `groundwatch drift` job.

The scenarios of `pipelines.traffic.scenarios` are produced to a topic and consumed by the monitor with the
message's own timestamps as event time, bounded (`--until-caught-up`: fast and deterministic; the drift stage is
the one the stream runs, `pipelines.runner.drift_stage`). The retriever regression must be named within 2
windows of its first window with r9 traffic, measured from the lake; stable traffic over 20 windows raises no
alert in the stream (the false-alarm rate over many more windows and seeds is `scripts/bench_drift.py`'s).
Alerts reach the lake's `alerts` table and the alerts topic alike.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import timedelta

import duckdb
import pytest

from pipelines.monitor import run
from pipelines.produce import produce_messages
from pipelines.traffic.scenarios import NEW_RETRIEVER, ScenarioSpec, scenario_jsonl
from schemas.monitoring import AlertStatus
from tests.support.kafka_fixtures import consume_all, monitor_argv
from tests.support.prism_fixtures import needs_prism

pytestmark = pytest.mark.kafka

WINDOW = timedelta(seconds=60)


def _monitor(bootstrap: str, topic: str, lake, spec: ScenarioSpec) -> list[str]:
    assert produce_messages({"bootstrap_servers": bootstrap}, topic, scenario_jsonl(spec)) > 0
    lines: list[str] = []
    argv = monitor_argv(
        bootstrap,
        topic,
        lake,
        "--event_time=message",
        f"--window_seconds={spec.window_seconds}",
    )
    counts = run(argv, out=lines.append)
    assert counts.audited > 0 and counts.dead_lettered == 0
    return lines


def _rows(lake, sql: str, table: str) -> list[dict]:
    """`sql` over one table of the lake (`{t}`); no rows when the table has no file yet."""
    if not list((lake / table).rglob("*.parquet")):
        return []
    source = f"read_parquet('{lake / table}/**/*.parquet', hive_partitioning = true)"
    return duckdb.connect().execute(sql.format(t=source)).df().to_dict("records")


def test_stream_names_the_new_retriever_within_two_windows(kafka_bootstrap, new_topic, tmp_path):
    topic, lake = new_topic(partitions=2), tmp_path / "lake"
    spec = ScenarioSpec("retriever-regression", windows=22, per_window=50, change_at=0.6, seed=11)
    lines = _monitor(kafka_bootstrap, topic, lake, spec)
    assert any(line.startswith("drift stage    1 runs") for line in lines), lines

    # The change, from the data: the first window with traffic served by the new retriever.
    (first_r9,) = _rows(
        lake, f"SELECT min(window_start) AS w FROM {{t}} WHERE retriever_version = '{NEW_RETRIEVER}'", "responses"
    )
    change = first_r9["w"].to_pydatetime()
    checked = _rows(lake, "SELECT count(DISTINCT window_start) AS n FROM {t}", "drift_checks")[0]["n"]
    assert checked == spec.windows, "every window is checked once"

    alerts = _rows(lake, "SELECT * FROM {t}", "alerts")
    assert not [a for a in alerts if a["window_start"].to_pydatetime() < change], "alert before the change"
    named = [a for a in alerts if (a["slice_dimension"], a["slice_value"]) == ("retriever_version", NEW_RETRIEVER)]
    assert named, f"no alert on retriever_version={NEW_RETRIEVER}: {[a['message'] for a in alerts]}"
    first = min(a["window_start"].to_pydatetime() for a in named)
    assert first <= change + WINDOW, f"named {(first - change) // WINDOW + 1} windows after the change"
    # One incident, naming r9 as its cause, from the change on.
    incidents = _rows(lake, "SELECT * FROM {t}", "incidents")
    assert {(i["cause_dimension"], i["cause_value"]) for i in incidents} == {("retriever_version", NEW_RETRIEVER)}
    assert min(i["started_at"].to_pydatetime() for i in incidents) <= change + WINDOW

    # The alerts topic holds the same updates, keyed by alert (and incident) id.
    published = consume_all(kafka_bootstrap, f"{topic}.alerts")
    bodies = [json.loads(r.value) for r in published]
    assert {b["alert_id"] for b in bodies if "alert_id" in b} == {a["alert_id"] for a in alerts}
    keys = [r.key.decode() for r in published]
    assert keys == [b.get("incident_id") or b["alert_id"] for b in bodies]
    assert any(b.get("status") == AlertStatus.firing.value for b in bodies)

    # A second run over nothing new checks nothing again and keeps the open alerts (the lake is the state).
    again = run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)
    assert again.read == 0
    assert _rows(lake, "SELECT count(*) AS n FROM {t}", "alerts")[0]["n"] == len(alerts)


def test_stable_stream_raises_no_alert_over_twenty_windows(kafka_bootstrap, new_topic, tmp_path):
    topic, lake = new_topic(partitions=2), tmp_path / "lake"
    spec = ScenarioSpec("stable", windows=20, per_window=25, seed=3)
    _monitor(kafka_bootstrap, topic, lake, spec)
    checks = _rows(lake, "SELECT count(DISTINCT window_start) AS n, count(*) AS c FROM {t}", "drift_checks")[0]
    assert checks["n"] == spec.windows and checks["c"] > spec.windows
    assert _rows(lake, "SELECT * FROM {t}", "alerts") == []
    if _topic_exists(kafka_bootstrap, f"{topic}.alerts"):
        assert consume_all(kafka_bootstrap, f"{topic}.alerts", idle_ms=1000) == []


def test_drift_every_seconds_zero_turns_the_stage_off(kafka_bootstrap, new_topic, tmp_path):
    topic, lake = new_topic(), tmp_path / "lake"
    spec = ScenarioSpec("stable", windows=2, per_window=5, seed=1)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, scenario_jsonl(spec))
    lines: list[str] = []
    run(monitor_argv(kafka_bootstrap, topic, lake, "--drift_every_seconds=0"), out=lines.append)
    assert not os.path.exists(lake / "drift_checks") and not any(x.startswith("drift stage") for x in lines)


def _topic_exists(bootstrap: str, topic: str) -> bool:
    from transforms.io.kafka.partitions import topic_partitions

    return topic_partitions({"bootstrap_servers": bootstrap}, topic) is not None


@pytest.mark.prism
@needs_prism
def test_streaming_monitor_on_prism_runs_the_drift_stage(kafka_bootstrap, new_topic, tmp_path):
    """A stream on Prism checks its windows while it runs: `drift_checks` rows appear with no drift job."""
    from datetime import UTC, datetime

    from pipelines.produce import generated_messages
    from tests.support.kafka_fixtures import wait_for

    topic, lake, log_path = new_topic(partitions=1), tmp_path / "lake", tmp_path / "monitor.log"
    command = [
        sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", kafka_bootstrap, "--topic", topic,
        "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5", "--drift-every-seconds", "2",
        "--review-topic", f"{topic}.review", "--dead-letter-topic", f"{topic}.dead",
        "--alerts-topic", f"{topic}.alerts",
    ]  # fmt: skip
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        messages = generated_messages(120, seed=31, start=datetime.now(UTC))
        assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages, rate=60) == 120

        def checked():
            if process.poll() is not None:
                pytest.fail(f"monitor exited with {process.returncode}:\n{open(log_path).read()[-3000:]}")
            return list((lake / "drift_checks").rglob("*.parquet")) if (lake / "drift_checks").is_dir() else None

        assert wait_for(checked, timeout_s=240, what="drift_checks while the monitor runs")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=120)


def test_a_failing_drift_run_is_logged_and_counted_and_the_next_one_goes_on(tmp_path, caplog):
    """The stage never raises into the stream: a lake it cannot read is one failed run, then it checks again."""
    from pipelines.runner.drift_stage import StreamDrift
    from transforms.monitoring.drift import DriftConfig

    lake = tmp_path / "lake"
    (lake / "window_metrics").mkdir(parents=True)
    (lake / "window_metrics" / "broken.parquet").write_bytes(b"not parquet")
    stage = StreamDrift(str(lake), DriftConfig(), connection=None, workspace=False, out=lambda _: None)
    assert stage.run_once() is None
    assert stage.errors == 1 and stage.runs == 1
    assert "drift stage run failed" in caplog.text
    (lake / "window_metrics" / "broken.parquet").unlink()
    assert stage.run_once() is not None and stage.errors == 1 and stage.runs == 2
    assert "1 failed runs" in stage.summary()
