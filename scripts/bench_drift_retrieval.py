"""Benchmark of retrieval vs generation: do incidents name the right cause, and how soon is each seen?

    python scripts/bench_drift_retrieval.py [--seeds 1 2 3 4 5] [--windows 30] [--per-window 40]

For each seed it generates three scenarios (pipelines.traffic.scenarios), every parameter given here, each
regression starting at 0.4 of the run: `off-topic-retriever` (r9 serves what r7 served, 40% of its responses
with passages about another domain), `generator-regression` (gen-large-3 answers half the traffic and ignores
its passages in 60% of its sentences) and the demo's `retriever-regression` (a third of r9's passages
irrelevant or stale, at the healthy flaw rate). It audits each into a fresh lake with the pipeline's own
functions and runs `groundwatch drift` with default settings (as `scripts/bench_drift.py` does), then reports:

- detection delay, in windows from the change (1 = the window the change starts in): to the first retrieval
  alert (`context_relevance_drop` or `empty_retrieval_rise`) on the cause's slice, to the first
  `evidence_use_drop` alert on it, to the first alert of any kind on it, and to the window that opened the
  incident naming it;
- the cause each run's incidents named: runs ending with exactly the expected incident (its slice and its
  cause, retrieval or generation), and any incident naming the other cause;
- retrieval alerts in the generator regression (there should be none: retrieval held; evidence use falls).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from datetime import timedelta

from bench_drift import START, _delay, _describe, _opened, _run

from pipelines.traffic.scenarios import NEW_GENERATOR, NEW_RETRIEVER, ScenarioSpec, change_time
from pipelines.traffic.synthetic import HEALTHY_FLAW_RATE
from transforms.monitoring.drift import DriftConfig
from transforms.monitoring.retrieval_checks import EMPTY_RETRIEVAL_CHECK, EVIDENCE_USE_CHECK, RELEVANCE_CHECK

SCENARIOS = {
    # name: (scenario, extra spec fields, cause slice, expected cause)
    "off-topic retriever": ("off-topic-retriever", {}, ("retriever_version", NEW_RETRIEVER), "retrieval"),
    "generator regression": ("generator-regression", {}, ("generator_model", NEW_GENERATOR), "generation"),
    "demo's retriever regression": (
        "retriever-regression",
        {"damaged_share": 0.3, "flaw_rate": HEALTHY_FLAW_RATE},
        ("retriever_version", NEW_RETRIEVER),
        "retrieval",
    ),
}
OTHER = {"retrieval": "generation", "generation": "retrieval"}
RETRIEVAL_MOVED = (RELEVANCE_CHECK, EMPTY_RETRIEVAL_CHECK)
"""The checks of the passages themselves: what an incident's cause is read from."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="Default 1 2 3 4 5.")
    parser.add_argument("--windows", type=int, default=30, help="Windows per run. Default 30.")
    parser.add_argument("--per-window", type=int, default=40, help="Mean responses per 60 s window. Default 40.")
    args = parser.parse_args(argv)
    logging.getLogger("groundwatch.drift").setLevel(logging.ERROR)  # the figures below, not every alert's line
    config, step, started = DriftConfig(), timedelta(seconds=60), time.time()
    delays = {label: {"retrieval": [], "evidence use": [], "any": [], "incident": []} for label in SCENARIOS}
    right = dict.fromkeys(SCENARIOS, 0)
    crossed: list[str] = []
    generator_retrieval_alerts = 0
    for seed in args.seeds:
        for label, (name, extra, cause, kind) in SCENARIOS.items():
            # One-minute windows and the scenarios' default shares (`ScenarioSpec`).
            spec = ScenarioSpec(
                name, windows=args.windows, per_window=args.per_window, change_at=0.4, seed=seed, start=START, **extra
            )
            change, outcome = change_time(spec), _run(spec, config)
            on_cause = [a for a in outcome.fired if (a.slice_dimension, a.slice_value) == cause]
            retrieval = [a.window_start for a in on_cause if a.check in RETRIEVAL_MOVED]
            delays[label]["retrieval"].append(_delay(retrieval, change, step))
            used = [a.window_start for a in on_cause if a.check == EVIDENCE_USE_CHECK]
            delays[label]["evidence use"].append(_delay(used, change, step))
            delays[label]["any"].append(_delay([a.window_start for a in on_cause], change, step))
            delays[label]["incident"].append(_delay(_opened(outcome, cause), change, step))
            named = [((i.cause_dimension, i.cause_value), i.cause) for i in outcome.open_incidents]
            right[label] += named == [(cause, kind)]
            crossed += [f"{label} seed {seed}: {d}={v} {c}" for (d, v), c in named if c == OTHER[kind]]
            if name == "generator-regression":
                generator_retrieval_alerts += sum(1 for a in outcome.fired if a.check in RETRIEVAL_MOVED)
            print(f"seed {seed} {label}: incidents {named}; delays {[d[-1] for d in delays[label].values()]}")

    n = len(args.seeds)
    print(f"\nsummary over seeds {args.seeds} (delays in windows of 60 s; 1 = the window the change starts in)")
    for label, (_, _, (dimension, value), kind) in SCENARIOS.items():
        print(f"  {label} ({dimension}={value}, expected cause {kind}):")
        print(f"    first retrieval alert on its slice: {_describe(delays[label]['retrieval'])}")
        print(f"    first evidence-use alert on its slice: {_describe(delays[label]['evidence use'])}")
        print(f"    first alert of any kind on its slice: {_describe(delays[label]['any'])}")
        print(f"    incident naming it: {_describe(delays[label]['incident'])}")
        print(f"    runs ending with exactly that incident and cause: {right[label]} of {n}")
    print(f"  incidents naming the other cause: {', '.join(crossed) or 'none'}")
    print(f"  relevance or empty-retrieval alerts in the generator regression runs: {generator_retrieval_alerts}")
    print(f"  wall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
