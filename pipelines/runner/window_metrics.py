"""Window metrics computed again from the lake's own rows, for windows whose responses reached it in parts.

    recompute_window_metrics("./groundwatch-lake", "window_start >= ?", [since])   # -> windows computed

The audit pipeline writes a window's `window_metrics` rows when the window closes, from the responses it
audited by then. Some responses reach the lake after that: a response later than its window (written
with the window open when it was audited), records read again after a crash, a catch-up whose passes
split a window. They are in `responses` and `sentences`, but not in the window's metrics. This computes
the metrics of every window with responses in a range again, from those two tables, with the pipeline's
own functions (`stats_from_rows`, `compute_window_metrics`), and writes them. The lake views keep the row
of each window and slice that holds the most responses, the newest among equals (by `computed_at`): a row
computed from the lake holds every response of its window there, so it is never fewer than a pipeline's
row, and a row of part of a window (a stream reading part of it again after a restart) never hides a
fuller one. `groundwatch metrics` runs it on demand; an audit or catch-up in passes, by itself.

Reviews count in their windows' metrics (`reviewed_sentences`, `review_agreement`) at once: whatever records a
label computes again the windows of the responses it labelled (`recompute_windows_of`), reading only the hours
those windows lie in. They keep counting when the audit writes such a window's metrics again (the same input
audited again): the pipeline reads no reviews, so its rows count none, and with as many responses and newer the
views would keep them. After a bounded run (`groundwatch audit`, a catch-up of `groundwatch monitor`) the windows
it read that hold a reviewed response are computed again (`recompute_reviewed_windows`); in a lake without
reviews that costs a listing of the `reviews` folder.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from dashboards.views import connect_lake, create_views
from transforms.io.lake.reader import has_files, in_hours_sql
from transforms.io.lake.writer import write_table
from transforms.monitoring.review_agreement import review_counts
from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_rows

__all__ = [
    "WINDOWS_PER_BATCH",
    "claims_only",
    "recompute_reviewed_windows",
    "recompute_window_metrics",
    "recompute_windows_of",
]

WINDOWS_PER_BATCH = 500
"""Windows computed together: their rows are read and held at once (at 60 s windows, 500 is about 8 hours)."""


def claims_only(con: duckdb.DuckDBPyConnection) -> str:
    """A SQL condition on `sentences` keeping claims: non-claims (lead-ins, greetings, headers) state nothing.
    Lakes written before the `claim_kind` column hold claims only as far as anyone knew then."""
    columns = {row[0] for row in con.execute("DESCRIBE sentences").fetchall()}
    return "coalesce(claim_kind, 'claim') = 'claim'" if "claim_kind" in columns else "TRUE"


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


def recompute_windows_of(
    lake_dir: str,
    event_times: dict[str, datetime] | None,
    where: str = "true",
    params: Sequence[Any] = (),
    *,
    now: datetime | None = None,
) -> int:
    """Compute again the metrics of the windows holding the responses `event_times` names (response id to its
    event time) and a response that matches `where` (SQL over the `responses` view, with `?` placeholders for
    `params`), and return how many windows. Only the hours those windows lie in are read (a filter on the
    lake's `date` and `hour` partitions), so it costs an hour's rows however large the lake. `event_times` None:
    every reviewed response's (its earliest review's event time), read through the same views."""
    if event_times is not None and not event_times:
        return 0
    con = duckdb.connect(":memory:")
    create_views(con, lake_dir, ["responses", "sentences", "reviews"])  # not every table's: a tenth of the time
    try:
        if event_times is None:
            event_times = dict(con.execute("SELECT response_id, min(event_time) FROM reviews GROUP BY 1").fetchall())
            if not event_times:
                return 0
        in_hours, hour_params = in_hours_sql(event_times.values())
        spans = con.execute(
            f"SELECT DISTINCT window_start, window_end FROM responses WHERE {in_hours} "
            "AND response_id IN (SELECT unnest(?))",
            [*hour_params, sorted(event_times)],
        ).fetchall()
        if where != "true":
            in_hours, hour_params = in_hours_sql(hour for start, end in spans for hour in _hours_between(start, end))
            sql = f"SELECT DISTINCT window_start FROM responses WHERE {in_hours} AND ({where})"
            matching = {row[0] for row in con.execute(sql, [*hour_params, *params]).fetchall()}
            spans = [span for span in spans if span[0] in matching]
        hours = {hour for start, end in spans for hour in _hours_between(start, end)}
        windows = sorted(start for start, _ in spans)
        for i in range(0, len(windows), WINDOWS_PER_BATCH):
            _recompute(lake_dir, con, windows[i : i + WINDOWS_PER_BATCH], now, hours=hours)
    finally:
        con.close()
    return len(windows)


def recompute_reviewed_windows(
    lake_dir: str, where: str = "true", params: Sequence[Any] = (), *, now: datetime | None = None
) -> int:
    """Compute again the metrics of the windows holding a reviewed response and a response that matches `where`
    (SQL over the `responses` view, `?` placeholders for `params`: after a run, the responses it read), and
    return how many windows; none, without reading anything, in a lake without reviews."""
    if where == "false" or not has_files(lake_dir, "reviews"):
        return 0
    return recompute_windows_of(lake_dir, None, where, params, now=now)


def _hours_between(start: datetime, end: datetime) -> list[datetime]:
    """The hours a window [start, end) touches: the lake partitions its responses can lie in."""
    hour = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    last = end - timedelta(microseconds=1)
    hours = [hour]
    while (hour := hour + timedelta(hours=1)) <= last:
        hours.append(hour)
    return hours


def _recompute(
    lake_dir: str,
    con: duckdb.DuckDBPyConnection,
    windows: list[datetime],
    now: datetime | None,
    *,
    hours: set[datetime] | None = None,
) -> None:
    in_batch, params = f"window_start IN ({', '.join('?' * len(windows))})", list(windows)
    if hours:  # the windows lie in these hours: read only their partitions
        in_hours, hour_params = in_hours_sql(hours)
        in_batch, params = f"{in_hours} AND {in_batch}", [*hour_params, *params]
    responses = con.execute(f"SELECT * FROM responses WHERE {in_batch}", params).fetchall()
    columns = [d[0] for d in con.description]
    sentences = con.execute(
        f"SELECT response_id, attribution_verdict, confidence, grounded_probability FROM sentences "
        f"WHERE {in_batch} AND {claims_only(con)} ORDER BY response_id, sentence_index",
        params,
    ).fetchall()
    verdicts = defaultdict(list)
    for response_id, *verdict in sentences:
        verdicts[response_id].append(tuple(verdict))
    reviews = review_counts(con, in_batch, params)
    rows = (dict(zip(columns, values, strict=True)) for values in responses)
    stats = [
        stats_from_rows(row, verdicts[row["response_id"]], reviews.get(row["response_id"], (0, 0))) for row in rows
    ]
    write_table(lake_dir, "window_metrics", compute_window_metrics(stats, now))
