"""Benchmark the LLM judge on the demo traffic against a local OpenAI-compatible server with fixed latency.

    python scripts/bench_judge.py [--latency 0.25] [--window-seconds 60] [--traffic FILE.jsonl]

Runs `groundwatch audit` (Beam FnApiRunner, 60 s windows unless `--window-seconds`) five ways:
heuristic only (baseline), `openai` without batching (one answer per call), `openai` with batching
(8 answers per call), and `cascade` with and without batching. For each it prints judge calls, calls
and tokens per audited response, sentences sent to the judge, wall time and audited responses per
second, then the factor by which the cascade cuts judge calls and tokens. The server is
`tests/support/openai_server.py`, answering every call with a valid verdict after `--latency` seconds; tokens
are its estimate (characters / 4).
Batches never span event-time windows, so sparse traffic in short windows fills calls only partly.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from dashboards.views import connect_lake  # noqa: E402
from pipelines.demo import sample_traffic_path  # noqa: E402
from pipelines.runner.bounded import run_audit as run  # noqa: E402
from tests.support.openai_server import OpenAIServer  # noqa: E402

RUNS = [
    ("heuristic (baseline)", "heuristic", 8),
    ("openai, no batching", "openai", 1),
    ("openai, batching 8", "openai", 8),
    ("cascade, no batching", "cascade", 1),
    ("cascade, batching 8", "cascade", 8),
]


def bench(traffic: str, latency: float, concurrency: int, band: str, window_seconds: int) -> list[dict]:
    results = []
    for label, verifier, per_call in RUNS:
        with OpenAIServer(latency_s=latency) as server, tempfile.TemporaryDirectory() as lake:
            argv = [f"--input={traffic}", f"--lake={lake}", f"--verifier={verifier}", "--runner=FnApiRunner"]
            argv.append(f"--window_seconds={window_seconds}")
            if verifier != "heuristic":
                argv += [
                    f"--judge_base_url={server.base_url}",
                    "--judge_model=bench-judge",
                    f"--judge_answers_per_call={per_call}",
                    f"--judge_max_concurrency={concurrency}",
                    f"--cascade_band={band}",
                ]
            started = time.perf_counter()
            counts = run(argv, out=lambda _: None)
            seconds = time.perf_counter() - started
            con = connect_lake(lake)
            tokens = con.execute(
                "SELECT coalesce(sum(t), 0) FROM "
                "(SELECT any_value(total_tokens) AS t FROM judge_calls GROUP BY call_id)"
            ).fetchone()[0]
            to_judge = con.execute("SELECT count(*) FROM sentences WHERE decided_by = 'openai'").fetchone()[0]
            sentences = con.execute("SELECT count(*) FROM sentences").fetchone()[0]
            results.append(
                {
                    "label": label,
                    "audited": counts.audited,
                    "calls": len(server.requests),
                    "tokens": tokens,
                    "judged_sentences": to_judge,
                    "sentences": sentences,
                    "seconds": seconds,
                }
            )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traffic", default=sample_traffic_path(), help="JSONL traffic. Default: the demo traffic.")
    parser.add_argument("--latency", type=float, default=0.25, help="Seconds the server takes per reply. Default 0.25.")
    parser.add_argument("--concurrency", type=int, default=4, help="--judge-max-concurrency. Default 4.")
    parser.add_argument("--band", default="0.5,0.8", help="--cascade-band. Default 0.5,0.8.")
    parser.add_argument(
        "--window-seconds", type=int, default=60, help="Event-time window; batches never span windows. Default 60."
    )
    args = parser.parse_args()
    results = bench(args.traffic, args.latency, args.concurrency, args.band, args.window_seconds)
    print(
        f"traffic {args.traffic}; reply latency {args.latency}s; concurrency {args.concurrency}; "
        f"band {args.band}; window {args.window_seconds}s"
    )
    print()
    print(
        "| run | audited | judge calls | calls/response | tokens/response | sentences judged | wall s | responses/s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        n = max(r["audited"], 1)
        print(
            f"| {r['label']} | {r['audited']} | {r['calls']} | {r['calls'] / n:.3f} | {r['tokens'] / n:.0f} | "
            f"{r['judged_sentences']}/{r['sentences']} | {r['seconds']:.1f} | {r['audited'] / r['seconds']:.1f} |"
        )
    by = {r["label"]: r for r in results}
    for batching in ("no batching", "batching 8"):
        full, cascade = by[f"openai, {batching}"], by[f"cascade, {batching}"]
        if cascade["calls"] and cascade["tokens"]:
            print(
                f"\ncascade vs openai ({batching}): judge calls cut {full['calls'] / cascade['calls']:.1f}x "
                f"({full['calls']} -> {cascade['calls']}), tokens cut {full['tokens'] / cascade['tokens']:.1f}x, "
                f"judged sentences {full['judged_sentences']} -> {cascade['judged_sentences']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
