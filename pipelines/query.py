"""`groundwatch query`: read-only SQL over the audit lake with DuckDB.

    groundwatch query "SELECT attribution_verdict, count(*) FROM sentences GROUP BY 1"
    groundwatch query --file dashboards/queries/review_queue.sql --format csv --lake ./groundwatch-lake

Every lake table is a view (`responses`, `sentences`, `dead_letters`, ...; see
`dashboards/views.py`): latest row per key, hive partitions as `date` and
`hour` columns. Only reading statements run (SELECT, WITH, DESCRIBE, SHOW,
SUMMARIZE, EXPLAIN); a bad query prints DuckDB's message and exits 2.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import decimal
import json
import sys
from typing import Any

import duckdb

from dashboards.views import connect_lake

__all__ = ["add_arguments", "format_rows", "main", "run_query"]

_READING = {
    duckdb.StatementType.SELECT,
    duckdb.StatementType.EXPLAIN,
}
_MAX_CELL = 80


class QueryError(Exception):
    """A query DuckDB refused, or one that would change something."""


def run_query(lake_dir: str, sql: str) -> tuple[list[str], list[tuple]]:
    """Column names and rows of the last statement of `sql`, run over the lake's views."""
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as e:
        raise QueryError(str(e)) from None
    if not statements:
        raise QueryError("no SQL statement given")
    for statement in statements:
        if statement.type not in _READING:
            raise QueryError(f"only reading queries run here; got a {statement.type.name} statement")
    con = connect_lake(lake_dir)
    try:
        for statement in statements[:-1]:
            con.execute(statement.query)
        relation = con.execute(statements[-1].query)
        columns = [d[0] for d in relation.description or []]
        return columns, relation.fetchall()
    except duckdb.Error as e:
        raise QueryError(str(e)) from None
    finally:
        con.close()


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    value = _plain(value)
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else str(value)
    if isinstance(value, float):
        text = f"{value:.4g}" if abs(value) < 1e6 else str(value)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 3] + "..."


def format_rows(columns: list[str], rows: list[tuple], fmt: str) -> str:
    """Rows as an aligned text table, CSV or JSON (a list of objects)."""
    if fmt == "json":
        return json.dumps(
            [{c: _plain(v) for c, v in zip(columns, row, strict=False)} for row in rows], ensure_ascii=False, indent=2
        )
    if fmt == "csv":
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(
                [json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, (list, dict)) else _plain(v) for v in row]
            )
        return buffer.getvalue().rstrip("\n")
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=False)).rstrip()  # noqa: E731
    out = [line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sql", nargs="?", help="The SQL to run (or use --file).")
    parser.add_argument("--file", help="Read the SQL from this file instead.")
    parser.add_argument("--lake", default="./groundwatch-lake", help="Audit lake folder. Default ./groundwatch-lake.")
    parser.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="Output format. Default table."
    )


def main(args: argparse.Namespace) -> int:
    if bool(args.sql) == bool(args.file):
        print("groundwatch query: give the SQL either as an argument or with --file, not both", file=sys.stderr)
        return 2
    try:
        sql = args.sql
        if args.file:
            with open(args.file, encoding="utf-8") as f:
                sql = f.read()
        columns, rows = run_query(args.lake, sql)
    except (QueryError, OSError) as e:
        print(f"groundwatch query: {e}", file=sys.stderr)
        return 2
    print(format_rows(columns, rows, args.format))
    return 0
