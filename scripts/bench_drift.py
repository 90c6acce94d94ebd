"""Benchmark of drift detection and incidents: detection delay on two scenarios, false alarms on stable traffic.

    python scripts/bench_drift.py [--seeds 1 2 3 4 5] [--stable-windows 60] [--regression-windows 30]
        [--two-causes-windows 30]

For each seed it generates three scenarios (pipelines.traffic.scenarios), every parameter given here, so
a change of the generator's defaults does not move the figures: `stable`; `retriever-regression` (r9 serves
what r7 served from 0.4 of the run); `two-causes` (the same regression from 1/3 of the run, and from 0.6
`gen-small-1` misquoting a number in every answer, half the traffic on the canary r8). It audits each
into a fresh lake with the pipeline's own functions (heuristic verifier, no Beam, for speed; the tests run
the real pipeline), runs `groundwatch drift` with default settings and reports, from the lake's rows:

- detection delay, in windows from the change (1 = the window the change starts in): to the first alert
  on the new retriever_version's slice, to the first alert of any slice, and to the window that opened the
  incident naming the cause (r9; for the second cause, gen-small-1); for the second cause, the first alert
  fired after it started, whatever its slice, since its slice's alert is usually open already;
- what the incidents named: runs with exactly the expected incidents open at the end (one naming r9;
  r9 and gen-small-1), and incidents naming anything else;
- false alarms: alerts and incidents on stable traffic, and alerts before the change, per 100 windows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

from pipelines.runner.drift_run import run_drift
from pipelines.traffic.scenarios import (
    MISQUOTING_MODEL,
    NEW_RETRIEVER,
    ScenarioSpec,
    audit_into_lake,
    change_time,
    misquote_time,
    scenario_responses,
)
from transforms.monitoring.drift import DriftConfig

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
R9 = ("retriever_version", NEW_RETRIEVER)
MODEL = ("generator_model", MISQUOTING_MODEL)


def _run(spec: ScenarioSpec, config: DriftConfig):
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as lake:
        audit_into_lake(list(scenario_responses(spec)), lake, window_seconds=spec.window_seconds)
        return run_drift(lake, config, workspace=False, out=lambda _: None)


def _delay(starts, change, step) -> int | None:
    """Windows from the change to the first of `starts` (1 = the change's own window), None if none."""
    after = sorted(s for s in starts if s >= change)
    return (after[0] - change) // step + 1 if after else None


def _opened(outcome, cause) -> list[datetime]:
    """The windows in which an incident naming `cause` was written (opened, renamed or joined)."""
    return [
        i.figures_through or i.window_start
        for i in outcome.incident_changes
        if (i.cause_dimension, i.cause_value) == cause
    ]


def _describe(delays: list[int | None]) -> str:
    found = [d for d in delays if d is not None]
    missed = len(delays) - len(found)
    if not found:
        return f"never ({missed} of {len(delays)} missed)"
    return (
        f"median {statistics.median(found):g}, mean {statistics.fmean(found):.1f}, max {max(found)} "
        f"({missed} of {len(delays)} missed)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="Default 1 2 3 4 5.")
    parser.add_argument("--stable-windows", type=int, default=60, help="Default 60.")
    parser.add_argument("--regression-windows", type=int, default=30, help="Default 30.")
    parser.add_argument("--two-causes-windows", type=int, default=30, help="Default 30.")
    parser.add_argument("--per-window", type=int, default=40, help="Mean responses per 60 s window. Default 40.")
    parser.add_argument("--two-causes-per-window", type=int, default=60, help="Default 60.")
    args = parser.parse_args(argv)
    config = DriftConfig()
    step = timedelta(seconds=60)
    rows: dict[str, list] = {k: [] for k in ("slice", "any", "incident", "m_alert", "m_incident")}
    stable_alarms = stable_incidents = stable_windows = pre_alarms = pre_windows = 0
    right_regression = right_two = 0
    others: list[str] = []
    started = time.time()
    common = dict(window_seconds=60, damaged_share=0.3, recover_at=None, start=START)
    for seed in args.seeds:
        stable = _run(
            ScenarioSpec("stable", windows=args.stable_windows, per_window=args.per_window, seed=seed, **common),
            config,
        )
        stable_alarms += len(stable.fired)
        stable_incidents += len({i.incident_id for i in stable.incident_changes})
        stable_windows += len(stable.windows)

        spec = ScenarioSpec(
            "retriever-regression",
            windows=args.regression_windows,
            per_window=args.per_window,
            change_at=0.4,
            canary_share=0.3,
            misquote_at=None,
            seed=seed,
            **common,
        )
        change, outcome = change_time(spec), _run(spec, config)
        pre_alarms += sum(1 for a in outcome.fired if a.window_start < change)
        pre_windows += round(spec.windows * spec.change_at)
        rows["slice"].append(
            _delay([a.window_start for a in outcome.fired if (a.slice_dimension, a.slice_value) == R9], change, step)
        )
        rows["any"].append(_delay([a.window_start for a in outcome.fired], change, step))
        rows["incident"].append(_delay(_opened(outcome, R9), change, step))
        named = [(i.cause_dimension, i.cause_value) for i in outcome.open_incidents]
        right_regression += named == [R9]
        others += [f"regression seed {seed}: {d}={v}" for d, v in named if (d, v) != R9]

        spec = ScenarioSpec(
            "two-causes",
            windows=args.two_causes_windows,
            per_window=args.two_causes_per_window,
            change_at=1 / 3,
            canary_share=0.5,
            misquote_at=0.6,
            misquote_share=1.0,
            seed=seed,
            **common,
        )
        change, misquote, outcome = change_time(spec), misquote_time(spec), _run(spec, config)
        rows["m_alert"].append(_delay([a.window_start for a in outcome.fired], misquote, step))
        rows["m_incident"].append(_delay(_opened(outcome, MODEL), misquote, step))
        named = sorted((i.cause_dimension, i.cause_value) for i in outcome.open_incidents)
        right_two += named == sorted([R9, MODEL])
        others += [f"two-causes seed {seed}: {d}={v}" for d, v in named if (d, v) not in (R9, MODEL)]
        print(
            f"seed {seed}: regression delay r9 slice {rows['slice'][-1]}, any alert {rows['any'][-1]}, "
            f"incident {rows['incident'][-1]}; two causes: misquoting alert {rows['m_alert'][-1]}, "
            f"incident {rows['m_incident'][-1]}, open {named}; stable: {len(stable.fired)} alerts "
            f"in {len(stable.windows)} windows",
            flush=True,
        )

    n = len(args.seeds)
    print(f"\nsummary over seeds {args.seeds} (delays in windows of 60 s; 1 = the window the change starts in)")
    print(f"  regression: first alert on the {NEW_RETRIEVER} slice: {_describe(rows['slice'])}")
    print(f"  regression: first alert of any slice: {_describe(rows['any'])}")
    print(f"  regression: incident naming {NEW_RETRIEVER}: {_describe(rows['incident'])}")
    print(f"  regression: runs ending with exactly one incident, naming {NEW_RETRIEVER}: {right_regression} of {n}")
    print(f"  two causes: first alert after the misquoting starts: {_describe(rows['m_alert'])}")
    print(f"  two causes: incident naming {MISQUOTING_MODEL}: {_describe(rows['m_incident'])}")
    print(f"  two causes: runs ending with exactly the two incidents: {right_two} of {n}")
    print(f"  incidents naming another slice: {', '.join(others) or 'none'}")
    print(
        f"  false alarms on stable traffic: {stable_alarms} alerts, {stable_incidents} incidents in "
        f"{stable_windows} windows ({100 * stable_alarms / max(1, stable_windows):.2f} alerts, "
        f"{100 * stable_incidents / max(1, stable_windows):.2f} incidents per 100 windows)"
    )
    print(
        f"  false alarms before the change (regression runs): {pre_alarms} in {pre_windows} windows "
        f"({100 * pre_alarms / max(1, pre_windows):.2f} per 100 windows)"
    )
    print(f"  wall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
