"""DuckDB views over the audit lake: one view per table, one row per key, as the lake's one reader gives it.

    con = connect_lake("./groundwatch-lake")
    con.sql("SELECT attribution_verdict, count(*) FROM sentences GROUP BY 1").show()

The connection is in-memory (a database file would lock out other readers). Each view is
`transforms.io.lake.reader.table_sql`: every file of the table, with hive partitioning (adding `date`
DATE and `hour` INTEGER columns), every column of its row model (NULL in files written before a column
existed), deduplicated by the reader's rule (`latest_per_key`: the table's `prefer` columns first, such as
the window metrics of more responses, then the newest copy). A table with no files yet is an empty view
with the right columns, so queries never fail on a fresh lake. The drift stage and the report read
through the same reader, so they see the rows these views show.

Beside the tables, one view per rollup (`transforms.io.lake.rollups.ROLLUPS`: `sentences_by_retriever`,
`unsupported_spans_by_tenant`): one row per partition and dimension values, read from the rollup files
`groundwatch compact` keeps beside clean partitions and aggregated live from the rows of the others, so they
hold the figures the table views give. `worst_retrievers` and `unsupported_spans` read them. And the review
queue's rollup (`transforms.io.lake.review_rollup`: `sentences_awaiting_review_top`), each hour's first 500
sentences awaiting review and their count, which `sentences_awaiting_review` reads.

Making a view lists its table's files, so `groundwatch query` makes only the views its SQL can read
(`views_named`): a query of `alerts` does not list a month of `sentences` partitions first.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import duckdb

from schemas import TABLES
from transforms.io.lake.reader import one_listing, table_sql
from transforms.io.lake.review_rollup import REVIEW_VIEW, review_sql
from transforms.io.lake.rollups import ROLLUPS, rollup_sql

__all__ = ["VIEWS", "connect_lake", "create_views", "views_named"]

VIEWS: tuple[str, ...] = (*sorted(TABLES), *sorted(ROLLUPS), REVIEW_VIEW)
"""Every view of the lake: the tables, the rollups and the review queue's rollup."""

# SQL that can reach a view without naming it: the catalog (`duckdb_views()`, `information_schema`,
# `pg_catalog`, `sqlite_master`), SQL run from a string (`query(...)`, `query_table(...)`), whose text may be
# built while the query runs, and any `SHOW` or `DESCRIBE`: `SHOW TABLES` lists every view even when a view is
# named beside it (`SELECT * FROM (SHOW TABLES) WHERE name <> 'alerts'`), and telling that from `DESCRIBE
# alerts` would take a parser; a DESCRIBE of one view costs only the listing of the others.
_READS_CATALOG = re.compile(
    r"\b(?:duckdb_\w+|information_schema|pg_\w+|sqlite_\w+|query|query_table|show|describe)\b", re.IGNORECASE
)


def views_named(sql: str) -> list[str]:
    """The views `sql` can read: each one its text names as a word (in a string or a comment too, which costs
    only a view made for nothing), or every view when it reads the catalog, runs SQL from a string, or shows
    or describes anything."""
    if _READS_CATALOG.search(sql):
        return list(VIEWS)
    return [name for name in VIEWS if re.search(rf"\b{re.escape(name)}\b", sql, re.IGNORECASE)]


def create_views(con: duckdb.DuckDBPyConnection, lake_dir: str, names: Collection[str] | None = None) -> list[str]:
    """Create (or replace) on `con` the views `names` (default: every one of `VIEWS`); returns the names made."""
    wanted = set(VIEWS if names is None else names)
    if unknown := wanted - set(VIEWS):
        raise ValueError(f"no lake view {', '.join(sorted(unknown))}; the views: {', '.join(VIEWS)}")
    made = []
    with one_listing():  # the rollup and review views list the tables the table views listed
        for name in (view for view in VIEWS if view in wanted):
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {_view_sql(con, name, lake_dir)}')
            made.append(name)
    return made


def _view_sql(con: duckdb.DuckDBPyConnection, name: str, lake_dir: str) -> str:
    if name in TABLES:
        return table_sql(con, TABLES[name], lake_dir)
    if name in ROLLUPS:
        return rollup_sql(con, ROLLUPS[name], lake_dir)
    return review_sql(con, lake_dir)


def connect_lake(lake_dir: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per lake table."""
    con = duckdb.connect(":memory:")
    create_views(con, lake_dir)
    return con
