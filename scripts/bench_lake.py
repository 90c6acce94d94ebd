"""Benchmark the audit lake at size: `groundwatch query` beside plain DuckDB on the raw files, before and
after `groundwatch compact`.

    python scripts/bench_lake.py --sentences 10000000 --lake /tmp/lake-10m
    python scripts/bench_lake.py --sentences 10000000 --lake /tmp/lake-10m --reuse   # lake already built
    python scripts/bench_lake.py ... --extra /tmp/previous   # also the .sql files of a folder (an older commit's)

The lake is built through the project's own writer (`write_rows_file`, one call per file) from synthetic
rows made with numpy and pyarrow in large batches (not the verifier): `--sentences` sentence rows, five per
response, one citation and two claims per response, `SENTENCES_PER_HOUR` sentences an hour, each hour's
rows of each table in two files (as two bundles of a bounded run write them) and `--duplicates` of the
responses (with their sentences, citations and claims) written again, audited later, in a third file (as
a stream restarted from its last commit writes them).

Then every query of `dashboards/queries/` and three ad hoc ones (a group-by over `sentences`, a join of
sentences to responses, the review queue of the last hour) run through `groundwatch query` (a subprocess:
wall time, and its peak RSS from `os.wait4`), each beside the same SQL over views of the raw files in a
plain DuckDB process (the query's own time and that process's peak RSS), first on the lake as written,
then after `groundwatch compact` (which also writes the rollups; the raw side's rollup views aggregate the
raw rows with the same SQL); and `groundwatch query "SELECT 1"` on the same lake (start-up). Each
figure is the median of `--repeat` runs, with the 1-minute load average when it was taken. The table is
printed as Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schemas import TABLES, grounded_probability  # noqa: E402
from transforms.io.lake.review_rollup import REVIEW_VIEW, review_rows_sql  # noqa: E402
from transforms.io.lake.rollups import ROLLUPS  # noqa: E402
from transforms.io.lake.writer import file_stem, table_path, write_rows_file  # noqa: E402

__all__ = ["build_lake", "main", "queries", "raw_views_sql"]

SENTENCES_PER_RESPONSE = 5
SENTENCES_PER_HOUR = 250_000
START = datetime(2026, 11, 1, tzinfo=UTC)
TENANTS = [f"tenant-{i:02d}" for i in range(20)]
RETRIEVERS = [f"retriever-v{i}" for i in range(1, 7)]
VERDICTS = ["fully_grounded", "partially_grounded", "ungrounded", "contradicted"]
VERDICT_SHARES = [0.70, 0.15, 0.10, 0.05]
SPANS = [f"unsupported span number {i} of the synthetic lake" for i in range(300)]
TEXTS = [f"Synthetic answer sentence {i}, long enough to look like one a RAG system writes." for i in range(2000)]


def _ad_hoc(last_hour: datetime) -> dict[str, str]:
    since = last_hour.strftime("%Y-%m-%d %H:%M:%S+00")
    return {
        "adhoc_group_by": "SELECT attribution_verdict, count(*), avg(confidence) FROM sentences GROUP BY 1 ORDER BY 1",
        "adhoc_join": (
            "SELECT r.tenant, count(*) AS contradicted FROM sentences s JOIN responses r USING (response_id) "
            "WHERE s.attribution_verdict = 'contradicted' GROUP BY 1 ORDER BY 1"
        ),
        "adhoc_review_last_hour": (
            "SELECT response_id, tenant, risk_level, round(overall_faithfulness_score, 2) AS faithfulness, "
            "review_reasons[1] AS first_reason FROM responses "
            f"WHERE needs_review AND event_time >= TIMESTAMPTZ '{since}' ORDER BY faithfulness, response_id"
        ),
    }


def _strings(values: list[str], index: np.ndarray) -> pa.Array:
    return pa.array(values, pa.string()).take(pa.array(index))


def _lists(rng: np.random.Generator, n: int, share: float, vocabulary: list[str]) -> pa.Array:
    """A list<string> column: `share` of the rows hold one item of `vocabulary`, the others none."""
    has = rng.random(n) < share
    offsets = np.concatenate([[0], np.cumsum(has)]).astype(np.int32)
    values = _strings(vocabulary, rng.integers(0, len(vocabulary), int(has.sum())))
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def _column(field: pa.Field, n: int, rng: np.random.Generator, when: np.ndarray) -> pa.Array:
    """A plausible column of any lake type, for the columns the benchmark does not set itself."""
    kind = field.type
    if pa.types.is_list(kind):
        return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, np.int32)), pa.array([], kind.value_type))
    if pa.types.is_timestamp(kind):
        return pa.array(when, pa.timestamp("us", tz="UTC"))
    if pa.types.is_boolean(kind):
        return pa.array(rng.random(n) < 0.1)
    if pa.types.is_int64(kind):
        return pa.array(rng.integers(0, 10, n))
    if pa.types.is_float64(kind):
        return pa.array(rng.random(n))
    if pa.types.is_string(kind):
        return _strings([f"{field.name}-a", f"{field.name}-b", f"{field.name}-c"], rng.integers(0, 3, n))
    return pa.nulls(n, kind)


def _grounded_probabilities(verdict: np.ndarray, confidence: np.ndarray) -> np.ndarray:
    """`schemas.grounded_probability` of each (verdict index, confidence), over whole arrays: per verdict it is
    affine in the confidence, so its values at 0 and 1 give it (a call per sentence cost seconds an hour)."""
    at_0 = np.array([grounded_probability(v, 0.0) for v in VERDICTS])
    at_1 = np.array([grounded_probability(v, 1.0) for v in VERDICTS])
    return at_0[verdict] + (at_1 - at_0)[verdict] * confidence


def _table(name: str, n: int, rng: np.random.Generator, when: np.ndarray, given: dict[str, pa.Array]) -> pa.Table:
    schema = TABLES[name].schema
    columns = [given[f.name] if f.name in given else _column(f, n, rng, when) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _hour_tables(hour: int, responses: int, rng: np.random.Generator) -> dict[str, pa.Table]:
    """The rows of one hour: responses, their sentences, citations and claims."""
    start = START + timedelta(hours=hour)
    base = np.datetime64(start.replace(tzinfo=None), "us")
    offsets = np.sort(rng.integers(0, 3_600_000_000, responses))
    event = base + offsets.astype("timedelta64[us]")
    window = event.astype("datetime64[m]").astype("datetime64[us]")
    audited = event + np.timedelta64(5, "m")
    ids = pa.array([f"r-{hour:05d}-{i:07d}" for i in range(responses)])
    tenant = rng.integers(0, len(TENANTS), responses)
    retriever = rng.integers(0, len(RETRIEVERS), responses)
    risk = rng.choice(3, responses, p=[0.6, 0.3, 0.1])
    review = rng.random(responses) < 0.01
    common = {
        "response_id": ids,
        "event_time": pa.array(event, pa.timestamp("us", tz="UTC")),
        "window_start": pa.array(window, pa.timestamp("us", tz="UTC")),
        "audited_at": pa.array(audited, pa.timestamp("us", tz="UTC")),
        "tenant": _strings(TENANTS, tenant),
        "retriever_version": _strings(RETRIEVERS, retriever),
        "risk_level": _strings(["low", "medium", "high"], risk),
    }

    def repeat(columns: dict[str, pa.Array], times: int) -> tuple[dict[str, pa.Array], np.ndarray]:
        index = np.repeat(np.arange(responses), times)
        return {k: v.take(pa.array(index)) for k, v in columns.items()}, np.tile(np.arange(times), responses)

    per_sentence, sentence_index = repeat(common, SENTENCES_PER_RESPONSE)
    n = len(sentence_index)
    verdict = rng.choice(len(VERDICTS), n, p=VERDICT_SHARES)
    confidence = rng.beta(5, 2, n)
    sentences = _table(
        "sentences",
        n,
        rng,
        np.repeat(audited, SENTENCES_PER_RESPONSE),
        {
            **{k: v for k, v in per_sentence.items() if k != "risk_level"},
            "sentence_index": pa.array(sentence_index, pa.int64()),
            "sentence_text": _strings(TEXTS, rng.integers(0, len(TEXTS), n)),
            "attribution_verdict": _strings(VERDICTS, verdict),
            "confidence": pa.array(confidence),
            "grounded_probability": pa.array(_grounded_probabilities(verdict, confidence)),
            "unsupported_spans": _lists(rng, n, 0.2, SPANS),
            "decided_by": _strings(["heuristic", "model", "judge"], rng.choice(3, n, p=[0.8, 0.15, 0.05])),
        },
    )
    response_table = _table(
        "responses",
        responses,
        rng,
        audited,
        {
            **common,
            "window_end": pa.array(window + np.timedelta64(1, "m"), pa.timestamp("us", tz="UTC")),
            "sentence_count": pa.array(np.full(responses, SENTENCES_PER_RESPONSE)),
            "overall_faithfulness_score": pa.array(rng.beta(5, 2, responses)),
            "mean_confidence": pa.array(rng.beta(5, 2, responses)),
            "needs_review": pa.array(review),
            "review_reasons": _lists(rng, responses, 1.0, ["ungrounded", "contradicted", "low_confidence"]),
            "claim_count": pa.array(np.full(responses, 2)),
            "attribution_coverage_rate": pa.array(rng.uniform(0.85, 1.0, responses)),
            "low_confidence_claim_rate": pa.array(rng.uniform(0.0, 0.2, responses)),
        },
    )
    per_citation, citation_index = repeat(common, 1)
    citations = _table(
        "citations",
        responses,
        rng,
        audited,
        {**per_citation, "citation_index": pa.array(citation_index, pa.int64())},
    )
    per_claim, claim_index = repeat({**common, "generator_model": _strings(["gen-a", "gen-b"], retriever % 2)}, 2)
    claims = _table(
        "claims", 2 * responses, rng, np.repeat(audited, 2), {**per_claim, "claim_index": pa.array(claim_index)}
    )
    return {"responses": response_table, "sentences": sentences, "citations": citations, "claims": claims}


def _again(table: pa.Table, keep: np.ndarray) -> pa.Table:
    """The rows of the responses in `keep`, audited an hour later (a restarted stream's second copy)."""
    mask = pa.compute.is_in(table["response_id"], value_set=pa.array(keep))
    copy = table.filter(mask)
    later = pa.compute.add(copy["audited_at"], pa.scalar(timedelta(hours=1), pa.duration("us")))
    return copy.set_column(copy.schema.get_field_index("audited_at"), "audited_at", later.cast(copy["audited_at"].type))


def build_lake(
    lake: str,
    sentences: int,
    *,
    duplicates: float = 0.01,
    seed: int = 7,
    sentences_per_hour: int = SENTENCES_PER_HOUR,
) -> dict[str, int]:
    """Write the synthetic lake (`sentences_per_hour` a partition); returns the files and rows written per table."""
    import pyarrow.compute  # noqa: F401  (pa.compute)

    rng = np.random.default_rng(seed)
    responses_total = sentences // SENTENCES_PER_RESPONSE
    per_hour = sentences_per_hour // SENTENCES_PER_RESPONSE
    hours = max(1, -(-responses_total // per_hour))
    written: dict[str, int] = {}
    for hour in range(hours):
        count = min(per_hour, responses_total - hour * per_hour)
        when = START + timedelta(hours=hour)
        date, hh = when.strftime("%Y-%m-%d"), when.strftime("%H")
        tables = _hour_tables(hour, count, rng)
        ids = tables["responses"]["response_id"].to_numpy(zero_copy_only=False)
        again = rng.choice(ids, int(len(ids) * duplicates), replace=False)
        for name, rows in tables.items():
            folder = table_path(lake, name, date, hh)
            half = rows.num_rows // 2
            parts = [("bundle-0", rows.slice(0, half)), ("bundle-1", rows.slice(half))]
            if len(again):
                parts.append(("restart", _again(rows, again)))
            for label, part in parts:
                write_rows_file(folder, file_stem(name, "bench", str(hour), label), name, part)
                written[f"{name}_files"] = written.get(f"{name}_files", 0) + 1
                written[f"{name}_rows"] = written.get(f"{name}_rows", 0) + part.num_rows
    written["hours"] = hours
    return written


def raw_views_sql(lake: str) -> list[str]:
    """Views of the raw files, one per table, no duplicates removed: what a plain DuckDB user writes."""
    import duckdb

    from transforms.io.lake.reader import has_files, table_glob, table_sql

    con = duckdb.connect()
    statements = []
    for name, spec in sorted(TABLES.items()):
        if has_files(lake, name):
            body = (
                f"SELECT * FROM read_parquet('{table_glob(lake, name)}', hive_partitioning = true, "
                "union_by_name = true, hive_types = {'date': DATE, 'hour': INTEGER})"
            )
        else:
            body = table_sql(con, spec, lake)  # an empty table: the reader's typed empty SELECT
        statements.append(f'CREATE VIEW "{name}" AS {body}')
    for name, rollup in sorted(ROLLUPS.items()):  # what the rollups hold, aggregated from the raw rows
        statements.append(f'CREATE VIEW "{name}" AS {rollup.aggregate_sql(f"SELECT * FROM {rollup.table}")}')
    rows = review_rows_sql("SELECT * FROM sentences", "SELECT * FROM responses")  # the review queue's, likewise
    statements.append(f'CREATE VIEW "{REVIEW_VIEW}" AS {rows}')
    return statements


_RAW_RUNNER = """
import json, resource, sys, time
import duckdb
views, sql = json.load(sys.stdin)
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
for v in views:
    con.execute(v)
t = time.perf_counter()
rows = con.execute(sql).fetchall()
print(json.dumps([time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(rows)]))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _timed(argv: list[str], stdin: bytes | None = None) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS (KiB) and stdout of one command, run under `/usr/bin/time`: a child forked from
    this process would inherit its peak RSS (the lake's build), so the figure comes from a small parent."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        started = time.perf_counter()
        child = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", report.name, *argv], input=stdin, capture_output=True, env=_env()
        )
        wall = time.perf_counter() - started
        if child.returncode:
            raise SystemExit(f"{' '.join(argv[:4])} failed: {child.stderr.decode().strip()[-600:]}")
        peak = int(report.read().split()[-1])
    return wall, peak, child.stdout


def _gw_query(lake: str, sql: str) -> tuple[float, int]:
    """One `groundwatch query` run: wall seconds and peak RSS in KiB."""
    wall, peak, _ = _timed([sys.executable, "-m", "pipelines.cli", "query", "--lake", lake, "--format", "csv", sql])
    return wall, peak


def _raw_query(views: list[str], sql: str) -> tuple[float, int]:
    """The same SQL over views of the raw files in a plain DuckDB process: the query's seconds, peak RSS."""
    _, peak, out = _timed([sys.executable, "-c", _RAW_RUNNER], json.dumps([views, sql]).encode())
    seconds, _, _ = json.loads(out)
    return seconds, peak


def _median(runs: list[tuple[float, int]]) -> tuple[float, int]:
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def queries(last_hour: datetime, extra: str | None = None) -> dict[str, str]:
    found = {p.stem: p.read_text() for p in sorted((ROOT / "dashboards" / "queries").glob("*.sql"))}
    more = {f"{p.stem} ({p.parent.name})": p.read_text() for p in sorted(Path(extra).glob("*.sql"))} if extra else {}
    return {**found, **_ad_hoc(last_hour), **more}


def measure(
    lake: str,
    last_hour: datetime,
    repeat: int,
    only: frozenset[str] = frozenset(),
    extra: str | None = None,
    skip_raw: frozenset[str] = frozenset(),
) -> tuple[dict[str, dict], float]:
    """Per query: groundwatch wall/RSS, raw seconds/RSS (NaN for `skip_raw`), load average; and the start-up
    wall time."""
    views = raw_views_sql(lake)
    startup = statistics.median(_gw_query(lake, "SELECT 1")[0] for _ in range(repeat))
    results = {}
    for name, sql in queries(last_hour, extra).items():
        if only and name not in only:
            continue
        if name in skip_raw:
            _gw_query(lake, sql)  # once untimed, to bring its files into the page cache
            gw, raw = _median([_gw_query(lake, sql) for _ in range(repeat)]), (float("nan"), 0)
        else:
            _raw_query(views, sql)  # once untimed: the files in the page cache for both, whichever runs first
            gw = _median([_gw_query(lake, sql) for _ in range(repeat)])
            raw = _median([_raw_query(views, sql) for _ in range(repeat)])
        results[name] = {"gw": gw, "raw": raw, "load": os.getloadavg()[0]}
        print(f"  {name}: groundwatch {gw[0]:.2f} s {gw[1] / 1024:.0f} MiB, raw {raw[0]:.2f} s", file=sys.stderr)
    return results, startup


def _table_markdown(before: dict, after: dict, startup_before: float, startup_after: float) -> str:
    lines = [
        "| query | raw DuckDB s | raw MiB | before: gw s | before: gw MiB | after: gw s | after: gw MiB | "
        "after within 3x raw + start-up | load |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for name in before:
        raw_s, raw_kib = after[name]["raw"]
        b_s, b_kib = before[name]["gw"]
        a_s, a_kib = after[name]["gw"]
        ok = a_s <= 3 * raw_s + startup_after and a_kib < 1024 * 1024
        verdict = "not run raw" if raw_s != raw_s else "yes" if ok else "NO"
        lines.append(
            f"| {name} | {raw_s:.2f} | {raw_kib / 1024:.0f} | {b_s:.2f} | {b_kib / 1024:.0f} | {a_s:.2f} | "
            f"{a_kib / 1024:.0f} | {verdict} | {after[name]['load']:.1f} |"
        )
    lines.append(
        f"| `SELECT 1` (start-up) | | | {startup_before:.2f} | | {startup_after:.2f} | | "
        f"{'yes' if startup_after < 0.5 else 'NO'} (< 0.5 s) | {os.getloadavg()[0]:.1f} |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, required=True, help="Sentence rows to write, e.g. 10000000.")
    parser.add_argument("--lake", required=True, help="Folder for the lake (created; must be empty unless --reuse).")
    parser.add_argument("--duplicates", type=float, default=0.01, help="Share of responses written twice. 0.01.")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure (the median is kept). Default 3.")
    parser.add_argument("--reuse", action="store_true", help="Measure the lake already in --lake; do not build.")
    parser.add_argument("--skip-before", action="store_true", help="Measure only after compacting.")
    parser.add_argument("--only", nargs="*", default=[], help="Measure only these queries (names as in the table).")
    parser.add_argument(
        "--extra",
        help="Also time the .sql files of this folder, named '<stem> (<folder>)' (e.g. the queries of an earlier "
        "commit, from git show). Default: none.",
    )
    parser.add_argument(
        "--skip-raw",
        nargs="*",
        default=[],
        help="Time these queries through groundwatch only (e.g. the rollup queries at 100 million: on the raw "
        "side their views aggregate every row). Default: none.",
    )
    args = parser.parse_args(argv)
    if not args.reuse:
        if os.path.exists(args.lake) and os.listdir(args.lake):
            parser.error(f"--lake {args.lake} is not empty (give --reuse to measure it as it is)")
        started = time.perf_counter()
        written = build_lake(args.lake, args.sentences, duplicates=args.duplicates)
        print(f"built in {time.perf_counter() - started:.0f} s: {written}", file=sys.stderr)
    hours = -(-args.sentences // SENTENCES_PER_HOUR)
    selection = (frozenset(args.only), args.extra, frozenset(args.skip_raw))
    last_hour = START + timedelta(hours=hours - 1)
    before, startup_before = ({}, float("nan"))  # NaN: not measured (--skip-before)
    if not args.skip_before:
        print("before compaction:", file=sys.stderr)
        before, startup_before = measure(args.lake, last_hour, args.repeat, *selection)
    started = time.perf_counter()
    compact = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "compact", "--lake", args.lake],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    print(f"compacted in {time.perf_counter() - started:.0f} s:\n{compact.stdout}", file=sys.stderr)
    print("after compaction:", file=sys.stderr)
    after, startup_after = measure(args.lake, last_hour, args.repeat, *selection)
    if not before:
        before = {k: {"gw": (float("nan"), 0), **{x: y for x, y in v.items() if x != "gw"}} for k, v in after.items()}
    print(_table_markdown(before, after, startup_before, startup_after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
