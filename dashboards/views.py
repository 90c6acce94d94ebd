"""DuckDB views over the audit lake: one view per table, latest row per key.

    con = connect_lake("./groundwatch-lake")
    con.sql("SELECT attribution_verdict, count(*) FROM sentences GROUP BY 1").show()

The connection is in-memory (a database file would lock out other readers) and
each view reads `<lake>/<table>/**/*.parquet` with hive partitioning (adding
`date` DATE and `hour` INTEGER columns) and union by name (files written before a column
existed still read). At-least-once delivery and re-runs can write a row twice:
the view keeps the latest per `TableSpec.key`, ordered by its version column
(`audited_at`, `computed_at`, `checked_at`, ...), then by its time column; a table may first prefer a
larger value of some columns (`TableSpec.prefer`: the window metrics of more responses). A table with no files yet is an
empty view with the right columns, so queries never fail on a fresh lake.
"""

from __future__ import annotations

import glob
import os

import duckdb
import pyarrow as pa

from schemas import TABLES, TableSpec

__all__ = ["connect_lake", "create_views", "view_sql"]


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _has_files(lake_dir: str, table: str) -> bool:
    pattern = os.path.join(glob.escape(lake_dir), glob.escape(table), "**", "*.parquet")
    return next(glob.iglob(pattern, recursive=True), None) is not None


def view_sql(spec: TableSpec, lake_dir: str) -> str:
    """The SELECT behind one table's view: every file of the table, deduplicated to the latest row per key."""
    pattern = os.path.join(os.path.abspath(lake_dir), spec.name, "**", "*.parquet")
    columns = dict.fromkeys([*spec.prefer, spec.version_column, spec.time_column])  # the preferred, newer copy first
    order = [f"{_quote_ident(column)} DESC NULLS LAST" for column in columns]
    keys = ", ".join(_quote_ident(k) for k in spec.key)
    return (
        f"SELECT * EXCLUDE (_gw_rank) FROM ("
        f"SELECT *, row_number() OVER (PARTITION BY {keys} ORDER BY {', '.join(order)}) AS _gw_rank "
        f"FROM read_parquet({_quote_literal(pattern)}, hive_partitioning = true, union_by_name = true, "
        f"hive_types = {{'date': DATE, 'hour': INTEGER}})"
        f") WHERE _gw_rank = 1"
    )


def _empty_table(spec: TableSpec) -> pa.Table:
    schema = spec.schema.append(pa.field("date", pa.date32())).append(pa.field("hour", pa.int32()))
    return schema.empty_table()


def create_views(con: duckdb.DuckDBPyConnection, lake_dir: str) -> list[str]:
    """Create (or replace) one view per lake table on `con`; returns the view names."""
    names = []
    for name, spec in sorted(TABLES.items()):
        if _has_files(lake_dir, name):
            con.execute(f"CREATE OR REPLACE VIEW {_quote_ident(name)} AS {view_sql(spec, lake_dir)}")
        else:
            empty_name = f"_gw_empty_{name}"
            con.register(empty_name, _empty_table(spec))
            con.execute(f"CREATE OR REPLACE VIEW {_quote_ident(name)} AS SELECT * FROM {_quote_ident(empty_name)}")
        names.append(name)
    return names


def connect_lake(lake_dir: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per lake table."""
    con = duckdb.connect(":memory:")
    create_views(con, lake_dir)
    return con
