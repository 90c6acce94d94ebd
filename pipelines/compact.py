"""`groundwatch compact`: remove the lake's duplicates once, so that queries no longer pay for them.

    groundwatch compact --lake ./groundwatch-lake
    groundwatch compact --lake ./groundwatch-lake --table sentences --since 2026-11-29T00:00Z
    groundwatch compact --lake s3://bucket/lake

At-least-once delivery writes some rows twice (a stream restarted from its last commit, a pass run again),
and a bounded run writes one file per bundle, so an hour of a table is usually several files. The views
rank those rows to keep one per key (`transforms.io.lake.reader.latest_per_key`), in every query. This
command rewrites each partition (`<table>/date=/hour=` folder) that is not clean into one file holding one
row per key, by that same rule, named `compacted-<schema>-<digest>.parquet` (a fingerprint of the table's
schema, and a hash of the files it replaces). A partition whose only file is such a file is clean: the
views read it straight. Beside the file it writes the partition's rollups (`transforms.io.lake.rollups`:
aggregates that two ready-made queries add up instead of scanning every sentence), named after the file;
a clean partition without them (compacted before they existed) gets them on the next run. Last, each hour
whose `sentences` and `responses` partitions are both clean gets the review queue's rollup
(`transforms.io.lake.review_rollup`), named after both files, if it has none yet.

The rewrite is safe to stop at any point and to run beside writers and readers:

- the new file is published whole (in a folder: hidden temporary name, then renamed; in a bucket: one object
  upload) before any old file is removed, so a reader listing the partition sees the old files, or the old
  ones and the new one (a partition of several files, ranked: the same rows), or the new one; never none;
- an old file is removed only if it is unchanged since it was read (same size and modification time, as
  `transforms.io.lake.filesystem.file_signature` gives them for a file or an object): a file a writer
  replaced meanwhile stays, and the partition stays ranked until the next compaction;
- a file written into a partition later makes it a partition of several files again, ranked, until the next
  compaction; run it again (it skips clean partitions) and it converges.

Tables whose copies of a key may lie in different hours (`TableSpec.partition_local` is false: dead letters,
judge calls, where the time is the version) are left as they are; the views rank them whole, and they are
small. A lake in a folder or in object storage (`s3://...`) is compacted the same way. Exit 0, or 2 on bad
usage (a lake that does not exist or cannot be reached, an unknown table).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import duckdb

from pipelines.options.common import add_lake_argument, existing_lake, exits_2_on_usage_error, iso_time
from pipelines.runner.progress import Progress
from schemas import TABLES, TableSpec
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import record_removal
from transforms.io.lake.reader import (
    compacted_prefix,
    deduplicated_sql,
    is_clean,
    partitions,
    sql_ident,
    sql_literal,
    table_files,
)
from transforms.io.lake.review_rollup import TABLES_USED, write_review_rollups
from transforms.io.lake.rollups import (
    ROLLUP_SUFFIX,
    ROLLUPS,
    Rollup,
    rollup_files,
    rollup_path,
    rollups_of,
    write_rollups,
)
from transforms.io.lake.writer import file_stem, write_rows_file

__all__ = ["TableCompaction", "add_arguments", "compact_partition", "compact_table", "main"]


@dataclass
class TableCompaction:
    """What compacting one table did: partitions seen, rewritten, already clean; rows before and after."""

    table: str
    partitions: int = 0
    compacted: int = 0
    already_clean: int = 0
    rows_before: int = 0
    rows_after: int = 0
    rollups: int = 0
    """Rollup files written (`transforms.io.lake.rollups`), for partitions compacted now or clean without them."""
    left_ranked: list[str] = field(default_factory=list)
    """Partitions that stay ranked: a file changed while it was compacted."""

    @property
    def duplicates_removed(self) -> int:
        return self.rows_before - self.rows_after


def _partition_start(folder: str) -> datetime | None:
    """The hour a `date=YYYY-MM-DD/hour=HH` folder holds, or None for a folder not named so."""
    hour_part, date_part = os.path.basename(folder), os.path.basename(os.path.dirname(folder))
    if not (date_part.startswith("date=") and hour_part.startswith("hour=")):
        return None
    try:
        day = datetime.strptime(date_part[5:], "%Y-%m-%d").replace(tzinfo=UTC)
        return day + timedelta(hours=int(hour_part[5:]))
    except ValueError:
        return None


def compact_partition(con: duckdb.DuckDBPyConnection, spec: TableSpec, files: list[str]) -> tuple[int, int, bool]:
    """Rewrite one partition's files as one file of one row per key; returns (rows before, rows after,
    whether every old file could be removed, so the partition is now clean)."""
    seen: dict[str, tuple[int, int] | None] = {path: lakefs.file_signature(path) for path in files}
    listed = ", ".join(sql_literal(path) for path in files)
    rows_before = con.execute(f"SELECT count(*) FROM read_parquet([{listed}])").fetchone()[0]
    order = ", ".join(sql_ident(c) for c in (spec.time_column, *spec.key))
    rows = con.sql(f"SELECT * FROM ({deduplicated_sql(con, spec, files)}) ORDER BY {order}").to_arrow_table()
    # Named by the files it replaces: two compactions of the same files write the same file.
    names = [f"{os.path.basename(path)}:{(seen[path] or (0, 0))[0]}" for path in files]
    stem = file_stem(spec.name, *names, prefix=compacted_prefix(spec))
    written = write_rows_file(os.path.dirname(files[0]), stem, spec.name, rows, replaces=files)
    # The rollups are named after the new file, so they count only once it is the partition's only file.
    write_rollups(con, spec.name, written)
    whole = True
    for path in files:
        if lakefs.normalize(path) == lakefs.normalize(written):
            continue
        if lakefs.file_signature(path) != seen[path]:
            whole = False  # a writer replaced it meanwhile: it may hold newer rows; keep it, stay ranked
            continue
        lakefs.remove_file(path)
    if whole:
        _remove_stale_rollups(written)
    return rows_before, rows.num_rows, whole


def _remove_stale_rollups(compacted_file: str) -> None:
    """Remove the rollups of the partition's earlier files (named after a file that is gone: never read)."""
    keep = {rollup_path(compacted_file, r) for r in ROLLUPS.values()}
    stale = [p for p in lakefs.list_files(os.path.dirname(compacted_file), ROLLUP_SUFFIX) if p not in keep]
    record_removal(_lake_of(compacted_file), stale)  # the manifest names them before they go
    for path in stale:
        lakefs.remove_file(path)


def _lake_of(lake_file: str) -> str:
    """The lake holding a file of `<lake>/<table>/date=/hour=/`."""
    for _ in range(4):
        lake_file = os.path.dirname(lake_file)
    return lake_file


def _missing_rollups(table: str, compacted_file: str, present: set[str]) -> list[Rollup]:
    return [r for r in rollups_of(table) if rollup_path(compacted_file, r) not in present]


def compact_table(
    lake_dir: str, table: str, *, since: datetime | None = None, advance: Callable[[], None] = lambda: None
) -> TableCompaction:
    """Compact every partition of one table that is not clean (from the hour holding `since` on, if given);
    `advance` is called after each partition looked at, for a progress bar."""
    spec = TABLES[table]
    summary = TableCompaction(table)
    if not spec.partition_local:
        return summary
    con = duckdb.connect(":memory:")
    lakefs.attach_duckdb(con, lake_dir)  # a bucket's objects are read through the lake's own filesystem
    present = set(rollup_files(lake_dir, table))
    try:
        for folder, files in partitions(table_files(lake_dir, table)).items():
            start = _partition_start(folder)
            if since is not None and start is not None and start + timedelta(hours=1) <= since:
                continue
            summary.partitions += 1
            advance()
            if is_clean(files):
                summary.already_clean += 1
                # Compacted before its rollups existed, or stopped before writing them: write them now.
                missing = _missing_rollups(table, files[0], present)
                if missing:
                    summary.rollups += len(write_rollups(con, table, files[0], missing))
                continue
            before, after, whole = compact_partition(con, spec, files)
            summary.compacted += 1
            summary.rollups += len(rollups_of(table))
            summary.rows_before += before
            summary.rows_after += after
            if not whole:
                summary.left_ranked.append(lakefs.relative(folder, lake_dir))
    finally:
        con.close()
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument(
        "--table",
        action="append",
        choices=sorted(TABLES),
        help="Compact only this table (repeatable). Default: every table whose duplicates stay in one hour.",
    )
    parser.add_argument(
        "--since",
        type=iso_time,
        help="Compact only partitions of this hour and later (ISO 8601, e.g. 2026-11-29T09:00Z). Default: all.",
    )


def _table_line(table: str, done: TableCompaction) -> str:
    line = (
        f"{table}: {done.partitions} partitions, {done.compacted} compacted, {done.already_clean} already clean; "
        f"{done.rows_before:,} rows -> {done.rows_after:,} ({done.duplicates_removed:,} duplicates removed)"
    )
    if done.rollups:
        line += f"; {done.rollups} rollups written"
    if done.left_ranked:
        line += f"; changed while compacting, still ranked: {', '.join(done.left_ranked)}"
    return line


@exits_2_on_usage_error("compact")
def main(args: argparse.Namespace) -> int:
    existing_lake(args.lake)
    tables = args.table or sorted(name for name, spec in TABLES.items() if spec.partition_local)
    with Progress("compact", unit="partitions") as progress:
        done = {
            table: compact_table(args.lake, table, since=args.since, advance=progress.advance)
            for table in tables
            if TABLES[table].partition_local
        }
    for table in tables:
        if not TABLES[table].partition_local:
            print(f"{table}: left as it is (a newer copy of a key may lie in a later hour; the views rank it whole)")
            continue
        print(_table_line(table, done[table]))
    if set(TABLES_USED) & set(tables):
        written = write_review_rollups(args.lake, since=args.since)
        if written:
            print(f"review queue: {written} hourly rollups written (hours whose sentences and responses are clean)")
    return 0
