"""`groundwatch metrics`: compute the window metrics again from the lake's own rows.

    groundwatch metrics --lake ./groundwatch-lake [--since 2026-11-30T08:00Z] [--until 2026-11-30T09:00Z]

A window's metrics are written when it closes; responses that reach the lake later (late data, records read
again after a crash, passes that split a window) are in `responses` and `sentences` but not in them. This
computes the metrics of every window with responses in the range again from those tables and writes them
(`pipelines.runner.window_metrics`, which explains which row the lake views keep). An audit or catch-up in
passes does this by itself.
"""

from __future__ import annotations

import argparse
import sys

import duckdb

from pipelines.options.common import add_lake_argument, existing_lake, exits_2_on_usage_error, iso_time
from pipelines.runner.window_metrics import recompute_window_metrics

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument("--since", type=iso_time, help="Only windows starting at or after this time (ISO 8601).")
    parser.add_argument("--until", type=iso_time, help="Only windows starting before this time (ISO 8601).")


@exits_2_on_usage_error("metrics")
def main(args: argparse.Namespace) -> int:
    bounds = [("window_start >= ?", args.since), ("window_start < ?", args.until)]
    where = " AND ".join(sql for sql, value in bounds if value is not None) or "true"
    try:
        windows = recompute_window_metrics(
            existing_lake(args.lake), where, [value for _, value in bounds if value is not None]
        )
    except duckdb.Error as e:
        print(f"groundwatch metrics: {e}", file=sys.stderr)
        return 2
    print(f"window metrics of {windows} windows computed again from {args.lake}")
    return 0
