"""Which partitions of a Kafka topic to read: listed once for a bounded read, watched for a stream.

    partitions = p | beam.Impulse() | beam.ParDo(ListPartitionsFn(connection, ["rag.responses"], "committed"))
    partitions = p | beam.Create(["rag.responses"]) | beam.ParDo(WatchPartitionsFn(connection, "committed", 60))
    # -> PartitionToRead("rag.responses", 0, "committed"), PartitionToRead("rag.responses", 1, "committed"), ...

A topic can gain partitions while a stream runs (its producers need more throughput); a stream that read only
the partitions listed at start would never read the new ones, which is data loss. So a stream watches: a
splittable DoFn per topic whose restriction is the range of partition numbers (Kafka numbers a topic's
partitions 0..n-1 and only ever adds to them). Each call lists the topic, claims and emits the partitions not
seen yet, then checkpoints for `interval_s` seconds.

A partition found after the stream started holds only records written since, so it is read from its
beginning (or from the group's committed offset, should a previous run have committed one), whatever
`start_from` says for the partitions present at start ("latest" would skip what arrived before the discovery).

The watcher's output carries no event time: its watermark is kept ahead of the wall clock so that it never
holds back the watermark of the records read downstream, which comes from the reader's own estimator.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import closing
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange, OffsetRestrictionTracker
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.utils.timestamp import Duration, Timestamp
from kafka.errors import KafkaError

from transforms.io.kafka.client import KAFKA_METRICS_NAMESPACE, consumer

__all__ = [
    "DISCOVERY_INTERVAL_SECONDS",
    "MANUAL_WATERMARK",
    "OWN_RESTRICTIONS",
    "UNBOUNDED_STOP",
    "CheckpointOnlyTracker",
    "ListPartitionsFn",
    "PartitionToRead",
    "WatchPartitionsFn",
    "discovered_start",
    "topic_partitions",
]

UNBOUNDED_STOP = 2**63 - 1
DISCOVERY_INTERVAL_SECONDS = 60.0
"""How often a stream looks for new partitions by default: adding partitions is a rare, planned operation,
and their first records wait at most this long (they are read from the partition's beginning)."""


class PartitionToRead(NamedTuple):
    """One partition for the reader, and where its read starts when the group has not committed (`START_FROM`).

    `start` and `stop`, when given, are the exact offset range to read (a pass of a catch-up planned by the
    caller, `pipelines.runner.catch_up`); otherwise the read resolves where to start when it begins.
    """

    topic: str
    partition: int
    start_from: str
    start: int | None = None
    stop: int | None = None


def discovered_start(start_from: str) -> str:
    """Where a partition added while the stream runs starts: the group's commit if asked for, else its beginning."""
    return "committed" if start_from == "committed" else "earliest"


def topic_partitions(connection: Mapping[str, Any], topic: str) -> list[int] | None:
    """The topic's partition numbers, asked of the cluster now (a fresh client: a long-lived one answers from
    metadata cached for minutes); None when the topic does not exist."""
    with closing(consumer(connection, None)) as client:
        partitions = client.partitions_for_topic(topic)
    return sorted(partitions) if partitions else None


class ListPartitionsFn(beam.DoFn):
    """Every partition of the topics, listed once (a bounded read's end offsets are snapshotted at start too)."""

    def __init__(self, connection: Mapping[str, Any], topics: list[str], start_from: str) -> None:
        self._connection = dict(connection)
        self._topics = list(topics)
        self._start_from = start_from

    def process(self, _: object) -> Iterator[PartitionToRead]:
        for topic in self._topics:
            partitions = topic_partitions(self._connection, topic)
            if partitions is None:
                raise ValueError(f"Kafka topic {topic!r} does not exist or has no partitions")
            for partition in partitions:
                yield PartitionToRead(topic, partition, self._start_from)


class CheckpointOnlyTracker(OffsetRestrictionTracker):
    """An offset range that splits only to checkpoint (fraction 0): one reader, in order.

    Runners also ask SDFs for fractional splits to spread work; for a Kafka partition that would hand an
    unbounded range's far half (offsets that do not exist yet) to a second reader, and break the chain of
    chunks the offset ledger commits by; for the watcher, a second one would list the same topic again.
    Parallelism comes from partitions instead.
    """

    def try_split(self, fraction_of_remainder: float) -> tuple[OffsetRange, OffsetRange] | None:
        if fraction_of_remainder != 0:
            return None
        split: tuple[OffsetRange, OffsetRange] | None = super().try_split(fraction_of_remainder)  # (primary, residual)
        return split


# Parameters of an SDF that is its own restriction provider (RestrictionParam without one) and sets its
# watermark by hand: the watcher here and the partition reader of `transforms.io.kafka.source`.
OWN_RESTRICTIONS = beam.DoFn.RestrictionParam()
MANUAL_WATERMARK = beam.DoFn.WatermarkEstimatorParam(ManualWatermarkEstimator.default_provider())


class WatchPartitionsFn(beam.DoFn, RestrictionProvider):
    """Each partition of a topic once: those present at start, then every one added while the stream runs."""

    def __init__(
        self, connection: Mapping[str, Any], start_from: str, interval_s: float = DISCOVERY_INTERVAL_SECONDS
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"the partition discovery interval must be > 0 seconds, got {interval_s}")
        self._connection = dict(connection)
        self._start_from = start_from
        self._interval_s = interval_s
        self._discovered = Metrics.counter(KAFKA_METRICS_NAMESPACE, "partitions_discovered")

    def initial_restriction(self, topic: str) -> OffsetRange:
        return OffsetRange(0, UNBOUNDED_STOP)

    def create_tracker(self, restriction: OffsetRange) -> CheckpointOnlyTracker:
        return CheckpointOnlyTracker(restriction)

    def restriction_size(self, topic: str, restriction: OffsetRange) -> int:
        return 0

    def truncate(self, topic: str, restriction: OffsetRange) -> None:
        return None  # on drain, look for nothing more

    # Beam is read as Any (pyproject.toml), so mypy sees an untyped decorator; it marks `process` and returns it.
    @beam.DoFn.unbounded_per_element()  # type: ignore[untyped-decorator]
    def process(
        self,
        topic: str,
        tracker: CheckpointOnlyTracker = OWN_RESTRICTIONS,
        watermark: ManualWatermarkEstimator = MANUAL_WATERMARK,
    ) -> Iterator[PartitionToRead]:
        first = tracker.current_restriction().start
        try:
            partitions = topic_partitions(self._connection, topic)
        except KafkaError:
            if first == 0:
                raise
            partitions = []  # the broker is away (the readers wait for it too): look again next time
        if partitions is None and first == 0:
            raise ValueError(f"Kafka topic {topic!r} does not exist or has no partitions")
        start_from = self._start_from if first == 0 else discovered_start(self._start_from)
        count = partitions[-1] + 1 if partitions else first  # numbered 0..count-1; none known: nothing new
        for partition in range(first, count):
            if not tracker.try_claim(partition):
                return
            if first:
                self._discovered.inc()
            yield PartitionToRead(topic, partition, start_from)
        # Ahead of the wall clock until the next look, so that this output never holds back the records' watermark.
        watermark.set_watermark(Timestamp.of(time.time() + 2 * self._interval_s))
        tracker.defer_remainder(Duration(seconds=self._interval_s))
