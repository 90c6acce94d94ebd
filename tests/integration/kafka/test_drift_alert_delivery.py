"""A drift run's alerts reach the alerts topic even when the broker goes away in the middle of the run.

A window counts as checked once its `drift_checks` rows are in the lake, and no later run checks it again. So
each window's alert and incident updates are sent, and answered, before its rows are written: a broker lost
mid-run leaves the windows after it unchecked, and the next run, the broker back, checks them and sends theirs.
The broker here is the test's own, stopped by the run's first alert line (written once that window's updates
were sent) and started again on the same ports.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import shutil

import duckdb
import pytest

from pipelines import drift as drift_command
from pipelines.runner.drift_run import run_drift
from pipelines.traffic.scenarios import ScenarioSpec, audit_into_lake, scenario_responses
from tests.support.kafka_fixtures import consume_all
from transforms.io.kafka.client import KafkaFailed
from transforms.monitoring.drift import DriftConfig

pytestmark = pytest.mark.kafka

# A regression that is rolled back: alerts fire in three windows, and clear later.
EPISODE = ScenarioSpec("retriever-regression", windows=14, per_window=40, change_at=0.4, recover_at=0.7, seed=4)


@pytest.fixture(scope="module")
def episode(tmp_path_factory) -> str:
    """The audited lake, not yet checked for drift; copy it before writing to it."""
    lake = str(tmp_path_factory.mktemp("episode") / "lake")
    audit_into_lake(list(scenario_responses(EPISODE)), lake)
    return lake


def _quiet(_line: str) -> None:
    pass


class _StopAtFirstAlert(logging.Handler):
    """Stops the broker when the run logs its first alert: that window's updates were sent, the next ones not."""

    def __init__(self, broker):
        super().__init__(logging.WARNING)
        self.broker = broker

    def emit(self, record: logging.LogRecord) -> None:
        if self.broker.running():
            self.broker.stop()


def _lake_rows(lake: str, table: str) -> set[tuple[str, str]]:
    """(id, status) of each row of the lake's alerts or incidents table."""
    id_column = "alert_id" if table == "alerts" else "incident_id"
    source = f"read_parquet('{lake}/{table}/**/*.parquet', hive_partitioning = true)"
    return set(duckdb.connect().execute(f"SELECT {id_column}, status FROM {source}").fetchall())


def _checked_windows(lake: str) -> list:
    source = f"read_parquet('{lake}/drift_checks/**/*.parquet', hive_partitioning = true)"
    return [w for (w,) in duckdb.connect().execute(f"SELECT DISTINCT window_start FROM {source} ORDER BY 1").fetchall()]


def test_a_broker_lost_mid_run_leaves_the_rest_unchecked_and_the_next_run_sends_them(private_broker, episode, tmp_path):
    lake = str(shutil.copytree(episode, tmp_path / "lake"))
    bootstrap, topic = private_broker.bootstrap, "rag.alerts"
    # Without a broker, a producer gives up after 2 s rather than kafka-python's 30.
    connection = {"bootstrap_servers": bootstrap, "bootstrap_timeout_ms": 2000}
    drift_log = logging.getLogger("groundwatch.drift")
    stopper = _StopAtFirstAlert(private_broker)
    drift_log.addHandler(stopper)
    try:
        with pytest.raises(KafkaFailed) as e:
            run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=connection, alerts_topic=topic,
                      out=_quiet)  # fmt: skip
    finally:
        drift_log.removeHandler(stopper)
    assert not private_broker.running()  # the run did log an alert
    said = re.search(
        r"; the windows from (\S+ \S+) UTC on are not checked, and the next run checks them again", str(e.value)
    )
    assert said, e.value
    checked = _checked_windows(lake)
    assert 0 < len(checked) < EPISODE.windows and _lake_rows(lake, "alerts"), e.value  # the windows before it

    assert private_broker.start() == bootstrap  # the same ports
    lines: list[str] = []
    outcome = run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=connection, alerts_topic=topic,
                        out=lines.append)  # fmt: skip
    assert f"{min(outcome.windows):%Y-%m-%d %H:%M:%S}" == said[1] and min(outcome.windows) > max(checked)
    assert outcome.changes, "the windows left unchecked held alert updates"
    assert f"sent {len(outcome.changes) + len(outcome.incident_changes)} alert updates" in "\n".join(lines)

    updates = [json.loads(record.value) for record in consume_all(bootstrap, topic, idle_ms=10000)]
    received = {(update.get("alert_id") or update.get("incident_id"), update["status"]) for update in updates}
    # The lake keeps each alert's and incident's last row; the topic has every update, firing and cleared.
    in_lake = _lake_rows(lake, "alerts") | _lake_rows(lake, "incidents")
    assert in_lake <= received, sorted(in_lake - received)
    # Each alert once, firing before cleared: nothing was sent twice or out of order.
    by_alert: dict[str, list[str]] = {}
    for update in updates:
        if "alert_id" in update:
            by_alert.setdefault(update["alert_id"], []).append(update["status"])
    assert set(by_alert) == {alert for alert, _ in _lake_rows(lake, "alerts")}
    assert all(statuses in (["firing"], ["firing", "cleared"]) for statuses in by_alert.values()), by_alert


def test_updates_the_topic_refuses_are_counted_their_windows_checked_and_the_command_says_so(
    episode, kafka_bootstrap, new_topic, tmp_path, capsys
):
    lake = str(shutil.copytree(episode, tmp_path / "lake"))
    topic = new_topic(config={"max.message.bytes": "200"})  # every update's JSON is longer: refused for good
    parser = argparse.ArgumentParser()
    drift_command.add_arguments(parser)
    argv = ["--lake", lake, "--no-workspace", "--bootstrap-servers", kafka_bootstrap, "--alerts-topic", topic, "--json"]
    assert drift_command.main(parser.parse_args(argv)) == 2
    printed = capsys.readouterr()
    error = printed.err.splitlines()[-1]
    said = rf"^groundwatch drift: Kafka at --bootstrap-servers {kafka_bootstrap}: (\d+) of \1 alert and incident "
    assert re.match(said + rf"updates to {topic} not taken, the first: \[Error 10\] MessageSizeTooLarge", error), error
    assert error.endswith("; their windows are checked, and their alerts and incidents are in the lake")
    updates = len(_lake_rows(lake, "alerts")) + len(_lake_rows(lake, "incidents"))
    assert int(re.match(said, error)[1]) >= updates > 0  # every update, the firing rows since cleared too
    # The run went on: its summary and its alerts as JSON are printed, as without Kafka.
    assert f"sent 0 alert updates to Kafka topic {topic}" in printed.out and "windows checked  14" in printed.out
    assert sum(1 for line in printed.out.splitlines() if line.startswith('{"alert_id"')) >= len(
        _lake_rows(lake, "alerts")
    )
    # Sending them again would be refused again: every window is checked, and the next run has nothing to send.
    assert len(_checked_windows(lake)) == EPISODE.windows
    assert drift_command.main(parser.parse_args(argv)) == 0
