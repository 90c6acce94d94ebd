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
"""

from __future__ import annotations

import duckdb

from schemas import TABLES
from transforms.io.lake.reader import one_listing, table_sql
from transforms.io.lake.review_rollup import REVIEW_VIEW, review_sql
from transforms.io.lake.rollups import ROLLUPS, rollup_sql

__all__ = ["connect_lake", "create_views"]


def create_views(con: duckdb.DuckDBPyConnection, lake_dir: str) -> list[str]:
    """Create (or replace) one view per lake table and per rollup on `con`; returns the view names."""
    names = []
    with one_listing():  # the rollup and review views list the tables the table views listed
        for name, spec in sorted(TABLES.items()):
            quoted = '"' + name.replace('"', '""') + '"'
            con.execute(f"CREATE OR REPLACE VIEW {quoted} AS {table_sql(con, spec, lake_dir)}")
            names.append(name)
        for name, rollup in sorted(ROLLUPS.items()):
            con.execute(f'CREATE OR REPLACE VIEW "{name}" AS {rollup_sql(con, rollup, lake_dir)}')
            names.append(name)
        con.execute(f'CREATE OR REPLACE VIEW "{REVIEW_VIEW}" AS {review_sql(con, lake_dir)}')
        names.append(REVIEW_VIEW)
    return names


def connect_lake(lake_dir: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per lake table."""
    con = duckdb.connect(":memory:")
    create_views(con, lake_dir)
    return con
