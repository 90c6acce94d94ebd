"""Fixtures and helpers for the tests that need a real Kafka broker (marker `kafka`).

`kafka_bootstrap` is `$GROUNDWATCH_KAFKA_BOOTSTRAP` when set (scripts/test.sh starts the broker), else a
private broker started for the session from `scripts/kafka_broker.py` and stopped at its end. Each test gets
its own topics (`new_topic`), deleted afterwards. Import the fixtures into a test module to use them:

"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from tests.support.scripts import ROOT, load_script

_broker_script = load_script("kafka_broker")
LocalKafka, BrokerError = _broker_script.LocalKafka, _broker_script.BrokerError

__all__ = [
    "ROOT",
    "assert_accounted_once",
    "committed_offsets",
    "consume_all",
    "create_topic",
    "delete_topics",
    "expected_fates",
    "kafka_bootstrap",
    "lake_accounting",
    "monitor_argv",
    "new_topic",
    "offsets_by_value",
    "private_broker",
    "remove_topic",
    "unread_messages",
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
    """A broker of this test's own, for tests that stop and restart it.

    Its ports are chosen below the system's ephemeral range (`maven_libs.listen_port`), so that no client
    connection is given one while the broker is down and a restart finds them free. Another server can still
    take one before Java binds it: then a broker on fresh ports is started instead, up to three times.
    """
    for attempt in range(3):
        broker = LocalKafka(tmp_path / f"kafka-broker-{attempt}")
        try:
            broker.start()
            break
        except BrokerError as error:
            broker.purge()
            if "Address already in use" not in str(error) or attempt == 2:
                raise
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


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow a topic to `total` partitions, as an operator does for more throughput."""
    from kafka.admin import NewPartitions

    admin = _admin(bootstrap)
    try:
        admin.create_partitions({topic: NewPartitions(total_count=total)})
    finally:
        admin.close()


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


def _with_companions(name: str) -> list[str]:
    """A topic and the review, dead-letter and alert topics the monitor derives from its name."""
    return [name, f"{name}.review", f"{name}.dead", f"{name}.alerts"]


def remove_topic(bootstrap: str, name: str, *, timeout_s: float = 60.0) -> None:
    """Delete `name` and its companion topics, and wait until the broker no longer lists it (deletion is
    asynchronous): a topic of a fixed name, as a page's walk uses, starts as it would on a fresh machine."""
    delete_topics(bootstrap, _with_companions(name))
    admin = _admin(bootstrap)
    try:
        wait_for(lambda: name not in admin.list_topics(), timeout_s=timeout_s, every_s=0.5, what=f"{name} deleted")
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
        made.extend(_with_companions(name))
        return name

    yield make
    delete_topics(kafka_bootstrap, made)


def consume_all(bootstrap: str, topic: str, *, idle_ms: int = 3000) -> list:
    """Every committed record of `topic`, read from the beginning to the partitions' ends as they stand now.

    It returns as soon as every partition is read to its end; `idle_ms` without a new record ends it early
    (a topic whose end is a transaction marker the client does not step past, or no topic at all).
    """
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not partitions:
            return []
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(partitions)
        records: list = []
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            batch = consumer.poll(timeout_ms=idle_ms)
            if not batch:
                break
            for part in batch.values():
                records.extend(part)
        return records
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


def monitor_argv(bootstrap: str, topic: str, lake, *extra: str) -> list[str]:
    """Pipeline options of a bounded `groundwatch monitor` over `topic` (group `g-<topic>`, its own side topics:
    review, dead letters, alerts)."""
    return [
        f"--kafka_bootstrap_servers={bootstrap}",
        f"--kafka_topic={topic}",
        f"--kafka_group_id=g-{topic}",
        f"--lake={lake}",
        f"--review_topic={topic}.review",
        f"--dead_letter_topic={topic}.dead",
        f"--alerts_topic={topic}.alerts",
        "--until_caught_up",
        *extra,
    ]


def expected_fates(messages: list[bytes], rate: float) -> dict[str, set]:
    """What must happen to each message: malformed -> dead letter (its bytes), valid -> audited or sampled out
    (its response id)."""
    from transforms.ingest.parse import ParseError, parse_message
    from transforms.ingest.sample import sample_point

    fates = {"dead": set(), "audited": set(), "sampled_out": set()}
    for raw in messages:
        try:
            response = parse_message(raw)
        except ParseError:
            fates["dead"].add(raw)
            continue
        keep = response.metadata.risk_level.value == "high" or sample_point(response.response_id) < rate
        fates["audited" if keep else "sampled_out"].add(response.response_id)
    return fates


def offsets_by_value(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    """Every record of `topic` as (partition, offset) -> value."""
    return {(r.partition, r.offset): r.value for r in consume_all(bootstrap, topic)}


def assert_accounted_once(lake: str, topic: str, produced: dict[tuple[int, int], bytes], fates: dict, counts) -> None:
    """Each produced offset is in exactly one place of the lake (or sampled out), the place its content says,
    and the run's counts agree."""
    import json

    found = lake_accounting(lake, topic)
    audited, dead = found["responses"], found["dead_letters"]
    assert len(audited) == len(set(audited)) and len(dead) == len(set(dead))
    assert not set(audited) & set(dead)
    assert set(audited) | set(dead) <= set(produced)
    sampled_out = set(produced) - set(audited) - set(dead)
    assert len(audited) + len(dead) + len(sampled_out) == len(produced)
    assert {produced[o] for o in dead} >= fates["dead"]
    assert {json.loads(produced[o])["response_id"] for o in audited} == fates["audited"]
    assert {json.loads(produced[o])["response_id"] for o in sampled_out} == fates["sampled_out"]
    assert counts.read == len(produced) and counts.adds_up
    assert counts.audited == len(audited) and counts.dead_lettered == len(dead)
    assert counts.sampled_out == len(sampled_out)


def committed_offsets(bootstrap: str, group_id: str, topic: str, partitions: int) -> tuple[dict, dict]:
    """The group's committed offsets and the topic's end offsets, per partition."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: consumer.committed(tp) for tp in tps}, {
            tp.partition: end for tp, end in consumer.end_offsets(tps).items()
        }
    finally:
        consumer.close()


def unread_messages(bootstrap: str, group_id: str, topic: str) -> int:
    """Messages of `topic` the group has not committed yet, over every partition (0 for a topic not there yet)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or set()]
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return sum(end[tp] - (consumer.committed(tp) or begin[tp]) for tp in tps)
    finally:
        consumer.close()


def wait_for(condition, *, timeout_s: float, every_s: float = 1.0, what: str = "condition", explain=None):
    """Poll `condition()` until it returns a truthy value (returned) or fail after `timeout_s`.

    `explain()`, when given, says on failure where things stood (what is missing, a log's tail).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f":\n{_explained(explain)}" if explain is not None else ""
            pytest.fail(f"{what} not reached within {timeout_s:.0f}s{detail}")
        time.sleep(every_s)


def _explained(explain) -> str:
    """`explain()`, or why it could not say (the broker still away, say): never in the way of the failure."""
    try:
        return explain()
    except Exception as e:  # noqa: BLE001 - a failing explanation must not hide the timeout it explains
        return f"(no explanation: {type(e).__name__}: {e})"
