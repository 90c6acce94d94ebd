#!/usr/bin/env python3
"""Stage costs of this checkout beside another's: what a new audit stage adds, on the same responses.

    python scripts/bench_stages_against.py CHECKOUT [--responses 600] [--rounds 3]

Each round runs `bench_stages` of `scripts/bench_audit.py` (CPU ms per response of each stage's plain
function, on one core) in a fresh interpreter, first with the other checkout first on the path, then with
this one, on the same responses (generated once by this checkout: 5 sentences and 5 passages each, seed 11,
written to a file both read). A checkout whose `bench_stages` did not tune the cycle collector yet is measured
with it tuned, as its workers ran (`bench_audit.STAGES_PROBE`). It prints every round and each stage's median
per checkout. Not a test: on a shared machine the rounds spread by 5-10%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

from bench_audit import STAGES_PROBE, probe, write_traffic

from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses


def _costs(root: str, path: str, responses: int) -> dict[str, float]:
    costs = probe(root, STAGES_PROBE, path, "heuristic", str(responses))
    if costs is None:
        raise SystemExit(f"{root}: no scripts/bench_audit.py with a bench_stages to measure")
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("against", help="another checkout of groundwatch (e.g. a git worktree of main)")
    parser.add_argument("--responses", type=int, default=600, help="Responses per round. Default 600.")
    parser.add_argument("--rounds", type=int, default=3, help="Alternating rounds. Default 3.")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs: dict[str, list[dict[str, float]]] = {args.against: [], here: []}
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        path = os.path.join(tmp, "traffic.jsonl")
        write_traffic(
            path, generate_responses(args.responses, seed=11, sentences=5, passages=5, flaw_rate=FLAWED_FLAW_RATE)
        )
        for round_no in range(1, args.rounds + 1):
            for root in runs:
                costs = _costs(root, path, args.responses)
                runs[root].append(costs)
                print(f"round {round_no} {root}: all stages {sum(costs.values()):.2f} ms per response", flush=True)
    stages = list(dict.fromkeys(s for rounds in runs.values() for costs in rounds for s in costs))
    print(f"\nmedian CPU ms per response over {args.rounds} rounds ({args.responses} responses each):")
    print(f"  {'stage':<24} {'other':>8} {'this':>8}")
    for stage in [*stages, "all stages"]:
        cells = []
        for rounds in runs.values():
            values = [sum(c.values()) if stage == "all stages" else c.get(stage) for c in rounds]
            known = [v for v in values if v is not None]
            cells.append(f"{statistics.median(known):8.2f}" if known else f"{'-':>8}")
        print(f"  {stage:<24} {' '.join(cells)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
