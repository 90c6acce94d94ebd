"""Read a Kafka topic into Beam as raw messages, with a splittable DoFn over (topic, partition) on kafka-python.

    messages = p | "ReadFromKafka" >> ReadKafkaMessages(
        {"bootstrap_servers": "127.0.0.1:39092"}, ["rag.responses"], group_id="groundwatch", bounded=True)
    messages[MESSAGES]   # (raw_bytes, Origin("kafka:<topic>", partition, offset)), timestamped by event time
    messages[PROGRESS]   # ReadProgress: which offsets of a partition one chunk covered (for committing offsets)
    messages[LATE]       # (raw_bytes, Origin, reason): records a streaming runner would drop as late (see `late`)

Each (topic, partition) is one element (`PartitionToRead`) whose restriction is an `OffsetRange`:

- bounded: from the group's committed offset (or earliest/latest when it has none) to the end offset
  snapshotted when the restriction is made; the read ends there. Runs on the FnApiRunner (catch-up,
  backfills, tests). The whole range is read in one `process` call, never deferred, still reporting one
  `ReadProgress` per `max_records` records (`max_seconds` does not apply): the multi-worker FnApiRunner
  drops deferred residuals (apache/beam#19842), so without them a bounded read is safe on several worker
  processes. A partition that makes no progress for `stall_seconds` (broker gone, log truncated below the
  end seen at start) fails the read with an error naming it rather than spinning.
- unbounded: to the end of time. The DoFn reads at most `max_records` records or `max_seconds` seconds,
  then checkpoints with `defer_remainder` so the runner passes the chunk downstream and resumes later.
  Partitions added to the topic while the stream runs are found within `discovery_interval_s` and read
  from their beginning (`transforms.io.kafka.partitions`).

Offsets have gaps (compaction, transaction markers, aborted transactions under read_committed): when the
consumer's position passes the restriction's stop with no record left below it, the stop itself is claimed,
which is what `OffsetRestrictionTracker.check_done` needs. Event time is the Kafka record timestamp, or the
message's own `timestamp` field (`event_time="message"`); the watermark follows the latest event time read
minus `max_out_of_order_seconds`, and advances to the wall clock minus that bound while a partition is idle.

A streaming runner drops, without a trace, an element whose window closed (plus allowed lateness) before the
watermark. Given `late(raw, watermark_s) -> reason | None`, an unbounded read sends such records to `[LATE]`
instead, with the reason, judged against the highest watermark the read has reported for any partition of
the topic (the runner's watermark is never ahead of it), so the caller can dead-letter and count them.

Consumers are built lazily once per DoFn instance and re-assigned per restriction, never per element.
The connection is a dict of kafka-python client settings (`transforms.io.kafka.client`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import apache_beam as beam
from apache_beam.io.restriction_trackers import OffsetRange
from apache_beam.io.watermark_estimators import ManualWatermarkEstimator
from apache_beam.metrics import Metrics
from apache_beam.pvalue import PBegin
from apache_beam.transforms.core import RestrictionProvider
from apache_beam.transforms.window import TimestampedValue
from apache_beam.utils.timestamp import Duration, Timestamp

from schemas import Origin
from transforms.io.kafka.client import (
    KAFKA_METRICS_NAMESPACE,
    START_FROM,
    client_config,
    consumer,
    kafka_source,
    message_event_time,
    resolve_start_offset,
)
from transforms.io.kafka.partitions import (
    DISCOVERY_INTERVAL_SECONDS,
    MANUAL_WATERMARK,
    OWN_RESTRICTIONS,
    UNBOUNDED_STOP,
    CheckpointOnlyTracker,
    ListPartitionsFn,
    PartitionToRead,
    WatchPartitionsFn,
)

if TYPE_CHECKING:  # kafka-python is imported where a client is built
    from kafka import KafkaConsumer, TopicPartition

__all__ = ["BOUNDED_STALL_SECONDS", "LATE", "MESSAGES", "PROGRESS", "ReadKafkaMessages", "ReadProgress"]

MESSAGES = "messages"
PROGRESS = "progress"
LATE = "late"
BOUNDED_STALL_SECONDS = 120.0
"""How long a bounded read waits on a partition that yields nothing before its end offset before it fails:
long enough for a broker restart (tens of seconds on this machine) or a leader election, short enough that
an unreachable cluster ends the run with an error instead of a silent hang."""


@dataclass(frozen=True)
class ReadProgress:
    """One chunk of a partition read: offsets [start, next) are covered; `offsets` are the records in it
    that must reach the lake before the group may commit past them. A stream reports its idle chunks too, as
    an empty range (start == next)."""

    topic: str
    partition: int
    start: int
    next: int
    offsets: tuple[int, ...] = field(default=())

    @property
    def empty(self) -> bool:
        """No offset covered: a stream's chunk that read nothing."""
        return self.next == self.start


class _ReadArgs(TypedDict):
    """How a partition reader reads (`ReadKafkaMessages`' arguments, checked there)."""

    bounded: bool
    max_records: int
    max_seconds: float
    event_time: str
    out_of_order_s: float
    lake_bound: Callable[[bytes], bool] | None
    stall_seconds: float
    late: Callable[[bytes, float], str | None] | None
    reader_id: str


_Read = Generator[Any, None, None]
"""What a partition read yields: `TimestampedValue`s of `(bytes, Origin)`, and tagged progress and late records."""


class _ReadPartitionFn(beam.DoFn, RestrictionProvider):
    """Read one partition's restriction: emit records, a progress record per chunk, and advance the watermark.

    The DoFn is its own restriction provider (offset ranges bounded by the end offset seen when the range is
    made, or unbounded); the bounded and unbounded subclasses differ only in how `process` is declared.
    """

    def __init__(
        self,
        connection: Mapping[str, Any],
        *,
        group_id: str | None,
        bounded: bool,
        max_records: int,
        max_seconds: float,
        event_time: str,
        out_of_order_s: float,
        lake_bound: Callable[[bytes], bool] | None,
        stall_seconds: float,
        late: Callable[[bytes, float], str | None] | None = None,
        reader_id: str = "",
    ) -> None:
        self._connection = dict(connection)
        self._group_id = group_id
        self._bounded = bounded
        self._max_records = max_records
        self._max_seconds = max_seconds
        self._event_time = event_time
        self._out_of_order_s = out_of_order_s
        self._lake_bound = lake_bound
        self._stall_seconds = stall_seconds
        self._late = late if not bounded else None  # a bounded (batch) run drops no late data
        self._reader_id = reader_id
        self._reader: KafkaConsumer | None = None
        self._offsets_client: KafkaConsumer | None = None
        self._read = Metrics.counter(KAFKA_METRICS_NAMESPACE, "records_read")

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_reader": None, "_offsets_client": None}

    # -- restrictions -----------------------------------------------------------------------------------------
    def initial_restriction(self, element: PartitionToRead) -> OffsetRange:
        from kafka import TopicPartition

        if element.start is not None:
            return OffsetRange(element.start, element.stop)  # planned by the caller

        tp = TopicPartition(element.topic, element.partition)
        if self._offsets_client is None:
            self._offsets_client = consumer(self._connection, self._group_id)
        client = self._offsets_client
        earliest = client.beginning_offsets([tp])[tp]
        latest = client.end_offsets([tp])[tp]
        committed = client.committed(tp) if self._group_id else None
        start = resolve_start_offset(committed, earliest, latest, element.start_from)
        return OffsetRange(start, latest if self._bounded else UNBOUNDED_STOP)

    def create_tracker(self, restriction: OffsetRange) -> CheckpointOnlyTracker:
        return CheckpointOnlyTracker(restriction)

    def restriction_size(self, element: PartitionToRead, restriction: OffsetRange) -> int:
        size: int = 0 if restriction.stop == UNBOUNDED_STOP else restriction.size()
        return size

    def truncate(self, element: PartitionToRead, restriction: OffsetRange) -> None:
        return None  # on drain, read nothing more

    # -- reading ----------------------------------------------------------------------------------------------
    def teardown(self) -> None:
        for client in (self._reader, self._offsets_client):
            if client is not None:
                client.close()
        self._reader = self._offsets_client = None

    def _position_reader(self, tp: TopicPartition, offset: int) -> KafkaConsumer:
        if self._reader is None:
            self._reader = consumer(self._connection, None, max_poll_records=min(self._max_records, 500))
        self._reader.assign([tp])
        self._reader.seek(tp, offset)
        return self._reader

    def read(
        self, element: PartitionToRead, tracker: CheckpointOnlyTracker, watermark: ManualWatermarkEstimator
    ) -> _Read:
        from kafka import TopicPartition

        tp = TopicPartition(element.topic, element.partition)
        restriction = tracker.current_restriction()
        reader = self._position_reader(tp, restriction.start)
        if not self._bounded:
            finished, records, _ = yield from self._read_chunk(tp, reader, tracker, watermark, restriction.start)
            if not finished:
                # Resume right away after a full chunk; after an idle poll, wait a little.
                tracker.defer_remainder(Duration(seconds=0 if records else 1))
            return
        # Bounded: the whole range in this one call, never deferred. The multi-worker FnApiRunner drops
        # deferred residuals (apache/beam#19842), so a checkpoint there would be half a read; chunks of
        # `max_records` still each report their progress, so the offset ledger sees the same chain.
        start, finished = restriction.start, False
        while not finished:
            finished, _, start = yield from self._read_chunk(tp, reader, tracker, watermark, start)

    def _read_chunk(
        self,
        tp: TopicPartition,
        reader: KafkaConsumer,
        tracker: CheckpointOnlyTracker,
        watermark: ManualWatermarkEstimator,
        start: int,
    ) -> Generator[Any, None, tuple[bool, int, int]]:
        """Read one chunk from `start`: yield its records and its `ReadProgress`; return (finished, records, next).

        Unbounded chunks end after `max_records` records or `max_seconds` seconds, or when the log is idle;
        bounded ones after `max_records` records or at the restriction's stop, and raise if the partition
        makes no progress for `stall_seconds` (a broker that stays away, a log truncated below the stop).
        """
        topic, partition = tp.topic, tp.partition
        source, stop = kafka_source(topic), tracker.current_restriction().stop
        started, records = time.monotonic(), 0
        lake_offsets: list[int] = []
        latest_event: float | None = None
        last, finished = start - 1, False
        caught_up: bool | None = False  # None: the broker did not answer
        stalled_since: float | None = None
        while records < self._max_records and (self._bounded or time.monotonic() - started < self._max_seconds):
            batch = reader.poll(timeout_ms=200, max_records=self._max_records - records).get(tp, [])
            for record in batch:
                if not tracker.try_claim(record.offset):
                    finished = True
                    break
                last = record.offset
                raw = record.value if record.value is not None else b""
                event_s = record.timestamp / 1000.0
                if self._event_time == "message":
                    event_s = message_event_time(raw, event_s)
                latest_event = event_s if latest_event is None else max(latest_event, event_s)
                records += 1
                if self._lake_bound is None or self._lake_bound(raw):
                    lake_offsets.append(record.offset)
                origin = Origin(source=source, partition=partition, offset=record.offset)
                reason = self._late(raw, _highest_watermark(self._reader_id, topic)) if self._late else None
                if reason is not None:
                    yield beam.pvalue.TaggedOutput(LATE, (raw, origin, reason))
                else:
                    yield TimestampedValue((raw, origin), event_s)
            if finished:
                break
            position = reader.position(tp)
            if position >= stop:
                tracker.try_claim(stop)  # a gap up to the stop: nothing left to read
                finished = True
                break
            if position - 1 > last:
                # Offsets below the position that held no record (transaction markers, compacted away,
                # aborted): claim them so the next chunk starts at the position and the ledger sees no hole.
                if not tracker.try_claim(position - 1):
                    finished = True  # the runner split the range below the position
                    break
                last = position - 1
            elif not batch and self._bounded:
                stalled_since = stalled_since or time.monotonic()
                self._check_stall(tp, position, stop, time.monotonic() - stalled_since)
                continue
            stalled_since = None
            if not batch and not self._bounded:
                # An empty poll may only mean the fetch is still starting; idle means caught up with the log.
                caught_up = self._caught_up(reader, tp, position)
                if caught_up is not False:
                    break  # caught up, or the broker is away: checkpoint rather than hold the bundle open
        self._read.inc(records)
        # Finished: at the range's end, or the runner split the range (a checkpoint), and then it ends at the split.
        next_offset = tracker.current_restriction().stop if finished else last + 1
        # A stream's chunk with no record (caught up, the broker away) reports its empty range too: that is how
        # the commit stage retries a commit that failed (the broker restarting) on a partition with no new record.
        empty_stream_chunk = not self._bounded and records == 0
        if next_offset > start or lake_offsets or empty_stream_chunk:
            progress = ReadProgress(topic, partition, start, next_offset, tuple(lake_offsets))
            yield beam.pvalue.TaggedOutput(PROGRESS, progress)
        self._advance_watermark(watermark, topic, latest_event, idle=caught_up is True and records == 0)
        return finished, records, next_offset

    def _check_stall(self, tp: TopicPartition, position: int, stop: int, stalled_s: float) -> None:
        """Fail a bounded read that has made no progress for `stall_seconds`, rather than spin silently."""
        if stalled_s < self._stall_seconds:
            return
        raise RuntimeError(
            f"Kafka {tp.topic}[{tp.partition}]: no record and no progress for {stalled_s:.0f}s at offset "
            f"{position}, before the end offset {stop} seen at start (broker unreachable at "
            f"{self._connection.get('bootstrap_servers')}, or the log lost its end); the group's offsets are "
            f"committed only after the lake holds the rows, so a rerun resumes from them"
        )

    @staticmethod
    def _caught_up(reader: KafkaConsumer, tp: TopicPartition, position: int) -> bool | None:
        """Whether the reader is at the end of the partition; None when the broker does not answer."""
        from kafka.errors import KafkaError

        try:
            end: int = reader.end_offsets([tp], timeout_ms=5000)[tp]
            return position >= end
        except KafkaError:
            return None  # a broker restart: the consumer reconnects by itself, try again after a checkpoint

    def _advance_watermark(
        self, watermark: ManualWatermarkEstimator, topic: str, latest_event: float | None, *, idle: bool
    ) -> None:
        if self._bounded:
            return
        candidates = [time.time() - self._out_of_order_s] if idle else []
        if latest_event is not None:
            candidates.append(latest_event - self._out_of_order_s)
        if not candidates:
            return
        proposed = Timestamp.of(max(candidates))
        current = watermark.current_watermark()
        if current is None or proposed > current:
            watermark.set_watermark(proposed)
        _note_watermark(self._reader_id, topic, proposed.micros / 1e6)


# The highest watermark each read (by reader id) has proposed per topic, shared by the DoFn's copies in this
# process: a runner may run partitions in separate bundles and DoFn instances, and its own watermark for the
# records is at most the highest one proposed, so judging lateness against it never lets one slip through.
_HIGHEST_WATERMARKS: dict[tuple[str, str], float] = {}


def _note_watermark(reader_id: str, topic: str, watermark_s: float) -> None:
    key = (reader_id, topic)
    _HIGHEST_WATERMARKS[key] = max(watermark_s, _HIGHEST_WATERMARKS.get(key, watermark_s))


def _highest_watermark(reader_id: str, topic: str) -> float:
    return _HIGHEST_WATERMARKS.get((reader_id, topic), float("-inf"))


class _BoundedReadFn(_ReadPartitionFn):
    def process(
        self,
        element: PartitionToRead,
        tracker: CheckpointOnlyTracker = OWN_RESTRICTIONS,
        watermark: ManualWatermarkEstimator = MANUAL_WATERMARK,
    ) -> _Read:
        yield from self.read(element, tracker, watermark)


class _UnboundedReadFn(_ReadPartitionFn):
    # Beam is read as Any (pyproject.toml), so mypy sees an untyped decorator; it marks `process` and returns it.
    @beam.DoFn.unbounded_per_element()  # type: ignore[untyped-decorator]
    def process(
        self,
        element: PartitionToRead,
        tracker: CheckpointOnlyTracker = OWN_RESTRICTIONS,
        watermark: ManualWatermarkEstimator = MANUAL_WATERMARK,
    ) -> _Read:
        yield from self.read(element, tracker, watermark)


class ReadKafkaMessages(beam.PTransform):
    """Raw messages of Kafka topics as `(bytes, Origin)`, plus the `ReadProgress` of each chunk read.

    Returns a tagged result: `[MESSAGES]`, `[PROGRESS]` and `[LATE]`. `lake_bound(raw) -> bool` says which
    records will produce lake rows (default: all); only those hold back the offset commit. `late(raw,
    watermark_s) -> str | None` (unbounded reads only) names why a record would be dropped as late data.
    `offset_ranges` ({(topic, partition): (start, stop)}, bounded reads only) reads exactly those ranges
    instead of every partition from where the group stands (a catch-up pass, `pipelines.runner.catch_up`).
    """

    def __init__(
        self,
        connection: Mapping[str, Any],
        topics: list[str],
        *,
        group_id: str | None = None,
        bounded: bool = True,
        start_from: str = "committed",
        max_records: int = 500,
        max_seconds: float = 1.0,
        event_time: str = "kafka",
        max_out_of_order_seconds: float = 5.0,
        lake_bound: Callable[[bytes], bool] | None = None,
        stall_seconds: float = BOUNDED_STALL_SECONDS,
        late: Callable[[bytes, float], str | None] | None = None,
        discovery_interval_s: float = DISCOVERY_INTERVAL_SECONDS,
        offset_ranges: Mapping[tuple[str, int], tuple[int, int]] | None = None,
    ) -> None:
        super().__init__()
        client_config(connection)
        if not topics:
            raise ValueError("at least one Kafka topic is needed")
        if start_from not in START_FROM:
            raise ValueError(f"start_from must be one of {START_FROM}, got {start_from!r}")
        if start_from == "committed" and not group_id:
            raise ValueError("start_from='committed' needs a group_id")
        if event_time not in ("kafka", "message"):
            raise ValueError(f"event_time must be 'kafka' or 'message', got {event_time!r}")
        if max_records < 1 or max_seconds <= 0 or max_out_of_order_seconds < 0 or stall_seconds <= 0:
            raise ValueError(
                "max_records >= 1, max_seconds > 0, max_out_of_order_seconds >= 0 and stall_seconds > 0 are required"
            )
        if discovery_interval_s <= 0:
            raise ValueError(f"discovery_interval_s must be > 0, got {discovery_interval_s}")
        if offset_ranges is not None and not bounded:
            raise ValueError("offset_ranges are for a bounded read")
        self._connection = dict(connection)
        self._topics = list(topics)
        self._group_id = group_id
        self._bounded = bounded
        self._start_from = start_from
        self._discovery_interval_s = discovery_interval_s
        self._offset_ranges = dict(offset_ranges) if offset_ranges is not None else None
        self._read_args = _ReadArgs(
            bounded=bounded,
            max_records=max_records,
            max_seconds=max_seconds,
            event_time=event_time,
            out_of_order_s=max_out_of_order_seconds,
            lake_bound=lake_bound,
            stall_seconds=stall_seconds,
            late=late,
            reader_id=uuid.uuid4().hex,
        )

    def expand(self, pbegin: PBegin) -> Any:  # a tagged result: [MESSAGES], [PROGRESS], [LATE]
        fn_class = _BoundedReadFn if self._bounded else _UnboundedReadFn
        read_fn = fn_class(self._connection, group_id=self._group_id, **self._read_args)
        if self._offset_ranges is not None:
            planned = [
                PartitionToRead(topic, partition, self._start_from, start, stop)
                for (topic, partition), (start, stop) in sorted(self._offset_ranges.items())
            ]
            partitions = pbegin | "PlannedPartitions" >> beam.Create(planned)
        elif self._bounded:
            partitions = (
                pbegin
                | "Impulse" >> beam.Impulse()
                | "ListPartitions" >> beam.ParDo(ListPartitionsFn(self._connection, self._topics, self._start_from))
            )
        else:
            partitions = (
                pbegin
                | "Topics" >> beam.Create(self._topics)
                | "WatchPartitions"
                >> beam.ParDo(WatchPartitionsFn(self._connection, self._start_from, self._discovery_interval_s))
            )
        return (
            partitions
            | "Reshuffle" >> beam.Reshuffle()
            | "ReadPartitions" >> beam.ParDo(read_fn).with_outputs(PROGRESS, LATE, main=MESSAGES)
        )
