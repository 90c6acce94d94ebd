"""The audit lake: Parquet files under `<lake>/<table>/date=YYYY-MM-DD/hour=HH/`, published whole.

Rows come from `transforms.io.lake.rows.to_lake_rows(audited)` as `(table, row dict)` pairs and are
written with the table's Arrow schema (`schemas.lake.TABLES[table].schema`). The pipeline hands the writer
all the rows of one response as one element, a list of pairs (`rows_of`): one element through the runner's
machinery instead of about twenty.

    rows | "WriteAuditLake" >> WriteAuditLake("/data/lake")          # in a pipeline
    write_table("/data/lake", "alerts", rows, name="drift-2026-11-29")  # anywhere else

Every file is published whole (`transforms.io.lake.filesystem.write_parquet`):
in a local folder it is written to a hidden temp file and `os.replace`d into
place (Beam's `fileio.WriteToFiles` silently fails to publish into hive
folders that do not exist yet); in object storage (`s3://bucket/prefix`) it is
one object upload under its final name, which no reader sees before it
completes. File names are a hash of the table, the window and the sorted row
keys, so re-running the same input overwrites its files instead of adding
copies. A stream's rows are grouped per (table, partition, window), so files
are not one-row-each; a bounded run's rows are written where they are made,
one file per (table, partition) for each bundle of work, without sending them
through a shuffle. Nothing is held in process-global state: any runner works.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms import window as beam_window
from pydantic import BaseModel

from schemas import TABLES
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import write_lake_parquet
from transforms.io.lake.rows import row_dict

__all__ = [
    "CONTENT_ADDRESSED",
    "LAKE_METRICS_NAMESPACE",
    "WriteAuditLake",
    "file_stem",
    "partition_of",
    "rows_of",
    "table_path",
    "write_rows_file",
    "write_table",
]

BUNDLE_FLUSH_ROWS = 100_000
"""A bounded run's worker writes the rows it holds when it holds this many (about 300 MB; the rest when its
bundle ends)."""

LAKE_METRICS_NAMESPACE = "groundwatch.lake"
"""Counters of the lake writer: `files_written`, and `<table>_rows`, the rows written to each table."""


def partition_of(table: str, row: Mapping[str, Any]) -> tuple[str, str]:
    """The `date=` and `hour=` values of a row, from its table's time column (UTC)."""
    when = row[TABLES[table].time_column]
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    when = when.astimezone(UTC)
    # Called for every row a run writes: formatting the fields costs less than half of two strftime calls.
    return f"{when.year:04d}-{when.month:02d}-{when.day:02d}", f"{when.hour:02d}"


def table_path(lake_dir: str, table: str, date: str, hour: str) -> str:
    """The folder of one partition of one table."""
    return lakefs.join(lake_dir, table, f"date={date}", f"hour={hour}")


def _key_of(table: str, row: Mapping[str, Any]) -> str:
    return "\x1f".join(str(row[k]) for k in TABLES[table].key)


def file_stem(*parts: str, prefix: str = "part-") -> str:
    """A file's stem from a hash of its parts: the same parts, the same file (writing again replaces it)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "backslashreplace") + b"\x1e")
    return prefix + digest.hexdigest()[:24]


@functools.cache
def _schema(table: str) -> pa.Schema:
    # Deriving the Arrow schema walks the row model; tables are registered at import, so cache it.
    return TABLES[table].schema


def write_rows_file(
    folder: str, file_stem: str, table: str, rows: list[Mapping[str, Any]] | pa.Table, *, replaces: Sequence[str] = ()
) -> str:
    """Write rows as `<folder>/<file_stem>.parquet`, published whole (a local folder or object storage).

    `rows` are row dicts, or an Arrow table with the table's columns (any order; cast to its schema), which
    is how `groundwatch compact` and the lake benchmark write many rows at once. `replaces` names the files it
    replaces, for the lake's manifest (compaction)."""
    lakefs.ensure_folder(folder)
    schema = _schema(table)
    if isinstance(rows, pa.Table):
        table_data = rows.select(schema.names).cast(schema)
    else:
        table_data = pa.Table.from_pylist(list(rows), schema=schema)
    return write_lake_parquet(lakefs.join(folder, f"{file_stem}.parquet"), table_data, replaces=replaces)


def write_table(
    lake_dir: str, table: str, rows: Iterable[Mapping[str, Any] | BaseModel], *, name: str | None = None
) -> list[str]:
    """Validate and write rows of one table outside Beam; one file per partition. Returns the paths written.

    `name` fixes the file stem (same name, same file: re-writing replaces it); by default it is a hash of the
    rows' keys, so writing the same rows twice does not duplicate them either.
    """
    if table not in TABLES:
        raise ValueError(f"unknown lake table {table!r}; known: {', '.join(sorted(TABLES))}")
    model = TABLES[table].row
    by_partition: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        valid = row if isinstance(row, model) else model.model_validate(row)
        as_dict = row_dict(valid)
        by_partition[partition_of(table, as_dict)].append(as_dict)
    paths = []
    for (date, hour), part_rows in sorted(by_partition.items()):
        keys, part_rows = _in_key_order(table, part_rows)
        stem = name or file_stem(table, *keys)
        paths.append(write_rows_file(table_path(lake_dir, table, date, hour), stem, table, part_rows))
    return paths


def rows_of(element: tuple[str, dict] | list[tuple[str, dict]]) -> Sequence[tuple[str, dict]]:
    """The `(table, row)` pairs of an element `WriteAuditLake` takes: one pair, or a list of pairs (the rows of
    one response, as `ToLakeRows` emits them)."""
    return element if isinstance(element, list) else (element,)


def _window_label(window: Any) -> str:
    if isinstance(window, beam_window.IntervalWindow):
        return f"{window.start.micros}-{window.end.micros}"
    return "global"


def _compact(row: dict) -> dict:
    # Datetimes would each be pickled on the way through the shuffle; epoch microseconds encode natively
    # and Arrow reads them back into the same timestamp columns.
    return {k: (_micros(v) if isinstance(v, datetime) else v) for k, v in row.items()}


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class _KeyByPartitionDoFn(beam.DoFn):
    """An element's rows, compacted and grouped by the file they go to: one element per (table, partition,
    window) of a response through the shuffle, not one per row (a response makes about 23 rows in 5 files;
    every element costs the runner's shuffle its own work)."""

    def process(self, element, window=beam.DoFn.WindowParam):
        label = _window_label(window)
        groups: dict[tuple[str, str, str, str], list[dict]] = defaultdict(list)
        for table, row in rows_of(element):
            groups[(table, *partition_of(table, row), label)].append(_compact(row))
        yield from groups.items()


CONTENT_ADDRESSED = frozenset({"passages"})
"""Tables keyed by a hash of their content: rows of one key are equal, so a file keeps one of them (a passage
retrieved for many responses of a bundle is written once)."""


def _in_key_order(table: str, rows: list[dict]) -> tuple[list[str], list[dict]]:
    """The rows sorted by key, and their keys, each key built once; one row per key of a content-addressed
    table."""
    keyed = [(_key_of(table, r), r) for r in rows]
    if table in CONTENT_ADDRESSED:
        keyed = list(dict(keyed).items())
    keyed.sort(key=itemgetter(0))
    return [key for key, _ in keyed], [row for _, row in keyed]


def _write_partition(lake_dir: str, table: str, date: str, hour: str, label: str, rows: list[dict]) -> str:
    """One file of a table's partition, named by `label` and its rows' keys; counted by the lake's counters."""
    keys, rows = _in_key_order(table, rows)
    stem = file_stem(table, label, *keys)
    path = write_rows_file(table_path(lake_dir, table, date, hour), stem, table, rows)
    Metrics.counter(LAKE_METRICS_NAMESPACE, "files_written").inc()
    Metrics.counter(LAKE_METRICS_NAMESPACE, f"{table}_rows").inc(len(rows))
    return path


class _WritePartitionDoFn(beam.DoFn):
    def __init__(self, lake_dir: str):
        self._lake_dir = lake_dir

    def process(self, element):
        (table, date, hour, window_label), groups = element
        rows = [row for group in groups for row in group]
        yield _write_partition(self._lake_dir, table, date, hour, window_label, rows)


@beam.typehints.with_output_types(str)  # said: Beam inferred it by walking this code, 30 ms per writer
class _WriteBundleDoFn(beam.DoFn):
    """A bundle's rows, kept per (table, partition) and written when the bundle ends, or all at once whenever
    it holds `flush_rows` rows (so a worker's memory does not grow with its share of a large run)."""

    def __init__(self, lake_dir: str, flush_rows: int):
        self._lake_dir, self._flush_rows = lake_dir, flush_rows

    def start_bundle(self):
        self._pending: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
        self._held = 0

    def process(self, element):
        for table, row in rows_of(element):
            self._pending[(table, *partition_of(table, row))].append(row)
            self._held += 1
        if self._held >= self._flush_rows:
            yield from self._write_held()

    def finish_bundle(self):
        for path in self._write_held():
            yield beam_window.GlobalWindows.windowed_value(path)

    def _write_held(self) -> list[str]:
        pending, self._pending, self._held = self._pending, defaultdict(list), 0
        return [
            _write_partition(self._lake_dir, table, date, hour, "bundle", rows)
            for (table, date, hour), rows in pending.items()
        ]


def _merged(pcolls: list, label: str):
    return pcolls[0] if len(pcolls) == 1 else pcolls | label >> beam.Flatten()


class WriteAuditLake(beam.PTransform):
    """Write `(table, row dict)` pairs, or lists of them (`rows_of`), from one PCollection or a tuple of them
    into the lake, one Parquet file per (table, partition, window).

    With `per_window=False` (bounded runs) windows do not matter: each bundle of work writes the rows it made,
    one file per (table, partition), at its end (or whenever it holds `flush_rows` rows). The rows stay
    in the worker that made them: sending them through a shuffle to group them cost more CPU than writing
    them, and the runner held all of them in memory until the run ended.

    Returns the paths of the files written (in the global window, for a bounded run).
    """

    def __init__(self, lake_dir: str, *, per_window: bool = True, flush_rows: int = BUNDLE_FLUSH_ROWS):
        super().__init__()
        if not lake_dir:
            raise ValueError("lake directory must be a non-empty path or URI")
        if flush_rows < 1:
            raise ValueError(f"flush_rows must be >= 1, got {flush_rows}")
        self._lake_dir = lakefs.normalize(lake_dir)
        self._per_window = per_window
        self._flush_rows = flush_rows

    def expand(self, rows):
        # Several row collections may come in: each is handled where it is produced, and only what comes out
        # of that (file paths, or compact keyed rows) meets in a Flatten.
        inputs = list(rows) if isinstance(rows, (tuple, list)) else [rows]
        named = [(str(i) if len(inputs) > 1 else "", part) for i, part in enumerate(inputs)]
        if not self._per_window:
            # The bundle writer emits the paths of what it wrote at the bundle's end, in the global window.
            written = [
                part
                | f"ToGlobalWindow{suffix}" >> beam.WindowInto(beam_window.GlobalWindows())
                | f"WriteParquet{suffix}" >> beam.ParDo(_WriteBundleDoFn(self._lake_dir, self._flush_rows))
                for suffix, part in named
            ]
            return _merged(written, "FlattenWritten")
        keyed = [part | f"KeyByPartition{suffix}" >> beam.ParDo(_KeyByPartitionDoFn()) for suffix, part in named]
        merged = _merged(keyed, "FlattenPartitions")
        return (
            merged
            | "GroupByPartition" >> beam.GroupByKey()
            | "WriteParquet" >> beam.ParDo(_WritePartitionDoFn(self._lake_dir))
        )
