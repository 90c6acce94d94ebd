"""Benchmark of drift detection: detection delay on retriever regressions, false alarms on stable traffic.

    python scripts/bench_drift.py [--seeds 1 2 3 4 5] [--stable-windows 60] [--regression-windows 40]

For each seed it generates the `stable` and `retriever-regression` scenarios (pipelines.traffic.scenarios),
audits them into a fresh lake with the pipeline's own functions (heuristic verifier, no Beam, for
speed; the tests run the real pipeline), runs `groundwatch drift` with default settings and reports:

- detection delay: windows from the change (1 = the first window after it) to the first alert on the
  new retriever_version's own slice, to the first alert naming it (its slice, or an all-traffic alert
  whose message names it as new or least supported), and to the first alert of any slice;
- false alarms: alerts fired on stable traffic, and on regression traffic before the change,
  per 100 windows checked.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import timedelta

from pipelines.drift import run_drift
from pipelines.traffic.scenarios import NEW_RETRIEVER, ScenarioSpec, audit_into_lake, change_time, scenario_responses
from transforms.monitoring.drift import DriftConfig


def _run(spec: ScenarioSpec, config: DriftConfig) -> tuple[list, int]:
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as lake:
        audit_into_lake(list(scenario_responses(spec)), lake, window_seconds=spec.window_seconds)
        outcome = run_drift(lake, config, workspace=False, out=lambda _: None)
        return outcome.fired, len(outcome.windows)


def _delay(alerts, change, step) -> int | None:
    """Windows from the change to the first alert (1 = the first window after the change), None if none."""
    after = sorted(a.window_start for a in alerts if a.window_start >= change)
    return (after[0] - change) // step + 1 if after else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--stable-windows", type=int, default=60)
    parser.add_argument("--regression-windows", type=int, default=40)
    parser.add_argument("--per-window", type=int, default=40, help="Mean responses per 60 s window. Default 40.")
    parser.add_argument("--damaged-share", type=float, default=0.3)
    args = parser.parse_args(argv)
    config = DriftConfig()
    delays_named, delays_message, delays_any, stable_alarms, pre_alarms = [], [], [], [], []
    false_kinds: list[str] = []
    stable_windows = pre_windows = 0
    started = time.time()
    for seed in args.seeds:
        stable = ScenarioSpec("stable", windows=args.stable_windows, per_window=args.per_window, seed=seed)
        fired, checked = _run(stable, config)
        stable_alarms.append(len(fired))
        false_kinds += [f"{a.check}[{a.slice_dimension}={a.slice_value}]" for a in fired]
        stable_windows += checked
        spec = ScenarioSpec(
            "retriever-regression",
            windows=args.regression_windows,
            per_window=args.per_window,
            damaged_share=args.damaged_share,
            seed=seed,
        )
        change = change_time(spec)
        fired, _ = _run(spec, config)
        before = [a for a in fired if a.window_start < change]
        false_kinds += [f"{a.check}[{a.slice_dimension}={a.slice_value}] (pre-change)" for a in before]
        pre_alarms.append(len(before))
        pre_windows += round(spec.windows * spec.change_at)
        step = timedelta(seconds=spec.window_seconds)
        named_alerts = [a for a in fired if a.slice_dimension == "retriever_version" and a.slice_value == NEW_RETRIEVER]
        named = _delay(named_alerts, change, step)
        delays_named.append(named)
        mentions = [a for a in fired if f"retriever_version={NEW_RETRIEVER}" in a.message or a in named_alerts]
        delays_message.append(_delay(mentions, change, step))
        delays_any.append(_delay(fired, change, step))
        print(
            f"seed {seed}: delay: {NEW_RETRIEVER} slice {named}, naming {NEW_RETRIEVER} {delays_message[-1]}, "
            f"any {delays_any[-1]} windows; "
            f"false alarms: stable {stable_alarms[-1]} in {checked} windows, before the change {len(before)}",
            flush=True,
        )

    def describe(delays):
        found = [d for d in delays if d is not None]
        missed = len(delays) - len(found)
        if not found:
            return f"never detected ({missed} missed)"
        return f"mean {statistics.fmean(found):.2f}, max {max(found)} windows ({missed} of {len(delays)} missed)"

    print("\nsummary over seeds", args.seeds)
    print(f"  detection delay, alert on the {NEW_RETRIEVER} slice: {describe(delays_named)}")
    print(f"  detection delay, alert naming {NEW_RETRIEVER} (slice or message): {describe(delays_message)}")
    print(f"  detection delay, first alert of any slice: {describe(delays_any)}")
    print(
        f"  false alarms on stable traffic: {sum(stable_alarms)} alerts in {stable_windows} windows "
        f"({100 * sum(stable_alarms) / max(1, stable_windows):.2f} per 100 windows); "
        f"runs with any false alarm: {sum(1 for n in stable_alarms if n)} of {len(stable_alarms)}"
    )
    print(f"  false alarms before the change (regression runs): {sum(pre_alarms)} in {pre_windows} windows")
    if false_kinds:
        print("  false alarms were: " + ", ".join(sorted(false_kinds)))
    print(f"  wall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
