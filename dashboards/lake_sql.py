"""Read-only SQL over the audit lake's views, and its rows as a text table, CSV or JSON.

    columns, rows = run_query("./groundwatch-lake", "SELECT count(*) FROM responses")
    print(format_rows(columns, rows, "table"))

Only one reading query runs, on a connection that can read the lake's files and nothing else
(`dashboards.readonly`); `groundwatch query` and the demo print through here.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
from collections.abc import Sequence
from typing import Any

import duckdb

from dashboards.readonly import Refused, check_read_only, open_readonly
from dashboards.views import VIEWS, views_named

__all__ = ["QueryError", "format_rows", "run_query"]

_MAX_CELL = 80


class QueryError(Exception):
    """A query DuckDB could not run (bad SQL, an unknown table or column)."""


def run_query(lake_dir: str, sql: str) -> tuple[list[str], list[tuple]]:
    """Column names and rows of `sql`, one reading query, run over the lake's views on a read-only connection.

    Only the views the SQL names are made (`views_named`: each lists its table's files). A table name DuckDB
    does not know then runs the query again with every view: a typo gets DuckDB's "did you mean" with the
    closest view, and a name given as a string at run time (`pragma_table_info('sent' || 'ences')`) resolves.

    Raises LakeNotFound, Unreadable (a file DuckDB cannot read, in a table the query names), Refused (a
    statement that would change something or read outside the lake) or QueryError.
    """
    views = views_named(sql)
    try:
        return _run(lake_dir, sql, views, retry=len(views) < len(VIEWS))
    except _UnknownName:
        return _run(lake_dir, sql, VIEWS, retry=False)


class _UnknownName(Exception):
    """The query names a table or view that is not on the connection, and other views could be made."""


def _run(lake_dir: str, sql: str, views: Sequence[str], *, retry: bool) -> tuple[list[str], list[tuple]]:
    with open_readonly(lake_dir, views) as con:
        try:
            statement = check_read_only(sql, con)
        except duckdb.Error as e:
            raise QueryError(_first_line(e)) from None
        try:
            relation = con.execute(statement)
            columns = [d[0] for d in relation.description or []]
            return columns, relation.fetchall()
        except duckdb.PermissionException as e:
            raise Refused(f"{_first_line(e)} (only the lake {lake_dir} may be read)") from None
        except duckdb.CatalogException as e:
            if retry and "Table with name" in str(e):
                raise _UnknownName from None
            raise QueryError(_first_line(e)) from None
        except duckdb.Error as e:
            if "configuration has been locked" in str(e):
                raise Refused(_first_line(e)) from None
            raise QueryError(_first_line(e)) from None


def _first_line(error: Exception) -> str:
    """DuckDB's message on one line: its first line, the name it suggests, and where in the SQL it stopped."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    suggestion = next((line for line in lines[1:] if line.startswith("Did you mean")), None)
    where = next((line for line in lines[1:] if line.startswith("LINE ")), None)
    return " ".join(filter(None, [lines[0], suggestion])) + (f" (at {where})" if where else "")


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
