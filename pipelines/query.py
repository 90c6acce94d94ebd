"""`groundwatch query`: read-only SQL over the audit lake with DuckDB.

    groundwatch query "SELECT attribution_verdict, count(*) FROM sentences GROUP BY 1"
    groundwatch query --file dashboards/queries/review_queue.sql --format csv --lake ./groundwatch-lake

Every lake table is a view (`responses`, `sentences`, `dead_letters`, ...; see
`dashboards/views.py`): latest row per key, hive partitions as `date` and
`hour` columns. The connection can read the lake's files and nothing else, and
only one reading query runs (SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW,
SUMMARIZE, EXPLAIN [ANALYZE] of a query); see `dashboards/readonly.py`.
Anything else is refused with `groundwatch query: refused: <why>` and exit 2; a
bad query prints DuckDB's message on one line and exits 2, and so does a lake
folder that does not exist.
"""

from __future__ import annotations

import argparse
import sys

from dashboards.lake_sql import QueryError, format_rows, run_query
from dashboards.readonly import LakeNotFound, Refused, Unreadable
from pipelines.options.common import UsageError, add_lake_argument, exits_2_on_usage_error

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sql", nargs="?", help="The SQL to run (or use --file).")
    parser.add_argument("--file", help="Read the SQL from this file instead.")
    add_lake_argument(parser)
    parser.add_argument(
        "--format", choices=("table", "csv", "json"), default="table", help="Output format. Default table."
    )


def _sql_of(args: argparse.Namespace) -> str:
    """The SQL given as the argument or in `--file`; UsageError (exit 2) naming what is wrong."""
    if args.sql and args.file:
        raise UsageError("give the SQL as an argument or with --file, not both")
    if not args.file:
        if not (args.sql or "").strip():
            raise UsageError('no SQL: give it as an argument (groundwatch query "SELECT ...") or with --file FILE')
        return args.sql
    try:
        with open(args.file, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise UsageError(f"--file {args.file}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--file {args.file}: cannot read it ({getattr(e, 'strerror', None) or e})") from None


@exits_2_on_usage_error("query")
def main(args: argparse.Namespace) -> int:
    sql = _sql_of(args)
    try:
        columns, rows = run_query(args.lake, sql)
    except Refused as e:
        print(f"groundwatch query: refused: {e}", file=sys.stderr)
        return 2
    except (LakeNotFound, Unreadable, QueryError, OSError) as e:
        print(f"groundwatch query: {e}", file=sys.stderr)
        return 2
    print(format_rows(columns, rows, args.format))
    return 0
