#!/usr/bin/env python3
"""Benchmark the review app's pages on a large lake: the queue and a response page, in process.

    python scripts/bench_review.py --responses 1000000 --lake /tmp/review-1m
    python scripts/bench_review.py --lake /tmp/review-1m --reuse        # the lake is already built
    python scripts/bench_review.py --lake /tmp/review-1m --reuse --compact   # compacted first

Builds the lake from `--base` synthetic responses (`pipelines.traffic.synthetic`, flawed traffic so that
many go to review) audited in this process (`pipelines.runner.InlineAuditor`, the pipeline's stage
functions) into lake rows (`to_lake_rows`), then tiles those rows with pyarrow into `--responses` responses,
`--per-hour` an hour, each copy with its own response id and event time, written through the lake's
writer (`write_rows_file`): one file per table and hour, not compacted (every view ranks its rows). Passages
are stored once per hour, as the audit stores them.

With `--compact` it then runs `groundwatch compact` over the lake, as a deployment does on a schedule: every
hour becomes one file per table, read without ranking, with its rollups beside it, the review queue's among
them (`transforms.io.lake.rollups.REVIEW_QUEUE_ITEMS`); without it every hour is read raw and ranked.

Then times, through Starlette's TestClient (routing, DuckDB, template rendering; no network), each page
`--repeat` times after one warm-up: the queue (no filter; a tenant filter; a reason filter; page 20) and
the response page of a queue item (high risk, the first; and one from the middle of the lake), how long the
app's session takes to make its views again (as it does in a thread every 30 s, for new files), and a label
submitted (it computes its window's metrics again), and prints the median and the worst in milliseconds
with the load average. Not a test: figures depend on the machine. Each timed submission adds a review to the
lake.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from datetime import timedelta
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

from pipelines.runner.inline import InlineAuditor  # noqa: E402
from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses  # noqa: E402
from schemas import TABLES  # noqa: E402
from transforms.io.lake.rows import to_lake_rows  # noqa: E402
from transforms.io.lake.writer import table_path, write_rows_file  # noqa: E402

_TABLES = ("responses", "sentences", "citations", "claims", "passages")


def _base_tables(count: int) -> dict[str, pa.Table]:
    auditor = InlineAuditor()
    rows: dict[str, list] = defaultdict(list)
    messages = generate_responses(count, seed=5, flaw_rate=FLAWED_FLAW_RATE, sentences=4, passages=4)
    for i, message in enumerate(messages):
        message["response_id"] = f"base-{i}"
        for table, row in to_lake_rows(auditor.audit(auditor.parse(json.dumps(message).encode()))):
            if table in _TABLES:
                row["_base"] = i
                rows[table].append(row)
    out = {}
    for table in _TABLES:
        schema = TABLES[table].schema.append(pa.field("_base", pa.int64()))
        out[table] = pa.Table.from_pylist(rows[table], schema=schema)
    return out


def _hour_tables(base: dict[str, pa.Table], first: int, count: int, hour_start, per_hour: int) -> dict:
    """`count` responses numbered from `first`, in the hour from `hour_start`, tiled from the base."""
    n_base = base["responses"].num_rows
    picks = [(first + k) % n_base for k in range(count)]
    out = {}
    for table in ("responses", "sentences", "citations", "claims"):
        t = base[table]
        by_base = defaultdict(list)
        for row_index, b in enumerate(t.column("_base").to_pylist()):
            by_base[b].append(row_index)
        take, ids, times = [], [], []
        for k, b in enumerate(picks):
            when = hour_start + timedelta(seconds=k * 3600 / per_hour)
            for row_index in by_base[b]:
                take.append(row_index)
                ids.append(f"resp-{first + k:08d}")
                times.append(when)
        t = t.take(pa.array(take, pa.int64()))
        t = t.set_column(t.schema.get_field_index("response_id"), "response_id", pa.array(ids))
        ts = pa.array(times, pa.timestamp("us", tz="UTC"))
        t = t.set_column(t.schema.get_field_index("event_time"), "event_time", ts)
        out[table] = t.drop_columns(["_base"])
    passages = base["passages"]
    unique = pc.unique(passages.column("passage_sha256"))
    keep = pc.index_in(unique, passages.column("passage_sha256"))
    p = passages.take(keep).drop_columns(["_base"])
    hours = pa.array([hour_start] * p.num_rows, pa.timestamp("us", tz="UTC"))
    out["passages"] = p.set_column(p.schema.get_field_index("partition_hour"), "partition_hour", hours)
    return out


def build(lake: str, responses: int, per_hour: int, base_count: int) -> None:
    from datetime import UTC, datetime

    base = _base_tables(base_count)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    made, hour = 0, 0
    while made < responses:
        count = min(per_hour, responses - made)
        hour_start = start + timedelta(hours=hour)
        for table, t in _hour_tables(base, made, count, hour_start, per_hour).items():
            folder = table_path(lake, table, hour_start.strftime("%Y-%m-%d"), hour_start.strftime("%H"))
            write_rows_file(folder, f"part-bench-{hour:05d}", table, t)
        made, hour = made + count, hour + 1
        print(f"\r  {made:,} responses written ({hour} hours)", end="", flush=True)
    print()


def _time_call(call, repeat: int) -> tuple[float, float]:
    """The median and worst milliseconds of `repeat` calls, after one warm-up."""
    call()
    took = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took), max(took)


def _time(client, url: str, repeat: int) -> tuple[float, float, int]:
    client.get(url)
    took = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        answer = client.get(url)
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took), max(took), answer.status_code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True, help="Where the lake is built (or is, with --reuse).")
    parser.add_argument("--responses", type=int, default=1_000_000, help="Responses in the lake. Default 1000000.")
    parser.add_argument("--per-hour", type=int, default=10_000, help="Responses an hour. Default 10000.")
    parser.add_argument("--base", type=int, default=400, help="Distinct audited responses tiled. Default 400.")
    parser.add_argument("--repeat", type=int, default=5, help="Timed runs per page. Default 5.")
    parser.add_argument("--reuse", action="store_true", help="Use the lake as it is.")
    parser.add_argument("--compact", action="store_true", help="Run `groundwatch compact` on the lake first.")
    args = parser.parse_args(argv)
    if not args.reuse:
        t0 = time.perf_counter()
        build(args.lake, args.responses, args.per_hour, args.base)
        print(f"built in {time.perf_counter() - t0:.0f} s")
    if args.compact:
        from pipelines.cli import main as groundwatch

        t0 = time.perf_counter()
        groundwatch(["compact", "--lake", args.lake])
        print(f"compacted in {time.perf_counter() - t0:.0f} s")
    from starlette.testclient import TestClient

    from pipelines.reviewing.app import ReviewConfig, review_app
    from pipelines.reviewing.queries import REFRESH_SECONDS, LakeSession

    t0 = time.perf_counter()
    client = TestClient(review_app(ReviewConfig(args.lake, reviewer="bench")))
    print(
        f"app start (views over the lake, hours not compacted aggregated): {(time.perf_counter() - t0) * 1000:.0f} ms"
    )
    session = LakeSession(args.lake)
    con = __import__("dashboards.views", fromlist=["connect_lake"]).connect_lake(args.lake)
    total, in_review = con.sql("SELECT count(*), count_if(needs_review) FROM responses").fetchall()[0]
    first = con.sql("SELECT response_id, event_time FROM responses WHERE needs_review "
                    "ORDER BY CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, event_time, "
                    "response_id LIMIT 1").fetchall()[0]  # fmt: skip
    half = f"resp-{total // 2:08d}"
    middle = con.sql(f"SELECT response_id, event_time FROM responses WHERE needs_review "
                     f"AND response_id >= '{half}' ORDER BY response_id LIMIT 1").fetchall()[0]  # fmt: skip
    tenant = con.sql("SELECT tenant FROM responses GROUP BY 1 ORDER BY count(*) DESC LIMIT 1").fetchall()[0][0]
    print(f"lake: {total:,} responses, {in_review:,} in review; load average {os.getloadavg()[0]:.1f}")
    pages = [
        ("queue", "/queue"),
        ("queue, tenant filter", f"/queue?tenant={quote(tenant)}"),
        ("queue, reason filter", "/queue?reason=flagged"),
        ("queue, page 20", "/queue?page=20"),
        ("response page (first in queue)", f"/response/{first[0]}?t={quote(first[1].isoformat())}"),
        ("response page (middle of the lake)", f"/response/{middle[0]}?t={quote(middle[1].isoformat())}"),
        ("response page without its time", f"/response/{middle[0]}"),
    ]
    print("| page | median ms | worst ms | status |\n|---|---|---|---|")
    for name, url in pages:
        median, worst, status = _time(client, url, args.repeat)
        print(f"| {name} | {median:,.0f} | {worst:,.0f} | {status} |")
    median, worst = _time_call(session.refresh, args.repeat)
    print(f"| views made again (in a thread, every {REFRESH_SECONDS:.0f} s) | {median:,.0f} | {worst:,.0f} | |")
    form = {"label-0": "fully_grounded", "t": middle[1].isoformat()}
    median, worst = _time_call(lambda: client.post(f"/response/{middle[0]}/review", data=form), args.repeat)
    print(f"| submit a label (and its window's metrics again) | {median:,.0f} | {worst:,.0f} | |")
    print(f"load average after: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
