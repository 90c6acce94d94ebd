"""`groundwatch metrics`: compute the window metrics again from the lake's own rows.

    groundwatch metrics --lake ./groundwatch-lake [--since 2026-11-30T08:00Z] [--until 2026-11-30T09:00Z]

The audit pipeline writes a window's `window_metrics` rows when the window closes, from the responses it
audited by then. Some responses reach the lake after that: a response later than its window (written
with the window open when it was audited), records read again after a crash, a catch-up whose passes
split a window. They are in `responses` and `sentences`, but not in the window's metrics. This command
computes the metrics of every window with responses in the range again, from those two tables, with the
pipeline's own functions (`stats_from_rows`, `compute_window_metrics`), and writes them. The lake views
keep the row of each window and slice that holds the most responses, the newest among equals (by
`computed_at`): a row computed from the lake holds every response of its window there, so it is never
fewer than a pipeline's row, and a row of part of a window (a stream reading part of it again after a
restart) never hides a fuller one. An audit or catch-up in passes does this by itself.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from dashboards.views import connect_lake
from pipelines.options.common import add_lake_argument, existing_lake, exits_2_on_usage_error, iso_time
from transforms.io.lake.writer import write_table
from transforms.monitoring.review_agreement import review_counts
from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_rows

__all__ = [
    "claims_only",
    "WINDOWS_PER_BATCH",
    "ReadRange",
    "add_arguments",
    "main",
    "recompute_window_metrics",
    "windows_across_passes",
]


WINDOWS_PER_BATCH = 500


def claims_only(con: duckdb.DuckDBPyConnection) -> str:
    """A SQL condition on `sentences` keeping claims: non-claims (lead-ins, greetings, headers) state nothing.
    Lakes written before the `claim_kind` column hold claims only as far as anyone knew then."""
    columns = {row[0] for row in con.execute("DESCRIBE sentences").fetchall()}
    return "coalesce(claim_kind, 'claim') = 'claim'" if "claim_kind" in columns else "TRUE"


"""Windows computed together: their rows are read and held at once (at 60 s windows, 500 is about 8 hours)."""


@dataclass(frozen=True)
class ReadRange:
    """Messages one pass read: offsets `first` up to, not including, `stop` (None: to the end) of one source
    (`file:<path>`, whose offsets are line numbers, or a Kafka topic's partition)."""

    source: str
    partition: int | None
    first: int
    stop: int | None


def windows_across_passes(passes: Sequence[Sequence[ReadRange]]) -> tuple[str, list]:
    """A filter on the lake's `responses` (SQL with its parameters, for `recompute_window_metrics`) for the windows
    holding responses of more than one pass: each pass wrote the metrics of its own part of such a window, so
    only these need computing again. In traffic logged in time order, they are the few windows at the passes'
    edges. A message read by two passes (a Kafka pass whose commit failed is read again) counts for both."""
    ranges, params = [], []
    for number, part in enumerate(passes):
        for read in part:
            ranges.append("(?, ?, ?, ?, ?)")
            params += [read.source, read.partition, read.first, read.stop if read.stop is not None else 2**62, number]
    if not ranges:
        return "false", []
    sql = (
        "window_start IN (SELECT r.window_start FROM responses AS r JOIN (VALUES "
        + ", ".join(ranges)
        + ") AS p(source, part, first_offset, stop_offset, pass) ON r.origin_source = p.source"
        " AND r.origin_partition IS NOT DISTINCT FROM p.part"
        " AND r.origin_offset >= p.first_offset AND r.origin_offset < p.stop_offset"
        " GROUP BY r.window_start HAVING count(DISTINCT p.pass) > 1)"
    )
    return sql, params


def recompute_window_metrics(
    lake_dir: str, where: str = "true", params: Sequence[Any] = (), *, now: datetime | None = None
) -> int:
    """Compute again the metrics of every window holding a response that matches `where` (SQL over the
    `responses` view, with `?` placeholders for `params`), write them, and return how many windows.
    Windows are read `WINDOWS_PER_BATCH` at a time, so a whole lake fits in memory."""
    con = connect_lake(lake_dir)
    try:
        sql = f"SELECT DISTINCT window_start FROM responses WHERE {where} ORDER BY 1"
        windows = [row[0] for row in con.execute(sql, list(params)).fetchall()]
        for i in range(0, len(windows), WINDOWS_PER_BATCH):
            _recompute(lake_dir, con, windows[i : i + WINDOWS_PER_BATCH], now)
    finally:
        con.close()
    return len(windows)


def _recompute(lake_dir: str, con: duckdb.DuckDBPyConnection, windows: list[datetime], now: datetime | None) -> None:
    in_batch = f"window_start IN ({', '.join('?' * len(windows))})"
    responses = con.execute(f"SELECT * FROM responses WHERE {in_batch}", windows).fetchall()
    columns = [d[0] for d in con.description]
    sentences = con.execute(
        f"SELECT response_id, attribution_verdict, confidence FROM sentences WHERE {in_batch} "
        f"AND {claims_only(con)} ORDER BY response_id, sentence_index",
        windows,
    ).fetchall()
    verdicts = defaultdict(list)
    for response_id, verdict, confidence in sentences:
        verdicts[response_id].append((verdict, confidence))
    reviews = review_counts(con, in_batch, windows)
    rows = (dict(zip(columns, values, strict=True)) for values in responses)
    stats = [
        stats_from_rows(row, verdicts[row["response_id"]], reviews.get(row["response_id"], (0, 0))) for row in rows
    ]
    write_table(lake_dir, "window_metrics", compute_window_metrics(stats, now))


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
