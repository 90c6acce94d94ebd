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
column existed, so a query never depends on which files a lake happens to hold; a table without files is
empty, with the same columns and types.

At-least-once delivery and re-runs can write a row twice: `latest_per_key` keeps one row per
`TableSpec.key`, and is the only place that rule is written.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from schemas import TABLES, TableSpec
from transforms.io.lake import filesystem as lakefs

__all__ = ["PARTITION_COLUMNS", "has_files", "latest_per_key", "read_table", "table_glob", "table_sql"]

PARTITION_COLUMNS = {"date": "DATE", "hour": "INTEGER"}
"""The hive partition columns every table has, with their DuckDB types."""


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def table_glob(lake_dir: str, table: str) -> str:
    """The glob of every Parquet file of one lake table."""
    return lakefs.join(lakefs.normalize(lake_dir), table, "**", "*.parquet")


def has_files(lake_dir: str, table: str) -> bool:
    """Whether the table has at least one published file."""
    if lakefs.is_remote(lake_dir):
        return bool(lakefs.list_files(lakefs.join(lakefs.normalize(lake_dir), table), ".parquet"))
    pattern = os.path.join(glob.escape(os.path.abspath(lake_dir)), glob.escape(table), "**", "*.parquet")
    return next(glob.iglob(pattern, recursive=True), None) is not None


def latest_per_key(spec: TableSpec, relation: str) -> str:
    """The SELECT keeping one row per `spec.key` of `relation` (a SELECT with the table's columns).

    Of the copies of a key it keeps the one with the larger `spec.prefer` columns (window metrics: the row of
    more responses, so a partial re-read never hides a full window), then the newer by `spec.version_column`
    (when it was audited, computed, checked), then by `spec.time_column`; NULLs lose.
    """
    order = dict.fromkeys([*spec.prefer, spec.version_column, spec.time_column])
    keys = ", ".join(_ident(k) for k in spec.key)
    ranking = ", ".join(f"{_ident(column)} DESC NULLS LAST" for column in order)
    return (
        "SELECT * EXCLUDE (_gw_rank) FROM ("
        f"SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY {ranking}) AS _gw_rank FROM ({relation})"
        ") WHERE _gw_rank = 1"
    )


@functools.cache
def _column_types(spec: TableSpec) -> dict[str, str]:
    """The DuckDB type of each column of the table, in the row model's order (from its Arrow schema)."""
    con = duckdb.connect(":memory:")
    try:
        relation = con.from_arrow(spec.schema.empty_table())
        return {name: str(kind) for name, kind in zip(relation.columns, relation.types, strict=True)}
    finally:
        con.close()


def table_sql(con: duckdb.DuckDBPyConnection, spec: TableSpec, lake_dir: str) -> str:
    """The SELECT of one table's rows, one per key, with every column of its row model and the partition columns.

    `con` is asked which columns the files hold (the answer is part of the SQL: a file added later with a new
    column needs new SQL).
    """
    types = {**_column_types(spec), **PARTITION_COLUMNS}
    lakefs.attach_duckdb(con, lake_dir)
    if not has_files(lake_dir, spec.name):
        nulls = ", ".join(f"CAST(NULL AS {kind}) AS {_ident(name)}" for name, kind in types.items())
        return f"SELECT {nulls} WHERE false"
    source = (
        f"read_parquet({_literal(table_glob(lake_dir, spec.name))}, hive_partitioning = true, "
        "union_by_name = true, hive_types = {'date': DATE, 'hour': INTEGER})"
    )
    present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    columns = ", ".join(
        _ident(name) if name in present else f"CAST(NULL AS {kind}) AS {_ident(name)}" for name, kind in types.items()
    )
    return latest_per_key(spec, f"SELECT {columns} FROM {source}")


def read_table(
    con: duckdb.DuckDBPyConnection, lake_dir: str, table: str, where: str = "", params: Sequence[Any] = ()
) -> pd.DataFrame:
    """One table's rows, one per key, with its row model's columns, that match `where` (SQL with `?`
    placeholders for `params`, applied after the duplicates are gone). Empty, with the columns, without files."""
    if table not in TABLES:
        raise ValueError(f"unknown lake table {table!r}; known: {', '.join(sorted(TABLES))}")
    spec = TABLES[table]
    names = ", ".join(_ident(c) for c in spec.row.model_fields)
    sql = f"SELECT {names} FROM ({table_sql(con, spec, lake_dir)})" + (f" WHERE {where}" if where else "")
    return con.execute(sql, list(params)).df()
