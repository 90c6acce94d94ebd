"""A drift run's alerts reach the alerts topic even when the broker goes away in the middle of the run.

A window counts as checked once its `drift_checks` rows are in the lake, and no later run checks it again. So
each window's alert and incident updates are sent, and answered, before its rows are written: a broker lost
mid-run leaves the windows after it unchecked, and the next run, the broker back, checks them and sends theirs.
The broker here is the test's own, stopped by the run's first alert line (written once that window's updates
were sent) and started again on the same ports.
"""

from __future__ import annotations

import json
import logging
import re
import shutil

import duckdb
import pytest

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


def test_a_broker_lost_mid_run_leaves_the_rest_unchecked_and_the_next_run_sends_them(private_broker, tmp_path):
    lake = str(tmp_path / "lake")
    audit_into_lake(list(scenario_responses(EPISODE)), lake)
    bootstrap, topic = private_broker.bootstrap, "rag.alerts"
    # Without a broker, a producer gives up after 2 s rather than kafka-python's 30.
    connection = {"bootstrap_servers": bootstrap, "bootstrap_timeout_ms": 2000}
    drift_log = logging.getLogger("groundwatch.drift")
    stopper = _StopAtFirstAlert(private_broker)
    drift_log.addHandler(stopper)
    try:
        with pytest.raises(KafkaFailed, match=r"; the windows from \S+ \S+ on are not checked, and the next run") as e:
            run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=connection,
                      alerts_topic=topic, out=_quiet)  # fmt: skip
    finally:
        drift_log.removeHandler(stopper)
    assert not private_broker.running()  # the run did log an alert
    checked = _checked_windows(lake)
    assert 0 < len(checked) < EPISODE.windows, e.value
    first_run = _lake_rows(lake, "alerts")
    assert first_run  # the alerts of the window that stopped the broker: sent, then written

    assert private_broker.start() == bootstrap  # the same ports
    lines: list[str] = []
    outcome = run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=connection, alerts_topic=topic,
                        out=lines.append)  # fmt: skip
    assert outcome.windows and min(outcome.windows) > max(checked)
    assert outcome.changes, "the windows left unchecked held alert updates"

    updates = [json.loads(record.value) for record in consume_all(bootstrap, topic, idle_ms=10000)]
    received = {(update.get("alert_id") or update.get("incident_id"), update["status"]) for update in updates}
    in_lake = _lake_rows(lake, "alerts") | _lake_rows(lake, "incidents")
    # The lake keeps each alert's last row; the topic has every update, the firing rows and the cleared ones.
    assert in_lake <= received, sorted(in_lake - received)
    assert {(a, "firing") for a, _ in _lake_rows(lake, "alerts")} <= received
    assert f"sent {len(outcome.changes) + len(outcome.incident_changes)} alert updates" in "\n".join(lines)


def test_updates_the_topic_refuses_are_counted_their_windows_checked_and_the_run_says_so(
    episode, kafka_bootstrap, new_topic, tmp_path
):
    lake = str(shutil.copytree(episode, tmp_path / "lake"))
    topic = new_topic(config={"max.message.bytes": "200"})  # every update's JSON is longer: refused for good
    lines: list[str] = []
    with pytest.raises(KafkaFailed) as e:
        run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=kafka_bootstrap, alerts_topic=topic,
                  out=lines.append)  # fmt: skip
    updates = len(_lake_rows(lake, "alerts")) + len(_lake_rows(lake, "incidents"))
    said = rf"^Kafka at --bootstrap-servers {kafka_bootstrap}: (\d+) of \1 alert and incident updates to {topic} not "
    assert re.match(said + r"taken, the first: \[Error 10\] MessageSizeTooLargeError", str(e.value)), e.value
    assert str(e.value).endswith("; their windows are checked and the updates are in the lake")
    assert int(re.match(said, str(e.value))[1]) >= updates > 0  # every update, the firing rows since cleared too
    # Sending them again would be refused again: every window is checked, and the next run has nothing to send.
    assert len(_checked_windows(lake)) == EPISODE.windows
    assert lines == ["sent 0 alert updates to Kafka topic " + topic]
    assert not run_drift(lake, DriftConfig(), workspace=False, kafka_bootstrap=kafka_bootstrap, alerts_topic=topic,
                         out=_quiet).windows  # fmt: skip
