#!/usr/bin/env python3
"""Benchmark the lake's manifest: what it adds to a bounded audit, and how long `verify-lake` takes.

    python scripts/bench_manifest.py --responses 20000 [--repeat 1]     # audit with and without the manifest
    python scripts/bench_manifest.py --verify /tmp/lake-10m             # verify-lake on a built lake

The audit side runs `groundwatch audit` (a subprocess, default options: one worker process per core) on the
same generated traffic (5 sentences, 5 passages, attributed: the traffic of `scripts/bench_audit.py`) into a
fresh lake, alternately with the manifest turned off (`GROUNDWATCH_LAKE_MANIFEST=off`) and on, `--repeat`
pairs, and prints each run's wall and CPU seconds (the subprocess and its workers, from `os.wait4`) and the
entries written. The CPU figure is the fairer one on a shared machine.

The verify side times `groundwatch verify-lake` on a lake already built (for example by `scripts/bench_lake.py
--sentences 10000000 --lake /tmp/lake-10m`, whose writer records the manifest): `--print-head` (the chain
alone), `--sample 0.1`, and the full check. Not a test: figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from process_memory import timed_run  # noqa: E402

__all__ = ["main"]


def bench_audit(responses: int, repeat: int) -> None:
    from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses

    with tempfile.TemporaryDirectory(prefix="gw-manifest-") as tmp:
        traffic = os.path.join(tmp, "traffic.jsonl")
        with open(traffic, "wb") as f:
            for message in generate_responses(
                responses, seed=11, sentences=5, passages=5, attributed=True, flaw_rate=FLAWED_FLAW_RATE
            ):
                f.write(json.dumps(message).encode() + b"\n")
        print("| run | manifest | wall s | CPU s | entries | load before |")
        print("|---|---|---|---|---|---|")
        for run in range(repeat):
            for manifest in ("off", "on"):
                lake = os.path.join(tmp, f"lake-{run}-{manifest}")
                env = {**os.environ, "PYTHONPATH": ROOT, "GROUNDWATCH_LAKE_MANIFEST": manifest}
                load = os.getloadavg()[0]
                argv = [sys.executable, "-m", "pipelines.cli", "audit", f"--input={traffic}", f"--lake={lake}"]
                wall, cpu, code, _ = timed_run(argv, env=env, cwd=ROOT)
                entries = len(glob.glob(os.path.join(lake, "_manifest", "*.json")))
                print(
                    f"| {run + 1} | {manifest} | {wall:.1f} | {cpu:.1f} | {entries} | {load:.1f} |"
                    + (f" exit {code}" if code else "")
                )


def bench_verify(lake: str) -> None:
    env = {**os.environ, "PYTHONPATH": ROOT}
    print("| verify-lake | wall s | CPU s | exit | last line |")
    print("|---|---|---|---|---|")
    for flags in (["--print-head"], ["--sample", "0.1"], []):
        argv = [sys.executable, "-m", "pipelines.cli", "verify-lake", "--lake", lake, *flags]
        wall, cpu, code, output = timed_run(argv, env=env, cwd=ROOT)
        last = (output.strip().splitlines() or [""])[-1]
        print(f"| {' '.join(flags) or '(full)'} | {wall:.1f} | {cpu:.1f} | {code} | {last[-120:]} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=20000, help="Responses to audit. Default 20000.")
    parser.add_argument("--repeat", type=int, default=1, help="Pairs of audits (off, on). Default 1.")
    parser.add_argument("--verify", metavar="LAKE", help="Time verify-lake on this lake instead of the audits.")
    args = parser.parse_args(argv)
    if args.verify:
        bench_verify(args.verify)
    else:
        bench_audit(args.responses, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
