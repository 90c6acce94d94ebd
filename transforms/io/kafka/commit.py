"""Commit a consumer group's Kafka offsets only after what was read is durably in the audit lake.

    commits = {"progress": read[PROGRESS], "lake_files": audit["lake_files"]} | "CommitOffsets" >> (
        CommitOffsetsAfterLake(connection, group_id="groundwatch"))

At-least-once, by construction:

1. The source reports, per chunk of a partition, the offsets it covered ([start, next)) and which of the records
   in it will produce lake rows (sampled-out responses produce none and hold nothing back).
2. Once every file of a window is written (a GroupByKey over the window's written paths fires only when the
   watermark has passed the window, i.e. after all of its writes), the `responses` and `dead_letters` files are
   read back and their `origin_partition` / `origin_offset` columns mark those offsets durable. Reading the
   files back (from the folder or the bucket the lake is in) is the proof that the rows are stored.
3. A stateful DoFn keyed by (topic, partition) keeps a ledger and commits `next` of the longest run of chunks,
   from the first, whose lake-bound offsets are all durable. A crash before the commit re-reads those records;
   the lake views keep one row per key, so a redelivered response counts once.

A commit that fails (broker down) is kept and retried with the partition's next element: a stream's reader
reports every chunk, idle ones too (an empty range, about one a second per partition), so a partition that
gets no new record still has its commit retried (at most every `COMMIT_RETRY_SECONDS`) once the broker is
back. The worker logs a warning when a partition's commits start failing, and when one is made again.
Nothing here assumes one process: the ledger lives in Beam state, keyed per partition.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.coders import PickleCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms import window as beam_window
from apache_beam.transforms.userstate import ReadModifyWriteRuntimeState, ReadModifyWriteStateSpec
from apache_beam.typehints import KV, Tuple

from transforms.io.kafka.client import KAFKA_METRICS_NAMESPACE, client_config
from transforms.io.kafka.source import ReadProgress
from transforms.io.lake.filesystem import read_parquet

if TYPE_CHECKING:  # kafka-python is imported where the committer is built
    from kafka import KafkaConsumer

_LOG = logging.getLogger(__name__)

__all__ = [
    "COMMIT_RETRY_SECONDS",
    "OFFSET_TABLES",
    "CommitOffsetsAfterLake",
    "Ledger",
    "committable_position",
    "lake_file_offsets",
    "new_ledger",
    "record_chunk",
    "record_durable",
]

COMMIT_RETRY_SECONDS = 5.0
"""How often a stream's idle chunks retry a partition's failed commit, at most (other elements always do)."""

OFFSET_TABLES = ("responses", "dead_letters")
"""Lake tables whose rows carry the Kafka origin of the message they came from."""


class Ledger(TypedDict):
    """One partition's offset ledger (a plain dict, kept in Beam state)."""

    chunks: dict[int, tuple[int, frozenset[int]]]
    """Chunks read and not yet committed past: start -> (next offset, the offsets that must reach the lake)."""
    durable: set[int]
    """Offsets at or past `position` whose rows are in the lake."""
    position: int | None
    """How far it is safe to commit; None until the first chunk."""
    committed: int | None
    """The offset last committed; None before the first commit."""


def new_ledger() -> Ledger:
    """An empty ledger for one partition: chunks read, offsets durable, how far it is safe to commit."""
    return {"chunks": {}, "durable": set(), "position": None, "committed": None}


def record_chunk(ledger: Ledger, progress: ReadProgress) -> None:
    """Note a chunk read: offsets [start, next), of which `progress.offsets` must reach the lake.

    An idle chunk (an empty range) notes nothing; it is the partition's next element all the same, with which a
    failed commit is retried."""
    if progress.empty:
        return
    if ledger["position"] is not None and progress.start < ledger["position"]:
        return  # already accounted (a retried bundle re-sent it)
    ledger["chunks"][progress.start] = (progress.next, frozenset(progress.offsets))


def record_durable(ledger: Ledger, offsets: Iterable[int]) -> None:
    """Note offsets whose rows are in the lake."""
    position = ledger["position"]
    ledger["durable"].update(o for o in offsets if position is None or o >= position)


def committable_position(ledger: Ledger) -> int | None:
    """Advance over consecutive chunks whose lake-bound offsets are all durable; return the offset to commit."""
    chunks, durable = ledger["chunks"], ledger["durable"]
    position = ledger["position"]
    if position is None:
        if not chunks:
            return None
        position = min(chunks)
    while position in chunks:
        next_offset, needed = chunks[position]
        if not needed <= durable:
            break
        durable.difference_update(needed)
        del chunks[position]
        position = next_offset
    # Durable offsets below the position were redeliveries; forget them.
    durable.difference_update([o for o in durable if o < position])
    ledger["position"] = position
    return position


def lake_file_offsets(path: str) -> list[tuple[str, int, int]]:
    """`(topic, partition, offset)` of every Kafka-sourced row in a `responses` or `dead_letters` file."""
    parts = os.path.normpath(path).split(os.sep)
    if len(parts) < 4 or parts[-4] not in OFFSET_TABLES:
        return []
    table = read_parquet(path, columns=["origin_source", "origin_partition", "origin_offset"]).to_pydict()
    found: list[tuple[str, int, int]] = []
    for source, partition, offset in zip(
        table["origin_source"], table["origin_partition"], table["origin_offset"], strict=True
    ):
        if source.startswith("kafka:") and partition is not None and offset is not None:
            found.append((source.removeprefix("kafka:"), partition, offset))
    return found


class _ReadBackOffsetsFn(beam.DoFn):
    def process(
        self, element: tuple[str, Iterable[str]]
    ) -> Iterator[tuple[tuple[str, int], tuple[str, tuple[int, ...]]]]:
        _, paths = element
        by_partition: dict[tuple[str, int], list[int]] = {}
        for path in paths:
            for topic, partition, offset in lake_file_offsets(path):
                by_partition.setdefault((topic, partition), []).append(offset)
        for key, offsets in by_partition.items():
            yield key, ("durable", tuple(offsets))


@dataclass
class _Failing:
    """A partition whose commits have failed since its last one was made."""

    last_at: float = 0.0
    """When the last one failed (`time.monotonic`)."""
    in_a_row: int = 0
    """How many have failed."""


_LEDGER = ReadModifyWriteStateSpec("ledger", PickleCoder())
_LEDGER_STATE = beam.DoFn.StateParam(_LEDGER)


class _CommitFn(beam.DoFn):
    def __init__(self, connection: Mapping[str, Any], group_id: str) -> None:
        self._connection = dict(connection)
        self._group_id = group_id
        self._committer: KafkaConsumer | None = None
        self._failing: dict[tuple[str, int], _Failing] = {}
        self._commits = Metrics.counter(KAFKA_METRICS_NAMESPACE, "offset_commits")
        self._failures = Metrics.counter(KAFKA_METRICS_NAMESPACE, "offset_commit_failures")

    def teardown(self) -> None:
        if self._committer is not None:
            self._committer.close()
            self._committer = None

    def _commit(self, topic: str, partition: int, offset: int) -> bool:
        from kafka import KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        try:
            if self._committer is None:
                self._committer = KafkaConsumer(
                    group_id=self._group_id, enable_auto_commit=False, **client_config(self._connection)
                )
            self._committer.commit({TopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)})
        except (KafkaError, OSError) as error:
            # The broker may be restarting: keep the ledger, retry with a later element. A worker's log line says
            # so when the partition's commits start failing, then every tenth time, so that an outage is no flood
            # (the run's summary counts them all).
            self._failures.inc()
            failing = self._failing.setdefault((topic, partition), _Failing())
            failing.last_at = time.monotonic()
            failing.in_a_row += 1
            if failing.in_a_row == 1 or failing.in_a_row % 10 == 0:
                _LOG.warning(
                    "offset commit of %s[%d] at %d failed (%d in a row): %s: %s; kept, and retried with the "
                    "partition's next element",
                    topic, partition, offset, failing.in_a_row, type(error).__name__, error,
                )  # fmt: skip
            return False
        self._commits.inc()
        if (failed := self._failing.pop((topic, partition), None)) is not None:
            _LOG.warning(
                "offset commit of %s[%d] made at %d, after %d that failed", topic, partition, offset, failed.in_a_row
            )
        return True

    def process(
        self,
        element: tuple[tuple[str, int], tuple[str, Any]],
        ledger_state: ReadModifyWriteRuntimeState = _LEDGER_STATE,
    ) -> Iterator[tuple[str, int, int]]:
        """One ledger event of a partition (a chunk read, or offsets made durable); yields the commits made."""
        key, (kind, payload) = element
        idle = kind == "chunk" and payload.empty
        ledger: Ledger = ledger_state.read() or new_ledger()
        if kind == "chunk":
            record_chunk(ledger, payload)
        else:
            record_durable(ledger, payload)
        made = self._commit_if_due(key, ledger, committable_position(ledger), idle=idle)
        if made is not None or not idle:  # an idle chunk changes nothing in the ledger but what it commits
            ledger_state.write(ledger)
        if made is not None:
            yield (*key, made)

    def _commit_if_due(self, key: tuple[str, int], ledger: Ledger, position: int | None, *, idle: bool) -> int | None:
        """Commit `position` when it is past the ledger's last commit (the first commit, or one that failed
        before); the offset committed, if it did. An idle chunk (about one a second per partition of a stream)
        retries a failed commit at most every `COMMIT_RETRY_SECONDS`, so a broker that stays away is not asked
        again and again."""
        committed = ledger["committed"]
        if position is None or (committed is not None and position <= committed):
            return None
        if (idle and self._retried_lately(key)) or not self._commit(*key, position):
            return None
        ledger["committed"] = position
        return position

    def _retried_lately(self, key: tuple[str, int]) -> bool:
        failing = self._failing.get(key)
        return failing is not None and time.monotonic() - failing.last_at < COMMIT_RETRY_SECONDS


class CommitOffsetsAfterLake(beam.PTransform):
    """Commit `group_id`'s offsets as far as the lake holds every row they produced.

    Applied to `{"progress": ReadProgress PCollection, "lake_files": written paths}`; returns the commits made,
    `(topic, partition, offset)`.
    """

    def __init__(self, connection: Mapping[str, Any], group_id: str) -> None:
        super().__init__()
        client_config(connection)
        if not group_id:
            raise ValueError("committing offsets needs a consumer group id")
        self._connection = dict(connection)
        self._group_id = group_id

    def expand(self, inputs: Mapping[str, PCollection]) -> PCollection:
        progress, lake_files = inputs["progress"], inputs["lake_files"]
        durable = (
            lake_files
            | "KeyByWindow" >> beam.Map(lambda path: ("written", path))
            | "WaitForWindowWritten" >> beam.GroupByKey()
            | "ReadBackOffsets" >> beam.ParDo(_ReadBackOffsetsFn())
            | "DurableToGlobalWindow" >> beam.WindowInto(beam_window.GlobalWindows())
        )
        chunks = (
            progress
            | "KeyChunksByPartition" >> beam.Map(lambda p: ((p.topic, p.partition), ("chunk", p)))
            | "ChunksToGlobalWindow" >> beam.WindowInto(beam_window.GlobalWindows())
        )
        return (
            (chunks, durable)
            # A typed key gives the state a deterministic key coder.
            | "FlattenLedgerEvents" >> beam.Flatten().with_output_types(KV[Tuple[str, int], Any])
            | "CommitWhenDurable" >> beam.ParDo(_CommitFn(self._connection, self._group_id))
        )
