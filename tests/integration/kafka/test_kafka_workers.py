"""A bounded catch-up (`groundwatch monitor --until-caught-up`) on several worker processes, against a real broker.

The bounded Kafka read never defers (the multi-worker FnApiRunner drops deferred residuals), so two worker
processes account for every message exactly once and commit the offsets; a large backlog gets one worker per
core by default; a partition that stops making progress fails the read instead of spinning.
"""

from __future__ import annotations

import os

import apache_beam as beam
import pytest
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.monitor import PARALLEL_BACKLOG_RECORDS, local_workers, pipeline_options, run, use_local_workers
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import (
    assert_accounted_once,
    committed_offsets,
    expected_fates,
    monitor_argv,
    offsets_by_value,
)
from transforms.io.kafka.partitions import PartitionToRead
from transforms.io.kafka.source import MESSAGES, PROGRESS, ReadKafkaMessages, _BoundedReadFn

TWO_WORKERS = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")


@pytest.mark.parametrize(
    ("backlog", "cores", "workers"),
    [
        (0, 2, 1),
        (PARALLEL_BACKLOG_RECORDS - 1, 8, 1),  # a small backlog: starting workers costs more than it saves
        (PARALLEL_BACKLOG_RECORDS, 1, 1),
        (PARALLEL_BACKLOG_RECORDS, 2, 2),
        (100 * PARALLEL_BACKLOG_RECORDS, 16, 4),
    ],
)
def test_local_workers_by_backlog_and_cores(backlog, cores, workers):
    assert local_workers(backlog, cores) == workers


def _options(*extra: str) -> tuple[PipelineOptions, list[str]]:
    argv = monitor_argv("127.0.0.1:1", "t", "/tmp/unused-lake", *extra)
    return pipeline_options(argv), argv


def test_a_large_backlog_on_the_default_runner_gets_worker_processes():
    options, argv = _options()
    where = use_local_workers(options, argv, PARALLEL_BACKLOG_RECORDS)
    direct, expected = options.view_as(DirectOptions), local_workers(PARALLEL_BACKLOG_RECORDS, os.cpu_count() or 1)
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    assert direct.direct_num_workers == expected
    if expected > 1:
        assert direct.direct_running_mode == "multi_processing" and where.endswith("(multi_processing)")
    small, argv = _options()
    assert use_local_workers(small, argv, PARALLEL_BACKLOG_RECORDS - 1) == "FnApiRunner, in process"
    assert small.view_as(DirectOptions).direct_num_workers == 1


@pytest.mark.parametrize(
    "flags", [["--direct_num_workers=1"], ["--direct_running_mode=in_memory"], ["--runner=FnApiRunner"]]
)
def test_worker_flags_or_a_named_runner_are_left_as_given(flags):
    options, argv = _options(*flags)
    assert use_local_workers(options, argv, 100 * PARALLEL_BACKLOG_RECORDS) == "FnApiRunner, in process"
    assert options.view_as(DirectOptions).direct_num_workers == 1


def test_workers_are_accepted_bounded_and_refused_for_an_unbounded_read_on_the_fnapirunner():
    options, _ = _options(*TWO_WORKERS)
    assert options.view_as(DirectOptions).direct_num_workers == 2
    streaming = [a for a in monitor_argv("127.0.0.1:1", "t", "/tmp/x") if a != "--until_caught_up"]
    with pytest.raises(ValueError, match="--until-caught-up"):
        pipeline_options([*streaming, "--runner=FnApiRunner", "--direct_num_workers=2"])


@pytest.mark.kafka
def test_two_worker_processes_account_for_every_message_once_and_commit(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    topic, rate = new_topic(partitions=3), 0.8
    messages = generated_messages(2500, seed=23, malformed_fraction=0.05, start=DEFAULT_START)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 2500
    produced = offsets_by_value(kafka_bootstrap, topic)
    fates = expected_fates(messages, rate)
    assert len(produced) == 2500 and fates["dead"] and fates["sampled_out"]

    lake, said = tmp_path / "lake", []
    # Chunks of 200 records: each partition reports several chunks, all from one `process` call.
    argv = monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={rate}", "--checkpoint_records=200", *TWO_WORKERS)
    counts = run(argv, out=said.append)
    assert said[0].startswith("runner         FnApiRunner, 2 workers (multi_processing), backlog 2500")
    assert_accounted_once(str(lake), topic, produced, fates, counts)

    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 3)
    assert committed == ends and sum(ends.values()) == 2500

    first_run = len(said)
    again = run(monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={rate}", *TWO_WORKERS), out=said.append)
    runner_line = next(line for line in said[first_run:] if line.startswith("runner "))
    assert again.read == 0 and "backlog 0" in runner_line


@pytest.mark.kafka
def test_two_workers_step_over_transaction_markers_and_aborted_records(kafka_bootstrap, new_topic):  # noqa: F811
    from kafka import KafkaProducer

    topic = new_topic(partitions=2)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"tx-{topic}")
    producer.init_transactions()
    for batch, commit in (([b"a0", b"a1", b"a2"], True), ([b"x0", b"x1"], False), ([b"b0", b"b1"], True)):
        producer.begin_transaction()
        for value in batch:
            for partition in (0, 1):
                producer.send(topic, value, partition=partition)
        producer.flush()
        producer.commit_transaction() if commit else producer.abort_transaction()
    producer.close()
    # In each partition: a0 a1 a2 = 0..2, marker 3, x0 x1 = 4..5 (aborted), marker 6, b0 b1 = 7..8, marker 9.

    options = PipelineOptions(["--runner=FnApiRunner", *TWO_WORKERS])
    with BeamPipeline(options=options) as p:
        read = p | ReadKafkaMessages(
            {"bootstrap_servers": kafka_bootstrap}, [topic], start_from="earliest", bounded=True, max_records=2
        )
        offsets = read[MESSAGES] | "Offsets" >> beam.Map(lambda m: (m[1].partition, m[0], m[1].offset))
        kept = [(b"a0", 0), (b"a1", 1), (b"a2", 2), (b"b0", 7), (b"b1", 8)]
        assert_that(offsets, equal_to([(part, v, o) for part in (0, 1) for v, o in kept]), label="Records")
        covered = read[PROGRESS] | "Covered" >> beam.FlatMap(
            lambda c: [(c.partition, o) for o in range(c.start, c.next)]
        )
        assert_that(covered, equal_to([(part, o) for part in (0, 1) for o in range(10)]), label="ChunksChainToTheEnd")


def _read_fn(bootstrap: str, stall_seconds: float) -> _BoundedReadFn:
    return _BoundedReadFn(
        {"bootstrap_servers": bootstrap},
        group_id=None,
        bounded=True,
        max_records=3,
        max_seconds=1.0,
        event_time="kafka",
        out_of_order_s=0.0,
        lake_bound=None,
        stall_seconds=stall_seconds,
    )


def _drain(fn: _BoundedReadFn, topic: str, restriction: OffsetRange, seen: list) -> None:
    tracker = fn.create_tracker(restriction)
    try:
        seen.extend(fn.read(PartitionToRead(topic, 0, "earliest"), tracker, None))
    finally:
        fn.teardown()


@pytest.mark.kafka
def test_a_bounded_read_short_of_its_end_fails_naming_the_partition(kafka_bootstrap, new_topic):  # noqa: F811
    topic = new_topic()
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, [b"m%d" % i for i in range(5)])
    fn, seen = _read_fn(kafka_bootstrap, stall_seconds=2.0), []
    # An end offset the log no longer reaches (truncated by an unclean leader election, say).
    with pytest.raises(RuntimeError, match=rf"Kafka {topic}\[0\]: no record and no progress .* at offset 5"):
        _drain(fn, topic, OffsetRange(0, 8), seen)
    assert [m.value[1].offset for m in seen if isinstance(m, beam.window.TimestampedValue)] == [0, 1, 2, 3, 4]


@pytest.mark.kafka
def test_a_bounded_read_fails_when_the_broker_goes_away_mid_read(private_broker):  # noqa: F811
    from tests.support.kafka_fixtures import create_topic

    bootstrap = private_broker.bootstrap
    topic = create_topic(bootstrap, "gw-stall")
    # About 4 MiB: more than one fetch (1 MiB per partition), so the read needs the broker after its start.
    produce_messages({"bootstrap_servers": bootstrap}, topic, [b"%06d" % i + b"x" * 2000 for i in range(2000)])
    fn = _read_fn(bootstrap, stall_seconds=3.0)
    partition = PartitionToRead(topic, 0, "earliest")
    restriction = fn.initial_restriction(partition)
    assert restriction == OffsetRange(0, 2000)
    reading = fn.read(partition, fn.create_tracker(restriction), None)
    first = next(reading)
    assert first.value[1].offset == 0
    private_broker.stop()
    seen = [first]
    try:
        with pytest.raises(RuntimeError, match=rf"Kafka {topic}\[0\]: no record and no progress .*broker unreachable"):
            seen.extend(m for m in reading if isinstance(m, beam.window.TimestampedValue))
    finally:
        fn.teardown()
    assert 1 <= len(seen) < 2000  # what was fetched before the broker left, not the whole range
