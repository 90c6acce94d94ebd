"""`groundwatch monitor` streaming on Prism against a real broker (markers `kafka` and `prism`).

- messages produced while the monitor runs reach the lake in windowed files, and the group commits them;
- SIGKILL of the whole monitor (Python and Prism) mid-run, then a restart: every message is in the lake
  views once, none missing;
- the broker stops and comes back mid-run: the monitor recovers and finishes the work.

The two exactly-once tests (the SIGKILL and the broker restart) run with the lake in a local folder and in an
S3 bucket (moto's server, `tests.support.s3_fixtures`): the monitor and Prism write the bucket, and the offset
commit reads the rows back from it.

Waiting is bounded (a test fails if the lake does not catch up within minutes), never a speed assertion.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pipelines.produce import generated_messages, produce_messages
from tests.support.kafka_fixtures import (
    add_partitions,
    create_topic,
    lake_accounting,
    wait_for,
)
from tests.support.prism_fixtures import NEEDS_PRISM
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest_check import verify_lake

pytestmark = [
    pytest.mark.kafka,
    *NEEDS_PRISM,
]

CATCH_UP_S = 240


class Monitor:
    """A `groundwatch monitor` process in its own process group (so Prism dies with it)."""

    def __init__(self, bootstrap: str, topic: str, lake, log_path, *extra: str):
        command = [
            sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
            "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5",
            "--review-topic", f"{topic}.review", "--dead-letter-topic", f"{topic}.dead", *extra,
        ]  # fmt: skip
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
        self.process.wait(timeout=60)

    def assert_running(self) -> None:
        if self.process.poll() is not None:
            tail = open(self.log_path, errors="replace").read()[-3000:]
            pytest.fail(f"monitor exited with {self.process.returncode}:\n{tail}")


@pytest.fixture
def monitors():
    started: list[Monitor] = []
    yield lambda *args: started.append(Monitor(*args)) or started[-1]
    for monitor in started:
        monitor.kill()


def _all_offsets(bootstrap: str, topic: str) -> set[tuple[int, int]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return {(tp.partition, o) for tp in tps for o in range(begin[tp], end[tp])}
    finally:
        consumer.close()


def _committed(bootstrap: str, topic: str) -> dict[int, int | None]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"g-{topic}", enable_auto_commit=False)
    try:
        return {p: consumer.committed(TopicPartition(topic, p)) for p in consumer.partitions_for_topic(topic)}
    finally:
        consumer.close()


def _in_lake(found: dict) -> set[tuple[int, int]]:
    """The (partition, offset) of every message a lake accounting holds, as a response or a dead letter."""
    return set(found["responses"]) | set(found["dead_letters"])


def _caught_up(bootstrap: str, topic: str, lake, monitor: Monitor):
    """The lake accounting once every produced offset is in it and the group has committed them all."""
    monitor.assert_running()
    if not lakefs.is_dir(str(lake)):
        return None
    found = lake_accounting(str(lake), topic)
    wanted = _all_offsets(bootstrap, topic)
    if _in_lake(found) != wanted:
        return None
    ends: dict[int, int] = {}
    for partition, offset in wanted:
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    committed = _committed(bootstrap, topic)
    # A partition that never had a message has nothing to commit.
    return found if all((committed[p] or 0) == ends.get(p, 0) for p in committed) else None


def _where_it_stands(bootstrap: str, topic: str, lake, monitor: Monitor) -> str:
    """What a wait for `_caught_up` found missing, and the monitor's last words: a timeout's explanation."""
    in_lake = _in_lake(lake_accounting(str(lake), topic)) if lakefs.is_dir(str(lake)) else set()
    wanted = _all_offsets(bootstrap, topic)
    missing = sorted(wanted - in_lake)
    with open(monitor.log_path, errors="replace") as log:
        lines = log.read().splitlines()
    # kafka-python's own lines (many during an outage), the workers' on offset commits (a `--verbose` monitor's),
    # and the rest
    client, commits, own = [], [], []
    for line in lines:
        (client if ":kafka." in line else commits if "offset commit of" in line else own).append(line)
    return "\n".join(
        [
            f"{len(wanted)} offsets in the topic, {len(in_lake)} in the lake, missing {len(missing)} "
            f"(first {missing[:5]}); the group committed {_committed(bootstrap, topic)}",
            f"monitor log, last of {len(own)} lines of its own:",
            *own[-40:],
            f"last of {len(client)} lines of the Kafka client:",
            *client[-10:],
            f"last of {len(commits)} lines on offset commits:",
            *commits[-10:],
        ]
    )


def _wait_caught_up(bootstrap: str, topic: str, lake, monitor: Monitor, what: str) -> dict:
    """The lake accounting once `_caught_up`; the test fails, saying where things stood, after `CATCH_UP_S`."""
    return wait_for(
        lambda: _caught_up(bootstrap, topic, lake, monitor),
        timeout_s=CATCH_UP_S,
        what=what,
        explain=lambda: _where_it_stands(bootstrap, topic, lake, monitor),
    )


def _assert_in_bucket(lake: str) -> None:
    """For a lake in a bucket: its rows are objects of the bucket, not files of some local folder."""
    if lake.startswith("s3://"):
        from tests.support.s3_fixtures import bucket_keys, bucket_of

        keys = bucket_keys(bucket_of(lake))
        tables = {k.split("/")[1] for k in keys if k.startswith("lake/")}
        assert {"responses", "window_metrics", "dead_letters"} <= tables


def _produce(bootstrap: str, topic: str, count: int, seed: int, *, rate: float | None = None) -> None:
    from datetime import UTC, datetime

    messages = generated_messages(count, seed=seed, malformed_fraction=0.05, start=datetime.now(UTC))
    assert produce_messages({"bootstrap_servers": bootstrap}, topic, messages, rate=rate) == count


def _assert_once_each(found: dict) -> None:
    assert len(found["responses"]) == len(set(found["responses"]))
    assert len(found["response_ids"]) == len(set(found["response_ids"]))
    assert len(found["dead_letters"]) == len(set(found["dead_letters"]))


def test_monitor_picks_up_messages_produced_while_it_runs(kafka_bootstrap, new_topic, monitors, tmp_path):  # noqa: F811
    topic = new_topic(partitions=2)
    lake = tmp_path / "lake"
    monitor = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor.log")
    _produce(kafka_bootstrap, topic, 150, seed=21, rate=100)
    first = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "1st batch")
    _produce(kafka_bootstrap, topic, 150, seed=22, rate=100)
    found = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "2nd batch")
    assert len(found["responses"]) + len(found["dead_letters"]) == 300 > len(first["responses"])
    _assert_once_each(found)
    window_files = list((lake / "responses").rglob("*.parquet"))
    assert window_files and all(f.parent.name.startswith("hour=") for f in window_files)


def test_partitions_added_while_it_runs_are_read_from_their_start(kafka_bootstrap, new_topic, monitors, tmp_path):  # noqa: F811
    topic = new_topic(partitions=1)
    lake = tmp_path / "lake"
    monitor = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor.log", "--partition-discovery-seconds", "2")
    _produce(kafka_bootstrap, topic, 60, seed=61)
    _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "one partition")

    add_partitions(kafka_bootstrap, topic, total=3)
    _produce(kafka_bootstrap, topic, 150, seed=62)  # spread over all three, some before the monitor looks again
    assert {p for p, _ in _all_offsets(kafka_bootstrap, topic)} == {0, 1, 2}
    found = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "grown")
    assert len(found["responses"]) + len(found["dead_letters"]) == 210
    assert {p for p, _ in found["responses"]} == {0, 1, 2}
    _assert_once_each(found)


def test_an_idle_partition_does_not_hold_windows_open(kafka_bootstrap, new_topic, monitors, tmp_path):  # noqa: F811
    from datetime import UTC, datetime

    from kafka import KafkaProducer

    topic = new_topic(partitions=3)
    lake = tmp_path / "lake"
    monitor = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor.log")
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    for raw in generated_messages(60, seed=51, start=datetime.now(UTC)):
        producer.send(topic, raw, partition=0)  # partitions 1 and 2 never get a message
    producer.close()
    found = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "lake")
    assert len(found["responses"]) + len(found["dead_letters"]) == 60


def test_a_message_too_late_for_its_window_is_dead_lettered_not_dropped(
    kafka_bootstrap,  # noqa: F811
    new_topic,  # noqa: F811
    monitors,
    tmp_path,
):
    """Prism drops late data before the first aggregation, silently; the monitor must count and keep it."""
    from datetime import UTC, datetime, timedelta

    topic = new_topic(partitions=1)
    lake = tmp_path / "lake"
    monitor = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor.log", "--allowed-lateness-seconds", "0")
    _produce(kafka_bootstrap, topic, 20, seed=61)
    _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "on-time batch")
    # The watermark is now past the current minute; a response answered two hours ago belongs to a long-closed
    # window, while a fresh one still counts normally.
    hours_ago = datetime.now(UTC) - timedelta(hours=2)
    late = generated_messages(1, seed=62, start=hours_ago)
    fresh = generated_messages(1, seed=63, start=datetime.now(UTC))
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, late + fresh) == 2
    found = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "lake")

    from dashboards.views import connect_lake

    rows = (
        connect_lake(str(lake))
        .execute(
            "SELECT error, raw_payload FROM dead_letters WHERE origin_source = ? AND starts_with(error, 'late:')",
            [f"kafka:{topic}"],
        )
        .fetchall()
    )
    assert [bytes(raw) for _, raw in rows] == late
    assert "window ending" in rows[0][0] and "--allowed-lateness-seconds" in rows[0][0]
    assert json.loads(fresh[0])["response_id"] in found["response_ids"]
    _assert_once_each(found)


def test_the_llm_judge_audits_a_stream(kafka_bootstrap, new_topic, monitors, tmp_path, monkeypatch):  # noqa: F811
    """`--verifier openai` in the streaming monitor: the judge (a real HTTP server speaking the chat-completions
    protocol, only its replies scripted) decides the sentences, and its key reaches neither log nor lake."""
    from dashboards.views import connect_lake
    from tests.support.openai_server import OpenAIServer

    secret = "sk-streaming-test-0123456789"
    monkeypatch.setenv("GROUNDWATCH_JUDGE_API_KEY", secret)
    topic = new_topic(partitions=2)
    lake = tmp_path / "lake"
    with OpenAIServer() as server:
        judge = ("--verifier", "openai", "--judge-base-url", server.base_url, "--judge-model", "scripted-judge")
        monitor = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor.log", *judge)
        _produce(kafka_bootstrap, topic, 30, seed=71)
        found = _wait_caught_up(kafka_bootstrap, topic, lake, monitor, "lake")
        assert server.requests and {h.get("Authorization") for h in server.headers} == {f"Bearer {secret}"}
    _assert_once_each(found)
    con = connect_lake(str(lake))
    assert con.execute("SELECT DISTINCT verifier FROM responses").fetchall() == [("openai",)]
    judged = con.execute("SELECT count(DISTINCT response_id) FROM judge_calls WHERE status = 'judged'").fetchone()[0]
    assert judged == len(set(found["response_ids"])) > 0  # every audited response was put to the judge
    assert secret not in (tmp_path / "monitor.log").read_text(errors="replace")
    assert all(secret.encode() not in f.read_bytes() for f in lake.rglob("*.parquet"))


def test_sigkill_and_restart_loses_nothing_and_counts_once(
    kafka_bootstrap,  # noqa: F811
    new_topic,  # noqa: F811
    monitors,
    tmp_path,
    folder_or_bucket_lake,
):
    topic = new_topic(partitions=2)
    lake = folder_or_bucket_lake
    _produce(kafka_bootstrap, topic, 400, seed=31)
    first = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor-1.log")

    def some_committed():
        first.assert_running()
        return any(_committed(kafka_bootstrap, topic).values())

    wait_for(some_committed, timeout_s=CATCH_UP_S, what="a first commit")
    _produce(kafka_bootstrap, topic, 200, seed=32, rate=200)  # in flight when the monitor dies
    first.kill(signal.SIGKILL)

    second = monitors(kafka_bootstrap, topic, lake, tmp_path / "monitor-2.log")
    _produce(kafka_bootstrap, topic, 100, seed=33)
    found = _wait_caught_up(kafka_bootstrap, topic, lake, second, "restart")
    assert len(found["responses"]) + len(found["dead_letters"]) == 700
    _assert_once_each(found)
    _assert_in_bucket(lake)
    # The killed run's half-done publishes are no tampering: the lake verifies against its manifest (a file
    # listed but not yet in place, as the running monitor may have one, is a note, not a problem).
    assert verify_lake(lake).problems == []


def test_broker_restart_mid_run_recovers_and_finishes(private_broker, monitors, tmp_path):  # noqa: F811
    """In a folder only: what a restart tests is the reader's, and the lake's writes in a bucket are the same
    code as in the SIGKILL test, which runs on both."""
    bootstrap = private_broker.bootstrap
    topic = create_topic(bootstrap, "gw-restart", partitions=2)
    lake = str(tmp_path / "lake")
    # `--verbose`: the workers' lines (the Kafka client's, failed commits) go to the log a timeout shows.
    monitor = monitors(bootstrap, topic, lake, tmp_path / "monitor.log", "--verbose")
    _produce(bootstrap, topic, 200, seed=41)
    _wait_caught_up(bootstrap, topic, lake, monitor, "before the restart")

    private_broker.stop()
    time.sleep(5)  # the outage itself, not a wait: the monitor polls a dead broker for 5 s
    monitor.assert_running()
    assert private_broker.start() == bootstrap  # the same ports: its clients know no others
    _produce(bootstrap, topic, 200, seed=42)
    found = _wait_caught_up(bootstrap, topic, lake, monitor, "after restart")
    assert len(found["responses"]) + len(found["dead_letters"]) == 400
    _assert_once_each(found)
