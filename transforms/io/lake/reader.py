"""The one reader of the audit lake: each table's rows, one per key, as its `TableSpec` says.

Every consumer reads the lake through here: the DuckDB views (`dashboards.views.connect_lake`, and through
them `groundwatch query`, `metrics` and `replay`), the drift stage and the HTML report
(`transforms.monitoring.lake_frames.load_lake_frames`, built on `read_table`):

    con = duckdb.connect(":memory:")
    con.execute(f"CREATE VIEW window_metrics AS {table_sql(con, TABLES['window_metrics'], lake_dir)}")
    frame = read_table(con, lake_dir, "responses", "window_start >= ?", [since])

A table reads `<lake>/<table>/**/*.parquet` (a folder, or a prefix in object storage: `s3://bucket/lake`, read
through `transforms.io.lake.filesystem.attach_duckdb`) with hive partitioning (adding `date` DATE and `hour`
INTEGER) and union by name. Every column of the table's row model is there, NULL in files written before the
column existed (or, for a derived column such as `sentences.grounded_probability`, computed from the row's other
columns by its `TableSpec.derived` SQL), so a query never depends on which files a lake happens to hold; a table
without files is empty, with the same columns and types.

At-least-once delivery and re-runs can write a row twice: `latest_per_key` keeps one row per
`TableSpec.key`, and is the only place that rule is written. `groundwatch compact` pays that cost once:
it rewrites each partition (`date=/hour=` folder) holding several files into one deduplicated file named
`compacted-<digest>.parquet`. A partition whose only file is such a file is *clean*: its rows are read
straight, and only the other partitions are ranked (`table_sql`). The file's name is the record that the
partition is clean, so no marker can disagree with the files: a file written into a clean partition later
makes it a partition of two files again, ranked until the next compaction. The name also carries a
fingerprint of the table's schema (`compacted-<schema>-<digest>`): files of the current schema are read
without `union_by_name`, whose reading of every file's footer, once to list the columns and again when a
query binds, cost over a second at a few hundred files.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import glob
import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb

from schemas import TABLES, TableSpec
from schemas.lake import column_names, duckdb_columns
from transforms.io.lake import filesystem as lakefs

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "in_hours_sql",
    "COMPACTED_PREFIX",
    "PARTITION_COLUMNS",
    "compacted_prefix",
    "deduplicated_sql",
    "files_sql",
    "has_files",
    "is_clean",
    "latest_per_key",
    "one_listing",
    "parquet_source",
    "partitions",
    "read_table",
    "schema_fingerprint",
    "sql_ident",
    "sql_literal",
    "table_files",
    "table_glob",
    "table_sql",
]

PARTITION_COLUMNS = {"date": "DATE", "hour": "INTEGER"}
"""The hive partition columns every table has, with their DuckDB types."""

COMPACTED_PREFIX = "compacted-"
"""The name of a file `groundwatch compact` wrote: one row per key of its partition."""


def in_hours_sql(times: Iterable[datetime], alias: str = "") -> tuple[str, list[Any]]:
    """A SQL condition keeping the partitions of the hours `times` fall in, and its `?` parameters: DuckDB
    prunes hive partitions by `date` and `hour`, not by a time column, so a query naming its hours reads only
    their files. `alias` qualifies the columns (`s` for `s.date`)."""
    hours = sorted({when.astimezone(UTC).replace(minute=0, second=0, microsecond=0) for when in times})
    if not hours:
        return "false", []
    column = f"{alias}." if alias else ""
    sql = " OR ".join(f"({column}date = ? AND {column}hour = ?)" for _ in hours)
    return f"({sql})", [value for hour in hours for value in (hour.date(), hour.hour)]


def sql_ident(name: str) -> str:
    """A DuckDB identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """A DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def parquet_source(files: Sequence[str], *, by_name: bool = True) -> str:
    """`read_parquet` of these files with the lake's hive partition columns (`date` DATE, `hour` INTEGER).

    `by_name` unions the files' columns by name, reading every footer first; without it the first file's
    schema is every file's (files whose name carries the schema's fingerprint: compacted ones, rollups)."""
    listed = ", ".join(sql_literal(path) for path in files)
    return (
        f"read_parquet([{listed}], hive_partitioning = true, union_by_name = {str(by_name).lower()}, "
        "hive_types = {'date': DATE, 'hour': INTEGER})"
    )


def table_glob(lake_dir: str, table: str) -> str:
    """The glob of every Parquet file of one lake table."""
    return lakefs.join(lakefs.normalize(lake_dir), table, "**", "*.parquet")


_LISTINGS: contextvars.ContextVar[dict[tuple[str, str], list[str]] | None] = contextvars.ContextVar(
    "lake_listings", default=None
)


@contextlib.contextmanager
def one_listing() -> Iterator[None]:
    """Within it, `table_files` lists each table of a lake once: a connection's views (the table, its rollups,
    the review queue's) each need the same listing, and a listing of hundreds of partitions costs ~20 ms."""
    token = _LISTINGS.set({})
    try:
        yield
    finally:
        _LISTINGS.reset(token)


def table_files(lake_dir: str, table: str) -> list[str]:
    """Every published Parquet file of one lake table, sorted (hidden temporary files are not listed)."""
    listings = _LISTINGS.get()
    if listings is not None and (lake_dir, table) in listings:
        return list(listings[(lake_dir, table)])
    if lakefs.is_remote(lake_dir):  # objects are published whole under their final names: no temporary ones
        files = lakefs.list_files(lakefs.join(lakefs.normalize(lake_dir), table), ".parquet")
    else:
        pattern = os.path.join(glob.escape(os.path.abspath(lake_dir)), glob.escape(table), "**", "*.parquet")
        files = sorted(glob.iglob(pattern, recursive=True))
    if listings is not None:
        listings[(lake_dir, table)] = files
    return list(files)


def has_files(lake_dir: str, table: str) -> bool:
    """Whether the table has at least one published file."""
    return bool(table_files(lake_dir, table))


def partitions(files: Sequence[str]) -> dict[str, list[str]]:
    """Files grouped by the folder (partition) that holds them, folders and files sorted."""
    grouped: dict[str, list[str]] = {}
    for path in sorted(files):
        grouped.setdefault(os.path.dirname(path), []).append(path)
    return grouped


def schema_fingerprint(spec: TableSpec) -> str:
    """A short hash of the table's columns and their types: a compacted file named with it has exactly these."""
    return hashlib.sha256(repr(sorted(_column_types(spec).items())).encode()).hexdigest()[:8]


def compacted_prefix(spec: TableSpec) -> str:
    """How the name of a file compacted with the table's current schema begins."""
    return f"{COMPACTED_PREFIX}{schema_fingerprint(spec)}-"


def is_clean(partition_files: Sequence[str]) -> bool:
    """Whether a partition's files hold one row per key: its only file is one `groundwatch compact` wrote."""
    return len(partition_files) == 1 and os.path.basename(partition_files[0]).startswith(COMPACTED_PREFIX)


def latest_per_key(spec: TableSpec, relation: str, *, within_partition: bool = False) -> str:
    """The SELECT keeping one row per `spec.key` of `relation` (a SELECT with the table's columns).

    Of the copies of a key it keeps the one with the larger `spec.prefer` columns (window metrics: the row of
    more responses, so a partial re-read never hides a full window), then the newer by `spec.version_column`
    (when it was audited, computed, checked), then by `spec.time_column`; NULLs lose.

    `within_partition` (for a `spec.partition_local` table, whose copies of a key share their partition and
    time) ranks within `date`, `hour` and the time column as well: the same rows, but a filter on those
    columns then reaches the files before the ranking, so DuckDB reads only the partitions it needs.
    """
    order = dict.fromkeys([*spec.prefer, spec.version_column, spec.time_column])
    scope = [*PARTITION_COLUMNS, spec.time_column] if within_partition else []
    keys = ", ".join(sql_ident(k) for k in dict.fromkeys([*scope, *spec.key]))
    ranking = ", ".join(f"{sql_ident(column)} DESC NULLS LAST" for column in order)
    return (
        "SELECT * EXCLUDE (_gw_rank) FROM ("
        f"SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY {ranking}) AS _gw_rank FROM ({relation})"
        ") WHERE _gw_rank = 1"
    )


@functools.cache
def _column_types(spec: TableSpec) -> dict[str, str]:
    """The DuckDB type of each column of the table, in the row model's order."""
    return duckdb_columns(spec.row)


def _select_columns(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, types: dict[str, str], files: Sequence[str]
) -> str:
    """SELECT of every column of `types` from `files`: NULL where none of the files has it, and a derived
    column (`TableSpec.derived`) computed from the others where a file was written before it."""
    source = parquet_source(files)
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    derived = dict(spec.derived)

    def column(name: str, kind: str) -> str:
        if name in derived:
            fallback = f"CAST({derived[name]} AS {kind})"
            value = f"coalesce({sql_ident(name)}, {fallback})" if name in present else fallback
        elif name in present:
            return sql_ident(name)
        else:
            value = f"CAST(NULL AS {kind})"
        return f"{value} AS {sql_ident(name)}"

    return f"SELECT {', '.join(column(name, kind) for name, kind in types.items())} FROM {source}"


def deduplicated_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec, files: Sequence[str]) -> str:
    """The SELECT of one row per key of these files of a table (`latest_per_key`), every column of its row
    model and the partition columns: what `groundwatch compact` writes for a partition."""
    types = {**_column_types(spec), **PARTITION_COLUMNS}
    return latest_per_key(spec, _select_columns(con, spec, types, files), within_partition=spec.partition_local)


def table_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec, lake_dir: str) -> str:
    """The SELECT of one table's rows, one per key, with every column of its row model and the partition columns.

    Clean partitions (see `is_clean`) are read straight; the rows of the others are ranked by `latest_per_key`
    (within their partition, for a `partition_local` table), and the two are a UNION ALL. `con` is asked which
    columns the files hold, and the files are listed now: the SQL names them, so a file published later needs
    new SQL (`create_views` again).
    """
    lakefs.attach_duckdb(con, lake_dir)
    return files_sql(con, spec, table_files(lake_dir, spec.name))


def files_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec, files: Sequence[str]) -> str:
    """`table_sql` over only these files of the table (whole partitions of it: a partition's files are ranked
    together); an empty SELECT with the columns when there are none."""
    types = {**_column_types(spec), **PARTITION_COLUMNS}
    if not files:
        nulls = ", ".join(f"CAST(NULL AS {kind}) AS {sql_ident(name)}" for name, kind in types.items())
        return f"SELECT {nulls} WHERE false"
    if not spec.partition_local:
        return latest_per_key(spec, _select_columns(con, spec, types, files))
    current, clean, ranked = [], [], []
    prefix = compacted_prefix(spec)
    for partition_files in partitions(files).values():
        if not is_clean(partition_files):
            ranked.extend(partition_files)
        elif os.path.basename(partition_files[0]).startswith(prefix):
            current.extend(partition_files)
        else:
            clean.append(partition_files[0])
    parts = []
    if current:  # every column there, in the schema's types: no footer read before the query
        columns = ", ".join(sql_ident(name) for name in types)
        parts.append(f"SELECT {columns} FROM {parquet_source(current, by_name=False)}")
    if clean:
        parts.append(_select_columns(con, spec, types, clean))
    if ranked:
        parts.append(latest_per_key(spec, _select_columns(con, spec, types, ranked), within_partition=True))
    return " UNION ALL ".join(f"({part})" for part in parts) if len(parts) > 1 else parts[0]


def read_table(
    con: duckdb.DuckDBPyConnection, lake_dir: str, table: str, where: str = "", params: Sequence[Any] = ()
) -> pd.DataFrame:
    """One table's rows, one per key, with its row model's columns, that match `where` (SQL with `?`
    placeholders for `params`, applied after the duplicates are gone). Empty, with the columns, without files."""
    if table not in TABLES:
        raise ValueError(f"unknown lake table {table!r}; known: {', '.join(sorted(TABLES))}")
    spec = TABLES[table]
    names = ", ".join(sql_ident(c) for c in column_names(spec.row))
    sql = f"SELECT {names} FROM ({table_sql(con, spec, lake_dir)})" + (f" WHERE {where}" if where else "")
    return con.execute(sql, list(params)).df()
