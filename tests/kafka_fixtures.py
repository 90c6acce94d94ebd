"""Fixtures and helpers for the tests that need a real Kafka broker (marker `kafka`).

`kafka_bootstrap` is `$GROUNDWATCH_KAFKA_BOOTSTRAP` when set (scripts/test.sh starts the broker), else a
private broker started for the session from `scripts/kafka_broker.py` and stopped at its end. Each test gets
its own topics (`new_topic`), deleted afterwards. Import the fixtures into a test module to use them:

    from kafka_fixtures import kafka_bootstrap, new_topic  # noqa: F401
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from kafka_broker import LocalKafka  # noqa: E402

__all__ = [
    "ROOT",
    "consume_all",
    "create_topic",
    "delete_topics",
    "kafka_bootstrap",
    "lake_accounting",
    "new_topic",
    "private_broker",
    "wait_for",
]


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory):
    address = os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP")
    if address:
        yield address
        return
    broker = LocalKafka(tmp_path_factory.mktemp("kafka-broker"))
    try:
        yield broker.start()
    finally:
        broker.purge()


@pytest.fixture
def private_broker(tmp_path):
    """A broker of this test's own, for tests that stop and restart it."""
    broker = LocalKafka(tmp_path / "kafka-broker")
    broker.start()
    try:
        yield broker
    finally:
        broker.purge()


def _admin(bootstrap: str):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="groundwatch-tests")


def create_topic(bootstrap: str, name: str, partitions: int = 1, config: dict | None = None) -> str:
    from kafka.admin import NewTopic

    admin = _admin(bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})])
    finally:
        admin.close()
    return name


def delete_topics(bootstrap: str, names: list[str]) -> None:
    from kafka.errors import KafkaError

    admin = _admin(bootstrap)
    try:
        existing = set(admin.list_topics())
        doomed = [n for n in names if n in existing]
        if doomed:
            admin.delete_topics(doomed)
    except KafkaError:
        pass  # a broker that went away takes its topics with it
    finally:
        admin.close()


@pytest.fixture
def new_topic(kafka_bootstrap):
    """`new_topic(partitions=1, config=None) -> name`: a fresh topic deleted after the test (with its suffixes)."""
    made: list[str] = []

    def make(partitions: int = 1, config: dict | None = None, *, auto: bool = False) -> str:
        name = f"gw-test-{uuid.uuid4().hex[:10]}"
        if not auto:
            create_topic(kafka_bootstrap, name, partitions, config)
        made.extend([name, f"{name}.review", f"{name}.dead"])
        return name

    yield make
    delete_topics(kafka_bootstrap, made)


def consume_all(bootstrap: str, topic: str, *, idle_ms: int = 3000) -> list:
    """Every record of `topic` from the beginning (stops after `idle_ms` without a new one)."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=idle_ms,
        isolation_level="read_committed",
    )
    try:
        return list(consumer)
    finally:
        consumer.close()


def lake_accounting(lake: str, topic: str) -> dict:
    """Offsets found in the lake's views and in the raw files, for the rows read from `topic`."""
    from dashboards.views import connect_lake

    con = connect_lake(lake)
    source = f"kafka:{topic}"

    def offsets(sql: str) -> list[tuple[int, int]]:
        return [tuple(r) for r in con.execute(sql, [source]).fetchall()]

    return {
        "responses": offsets("SELECT origin_partition, origin_offset FROM responses WHERE origin_source = ?"),
        "dead_letters": offsets("SELECT origin_partition, origin_offset FROM dead_letters WHERE origin_source = ?"),
        "response_ids": [r[0] for r in con.execute("SELECT response_id FROM responses").fetchall()],
        "review_ids": {
            r[0]
            for r in con.execute(
                "SELECT response_id FROM responses WHERE needs_review AND origin_source = ?", [source]
            ).fetchall()
        },
    }


def wait_for(condition, *, timeout_s: float, every_s: float = 1.0, what: str = "condition"):
    """Poll `condition()` until it returns a truthy value (returned) or fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not reached within {timeout_s:.0f}s")
        time.sleep(every_s)
