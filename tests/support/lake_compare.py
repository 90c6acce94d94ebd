"""Compare two lakes table by table: the rows of one run against the rows of another (another runner, another
filesystem), floats within a tolerance (summation order differs between runners), the wall-clock columns left
out (each table's version column stamps when its run wrote the row, and so does the `date=/hour=` partition of
a table partitioned by it: two runs differ there and only there).

    compared = assert_same_tables(reference_lake, lake_under_test, TABLES)   # the number of rows compared

Use it when two runs must leave the same rows, every column but the wall-clock ones (`table_rows` is one
table's rows so, in order). `tests/support/lake_rows.lake_rows` is the lighter check of two ways of running
the same audit in one process: a few columns per table that say what was audited, as sets.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dashboards.views import connect_lake
from schemas import TABLES

__all__ = ["WALL_CLOCK_COLUMNS", "assert_same_tables", "same_values", "table_rows"]

WALL_CLOCK_COLUMNS = {spec.version_column for spec in TABLES.values()}
"""When a row was audited, received, computed, checked, updated: each table's version column is a wall-clock
stamp of the run that wrote it (schemas.lake.register_table)."""


def _wall_clock_partition(table: str) -> set[str]:
    """`date` and `hour` when the table is partitioned by its version column (dead letters by `received_at`,
    judge calls by when they were made): two runs an hour apart differ there too."""
    spec = TABLES[table]
    return {"date", "hour"} if spec.time_column == spec.version_column else set()


def table_rows(lake: str, table: str) -> tuple[list[str], list[tuple]]:
    """The columns of `table` but the wall-clock ones, and its rows in a total order."""
    con = connect_lake(str(lake))
    try:
        columns = [c for (c,) in con.execute(f"SELECT column_name FROM (DESCRIBE {table})").fetchall()]
        kept = [c for c in columns if c not in WALL_CLOCK_COLUMNS | _wall_clock_partition(table)]
        quoted = ", ".join(f'"{c}"' for c in kept)  # some column names are SQL keywords (check)
        return kept, con.execute(f"SELECT {quoted} FROM {table} ORDER BY ALL").fetchall()
    finally:
        con.close()


def same_values(a, b, tolerance: float = 1e-9) -> bool:
    """Equal values, floats within `tolerance` (relative or absolute), compared inside lists and dicts too."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_values(x, y, tolerance) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k], tolerance) for k in a)
    return a == b


def assert_same_tables(expected_lake: str, lake: str, tables: Iterable[str], tolerance: float = 1e-9) -> int:
    """Assert that every table of `tables` holds the same rows in both lakes; return how many rows were compared."""
    compared = 0
    for table in tables:
        columns, expected = table_rows(expected_lake, table)
        got_columns, got = table_rows(lake, table)
        assert got_columns == columns, table
        assert len(got) == len(expected), f"{table}: {len(got)} rows in {lake}, {len(expected)} in {expected_lake}"
        for want, row in zip(expected, got, strict=True):
            assert same_values(want, row, tolerance), f"{table}: {dict(zip(columns, row, strict=True))} != {want}"
        compared += len(expected)
    return compared
