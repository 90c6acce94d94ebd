"""Offsets: the commit ledger (pure), and gaps in a real topic (transaction markers, an aborted transaction).

A transactional producer leaves a control record after each commit or abort, and read_committed skips the
aborted records: the log's offsets then have holes the source must step over and still finish its range.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pvalue import TaggedOutput
from apache_beam.runners.sdf_utils import RestrictionTrackerView, ThreadsafeRestrictionTracker
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue
from kafka.errors import MessageSizeTooLargeError

from pipelines.produce import produce_messages
from pipelines.runner.counts import counts_from_result, format_counts
from schemas import Origin
from tests.support.kafka_fixtures import consume_all
from tests.support.ports import free_port
from transforms.ingest.parse import dead_letter_row
from transforms.io.kafka.client import (
    PRODUCER_LINGER_MS,
    KafkaFailed,
    answers,
    close_producer,
    message_event_time,
    producer,
    require_all_taken,
    resolve_start_offset,
    send_or_refusal,
)
from transforms.io.kafka.commit import (
    CommitOffsetsAfterLake,
    _CommitFn,
    committable_position,
    new_ledger,
    record_chunk,
    record_durable,
)
from transforms.io.kafka.partitions import UNBOUNDED_STOP, PartitionToRead
from transforms.io.kafka.source import MESSAGES, PROGRESS, ReadKafkaMessages, ReadProgress, _UnboundedReadFn
from transforms.io.lake.writer import write_table


def _chunk(start, next_offset, offsets):
    return ReadProgress("t", 0, start, next_offset, tuple(offsets))


def test_the_kafka_client_computes_record_checksums_in_c():
    # kafka-python checks the CRC-32C of every record batch it reads and computes it for every batch it sends; without
    # the crc32c extension (the kafka-python[crc32c] extra in setup.py) it loops over the bytes in Python, about a
    # quarter of a millisecond for each 2 KB message on this machine.
    from kafka.record import util
    from kafka.record._crc32c import crc as pure_python

    assert util._crc32c is not pure_python
    assert util.calc_crc32c(memoryview(b"123456789")) == 0xE3069283  # the CRC-32C check value


def test_producers_wait_for_every_replica_and_batch_unless_a_caller_says_otherwise(kafka_bootstrap):  # noqa: F811
    connection = {"bootstrap_servers": kafka_bootstrap, "client_id": "groundwatch-test"}
    batching, eager = producer(connection), producer(connection, linger_ms=0)
    try:
        assert batching.config["acks"] == eager.config["acks"] == -1  # kafka-python's spelling of acks="all"
        assert (batching.config["linger_ms"], eager.config["linger_ms"]) == (PRODUCER_LINGER_MS, 0)
        assert batching.config["client_id"] == "groundwatch-test"  # the connection's settings pass through
    finally:
        batching.close()
        eager.close()


def test_a_record_the_broker_refuses_leaves_the_producer_usable(kafka_bootstrap, new_topic):  # noqa: F811
    """kafka-python 3.x's idempotent producer, its default, fails every record after a refused one, to any
    topic, with the refusal's error (here, before `enable_idempotence=False`: all four)."""
    small, other = new_topic(config={"max.message.bytes": "300"}), new_topic()
    sender = producer({"bootstrap_servers": kafka_bootstrap})
    try:
        first = answers(sender, [sender.send(small, value=b"x" * 400), sender.send(small, value=b"fits")])
        later = answers(sender, [sender.send(small, value=b"fits too"), sender.send(other, value=b"elsewhere")])
    finally:
        sender.close()
    assert [type(e).__name__ if e else None for e in first] == ["MessageSizeTooLargeError", None]
    assert later == [None, None]
    assert [r.value for r in consume_all(kafka_bootstrap, small)] == [b"fits", b"fits too"]


def test_every_record_is_answered_and_those_not_taken_are_counted_in_one_line(kafka_bootstrap, new_topic):  # noqa: F811
    """`require_all_taken` over what `send_or_refusal` gave: futures and refusals before sending. A batch the
    broker refused and split leaves `close` cut short by kafka-python's "Future not done"; `close_producer`
    closes all the same."""
    from kafka.errors import KafkaConnectionError, KafkaTimeoutError

    small = new_topic(config={"max.message.bytes": "300"})
    servers = f"--bootstrap-servers {kafka_bootstrap}"
    sender = producer({"bootstrap_servers": kafka_bootstrap})
    try:
        sent = [send_or_refusal(sender, small, value=v) for v in (b"fits", b"x" * 400, b"y" * 2_000_000)]
        assert isinstance(sent[2], MessageSizeTooLargeError)  # over the largest request: refused before sending
        with pytest.raises(KafkaFailed) as raised:
            require_all_taken(sender, sent, kafka_bootstrap, small, "messages")
        assert str(raised.value) == (
            f"Kafka at {servers}: 2 of 3 messages to {small} not taken, the first: [Error 10] MessageSizeTooLargeError"
        )
        away = [KafkaTimeoutError("Expiring 2 record(s)"), KafkaConnectionError("111")]  # as kafka-python says them
        with pytest.raises(KafkaFailed, match=rf"^cannot reach Kafka at {servers}: 2 of 3 alerts to t unanswered, "):
            require_all_taken(sender, [*away, sent[0]], kafka_bootstrap, "t", "alerts")

        for _ in range(5):  # records queued together, refused as one batch and split, still unanswered
            sender.send(small, value=b"z" * 400)
    finally:
        close_producer(sender)
    assert sender._closed
    assert [r.value for r in consume_all(kafka_bootstrap, small)] == [b"fits"]


def test_ledger_commits_only_through_durable_chunks_in_order():
    ledger = new_ledger()
    record_chunk(ledger, _chunk(0, 3, [0, 1, 2]))
    record_chunk(ledger, _chunk(3, 6, [3, 5]))  # offset 4 sampled out: nothing to wait for
    assert committable_position(ledger) == 0
    record_durable(ledger, [0, 1, 3, 5])
    assert committable_position(ledger) == 0  # offset 2 still missing holds everything after it
    record_durable(ledger, [2])
    assert committable_position(ledger) == 6


def test_ledger_waits_for_a_missing_chunk_and_forgets_redeliveries():
    ledger = new_ledger()
    record_chunk(ledger, _chunk(10, 12, [10, 11]))
    record_chunk(ledger, _chunk(15, 17, [15, 16]))  # 12..14 not reported yet
    record_durable(ledger, [10, 11, 15, 16])
    assert committable_position(ledger) == 12
    record_chunk(ledger, _chunk(12, 15, []))  # a gap chunk: markers only
    assert committable_position(ledger) == 17
    record_durable(ledger, [11, 16])  # redelivered rows of committed offsets
    assert committable_position(ledger) == 17 and not ledger["durable"]


def test_ledger_notes_nothing_of_an_idle_chunk_even_where_a_chunk_starts():
    ledger = new_ledger()
    record_chunk(ledger, _chunk(0, 3, [0, 1, 2]))
    record_chunk(ledger, _chunk(0, 0, []))  # idle at the start: must not replace the chunk read from there
    record_chunk(ledger, _chunk(3, 3, []))  # idle after it
    assert ledger["chunks"] == {0: (3, frozenset({0, 1, 2}))}
    record_durable(ledger, [0, 1])
    assert committable_position(ledger) == 0
    record_durable(ledger, [2])
    assert committable_position(ledger) == 3


def test_start_offset_prefers_commits_within_what_still_exists():
    assert resolve_start_offset(None, 5, 20, "committed") == 5
    assert resolve_start_offset(12, 5, 20, "committed") == 12
    assert resolve_start_offset(2, 5, 20, "committed") == 5  # retention deleted it
    assert resolve_start_offset(12, 5, 20, "latest") == 20
    assert resolve_start_offset(12, 5, 20, "earliest") == 5
    with pytest.raises(ValueError):
        resolve_start_offset(None, 0, 0, "newest")


def test_message_event_time_reads_the_timestamp_field_or_falls_back():
    assert message_event_time(b'{"timestamp": "2026-11-29T09:00:00Z"}', 1.0) == 1795942800.0
    assert message_event_time(b'{"timestamp": 1795942800000}', 1.0) == 1795942800.0
    assert message_event_time(b'{"timestamp": "2026-11-29T09:00:00"}', 1.0) == 1.0  # no zone: not trusted
    assert message_event_time(b"\xff not json", 2.0) == 2.0
    assert message_event_time(b"[1, 2]", 3.0) == 3.0


@pytest.mark.kafka
def test_bounded_read_steps_over_transaction_markers_and_aborted_records(kafka_bootstrap, new_topic):  # noqa: F811
    from kafka import KafkaProducer

    topic = new_topic()
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"tx-{topic}")
    producer.init_transactions()
    for batch, commit in (([b"a0", b"a1", b"a2"], True), ([b"x0", b"x1"], False), ([b"b0", b"b1"], True)):
        producer.begin_transaction()
        for value in batch:
            producer.send(topic, value)
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()
    # Offsets: a0 a1 a2 =0..2, marker 3, x0 x1 = 4..5 (aborted), marker 6, b0 b1 = 7..8, marker 9; end = 10.

    with BeamPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        read = p | ReadKafkaMessages(
            {"bootstrap_servers": kafka_bootstrap}, [topic], start_from="earliest", bounded=True, max_records=2
        )
        offsets = read[MESSAGES] | "Offsets" >> beam.Map(lambda m: (m[0], m[1].offset))
        assert_that(offsets, equal_to([(b"a0", 0), (b"a1", 1), (b"a2", 2), (b"b0", 7), (b"b1", 8)]), label="Records")
        covered = read[PROGRESS] | "Covered" >> beam.FlatMap(lambda c: range(c.start, c.next))
        assert_that(covered, equal_to(list(range(10))), label="ChunksChainToTheEnd")


def test_a_commit_the_broker_refuses_is_counted_and_named_in_the_run_summary(tmp_path):
    """Three records read and durably in the lake (as dead letters), and no broker at the group's address:
    the commit stage counts the failed commit, and the run's summary says so."""
    port = free_port()  # nothing listens there
    now = datetime.now(UTC)
    origins = [Origin(source="kafka:t", partition=0, offset=offset) for offset in range(3)]
    rows = [dead_letter_row(b"{bad", o, stage="parse", error="malformed_json: x", received_at=now) for o in origins]
    paths = write_table(str(tmp_path), "dead_letters", rows)

    p = beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"]))
    progress = p | "Progress" >> beam.Create([_chunk(0, 3, [0, 1, 2])])
    lake_files = p | "LakeFiles" >> beam.Create(paths)
    _ = {"progress": progress, "lake_files": lake_files} | CommitOffsetsAfterLake(
        {"bootstrap_servers": f"127.0.0.1:{port}", "bootstrap_timeout_ms": 500}, "group"
    )
    result = p.run()
    result.wait_until_finish()

    counts = counts_from_result(result)
    failures = counts.offset_commit_failures
    assert failures >= 1  # the commit is tried again with each later event of the partition
    summary = format_counts(counts, str(tmp_path))
    assert f"offset commits {failures:>8} failed (retried; uncommitted offsets are read again)" in summary


def test_a_partitions_failing_commits_are_logged_the_first_time_and_every_tenth(caplog):
    """An outage is not a flood of lines: of twelve commits in a row that fail (no broker at the address), the
    first and the tenth say so, each with the partition, the offset and the error."""
    commit = _CommitFn({"bootstrap_servers": f"127.0.0.1:{free_port()}", "bootstrap_timeout_ms": 100}, "group")
    assert [commit._commit("t", 0, 5) for _ in range(12)] == [False] * 12
    said = [r.getMessage() for r in caplog.records if r.name == "transforms.io.kafka.commit"]
    assert [m.split(": ", 1)[0] for m in said] == [
        "offset commit of t[0] at 5 failed (1 in a row)",
        "offset commit of t[0] at 5 failed (10 in a row)",
    ]
    assert all("; kept, and retried with the partition's next element" in m for m in said)
    assert commit._failing[("t", 0)].in_a_row == 12


def _stream_fn(bootstrap: str) -> _UnboundedReadFn:
    return _UnboundedReadFn(
        {"bootstrap_servers": bootstrap}, group_id=None, bounded=False, max_records=100, max_seconds=30.0,
        event_time="kafka", out_of_order_s=0.0, lake_bound=None, stall_seconds=60.0,
    )  # fmt: skip


def _stream_reading(fn: _UnboundedReadFn, topic: str, start: int):
    """A stream's partition read from `start` (a bundle's worth: a chunk, then a checkpoint), not yet run, and
    its tracker, which a test may split as a runner would."""
    tracker = ThreadsafeRestrictionTracker(fn.create_tracker(OffsetRange(start, UNBOUNDED_STOP)))
    partition = PartitionToRead(topic, 0, "earliest")
    return tracker, fn.read(partition, RestrictionTrackerView(tracker), ManualWatermarkEstimator(None))


def _stream_read(fn: _UnboundedReadFn, topic: str, start: int) -> list:
    return list(_stream_reading(fn, topic, start)[1])


def _progress(outputs: list) -> list[tuple[int, int]]:
    return [(o.value.start, o.value.next) for o in outputs if isinstance(o, TaggedOutput) and o.tag == PROGRESS]


@pytest.mark.kafka
def test_a_stream_reports_its_idle_chunks_as_empty_ranges(kafka_bootstrap, new_topic):  # noqa: F811
    """An idle partition's reads each say so (an empty range): the commit stage's chance to retry a commit."""
    topic = new_topic()
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, [b"m0", b"m1"])
    fn = _stream_fn(kafka_bootstrap)
    try:
        assert _progress(_stream_read(fn, topic, 0)) == [(0, 2)]
        idle = _stream_read(fn, topic, 2)
    finally:
        fn.teardown()
    assert _progress(idle) == [(2, 2)]
    assert not [o for o in idle if isinstance(o, TimestampedValue)]


@pytest.mark.kafka
def test_a_stream_chunk_the_runner_splits_reports_only_what_it_read(kafka_bootstrap, new_topic):  # noqa: F811
    """A runner may checkpoint a stream's read while it runs (a split at the next offset): the chunk's progress
    then ends where the split put the range's end, never at the unbounded stop (which, once durable, would be
    committed)."""
    topic = new_topic()
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, [b"m0", b"m1", b"m2"])
    fn = _stream_fn(kafka_bootstrap)
    threadsafe, reading = _stream_reading(fn, topic, 0)
    try:
        first = next(reading)
        assert first.value[1].offset == 0
        primary, residual = threadsafe.try_split(0)  # what a runner's checkpoint asks
        rest = list(reading)
    finally:
        fn.teardown()
    assert (primary.stop, residual.start) == (1, 1)
    assert _progress(rest) == [(0, 1)]
    assert not [o for o in rest if isinstance(o, TimestampedValue)]  # offsets 1 and 2 are the residual's


@pytest.mark.kafka
def test_a_split_below_transaction_markers_ends_the_chunk_at_the_split(kafka_bootstrap, new_topic):  # noqa: F811
    """The offsets a chunk steps over (here a transaction's commit marker, offset 1) are claimed too; when the
    runner split the range below them, that claim fails and the chunk ends at the split, not past it."""
    from kafka import KafkaProducer

    topic = new_topic()
    transactional = KafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"tx-{topic}")
    transactional.init_transactions()
    transactional.begin_transaction()
    transactional.send(topic, b"a0")
    transactional.commit_transaction()  # a0 at offset 0, its commit marker at 1
    transactional.close()
    fn = _stream_fn(kafka_bootstrap)
    threadsafe, reading = _stream_reading(fn, topic, 0)
    try:
        first = next(reading)
        assert first.value[1].offset == 0
        threadsafe.try_split(0)  # the range is now [0, 1): the marker is the residual's
        rest = list(reading)
    finally:
        fn.teardown()
    assert _progress(rest) == [(0, 1)]


class _HeldState:
    """Beam's per-key value state, held in memory: the commit DoFn's ledger, called outside a pipeline."""

    def __init__(self):
        self.value = None

    def read(self):
        return self.value

    def write(self, value):
        self.value = value


@pytest.mark.kafka
def test_a_commit_that_failed_is_made_on_the_partitions_next_idle_chunks(private_broker, caplog):  # noqa: F811
    """End to end with a real broker: it is away when the rows become durable, comes back, and no new record
    arrives. Idle chunks make the commit, asking at most every `COMMIT_RETRY_SECONDS`, and the group's offset is
    the one the lake holds. The worker's log says when the partition's commits started failing and when one
    was made again."""
    from tests.support.kafka_fixtures import committed_offsets, create_topic, wait_for

    bootstrap = private_broker.bootstrap
    topic = create_topic(bootstrap, "gw-retry")
    commit = _CommitFn({"bootstrap_servers": bootstrap, "request_timeout_ms": 5000}, "g-retry")
    ledger, key = _HeldState(), (topic, 0)
    idle = (key, ("chunk", ReadProgress(topic, 0, 3, 3)))
    try:
        first = list(commit.process((key, ("chunk", ReadProgress(topic, 0, 0, 3, (0, 1, 2)))), ledger))
        assert first == [(topic, 0, 0)]  # where the group starts
        assert list(commit.process((key, ("durable", (0, 1))), ledger)) == []  # offset 2 not in the lake yet
        private_broker.stop()
        assert list(commit.process((key, ("durable", (2,))), ledger)) == []  # committable, but no broker
        assert (ledger.value["position"], ledger.value["committed"]) == (3, 0)
        failed_at = commit._failing[key].last_at
        assert list(commit.process(idle, ledger)) == []
        assert commit._failing[key].last_at == failed_at  # an idle chunk right after a failure does not ask again
        assert private_broker.start() == bootstrap  # the same ports: the commit function knows no others
        # The group's coordinator may take a while after the restart: idle chunks keep coming, one a second.
        made = wait_for(lambda: list(commit.process(idle, ledger)), timeout_s=90, what="the retried commit")
    finally:
        commit.teardown()
    assert made == [(topic, 0, 3)]
    assert committed_offsets(bootstrap, "g-retry", topic, 1)[0] == {0: 3}
    said = [r.getMessage() for r in caplog.records if r.name == "transforms.io.kafka.commit"]
    assert said[0].startswith(f"offset commit of {topic}[0] at 3 failed (1 in a row): ")
    recovered = re.fullmatch(rf"offset commit of {re.escape(topic)}\[0\] made at 3, after (\d+) that failed", said[-1])
    assert recovered is not None
    failed = int(recovered[1])  # the first failure, and every tenth, said so; not each one of an outage
    assert len(said) == 1 + failed // 10 + 1
