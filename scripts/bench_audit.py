#!/usr/bin/env python3
"""Benchmark the audit: the verifier alone (sentences/s, one core) and the whole pipeline (responses/s).

    python scripts/bench_audit.py [--responses 5000] [--verifier heuristic] [extra Beam options]
    python scripts/bench_audit.py --direct_num_workers=1   # the whole pipeline in this one process
    python scripts/bench_audit.py --responses 100000 --pipeline-only [--max_records_per_run=100000]
    python scripts/bench_audit.py --unattributed   # the same answers without citation markers, citations or claims
    python scripts/bench_audit.py --healthy   # 3 sentences in 100 flawed instead of 30 (what costs the flaws add)
    python scripts/bench_audit.py --against /tmp/base [--rounds 3]   # another checkout's verifier, then this one's
    python scripts/bench_audit.py --against /tmp/base --whole-pipeline   # the whole pipeline beside another's,
                                                                       # each with its stages' cost and the rest
    python scripts/bench_audit.py --against /tmp/base --whole-pipeline --stages-inside   # both in one process each,
                                                   # the stage DoFns' CPU timed inside the run, and the rest

Generates N synthetic responses with 5 answer sentences and 5 evidence passages
each (`pipelines.traffic.synthetic`), times `Verifier.verify` over all their sentences in
this process (CPU time, one core), the plain function behind each pipeline
stage (CPU ms per response, each response through all stages in turn as in the
fused pipeline, and what two busy cores would reach on them alone), then writes the responses as JSONL and times
`groundwatch audit` with its default options (one worker process per core for
inputs of 4 MiB or more, about 1,900 of these responses; reading, parsing,
windowing, dedupe, verifying, citation and claim audits, retrieval scores, scoring and writing
the Parquet lake, start-up included), in wall-clock and CPU seconds. Prints the
peak resident memory of the run (this process and its workers; an input larger than
`--max_records_per_run`, default 50,000, is audited in passes), how many responses rows the lake got, and the
lake's bytes per table and per audited response. The run's CPU is split between this process and its child
processes; on worker processes, and unless `--pipeline-only`, also into the stages' functions (at the cost
measured before the run) and the rest. `--against CHECKOUT --whole-pipeline` runs another checkout's audit and this
one's in turn, each beside its stage costs; with `--stages-inside`, each in one process, its stage DoFns timed inside
that run.
Not a test: figures depend on the machine and its load
(wall-clock figures on a shared machine understate the pipeline; CPU figures do not).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from process_memory import PeakMemory, timed_run  # noqa: E402

from pipelines.runner.bounded import pipeline_options, runs_in_process, where_it_runs  # noqa: E402
from pipelines.runner.bounded import run_audit as run  # noqa: E402
from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, HEALTHY_FLAW_RATE, generate_responses  # noqa: E402
from schemas import LoggedResponse, Origin, ParsedResponse  # noqa: E402
from transforms.audit.stages import score_and_flag, settle_garbage_collector, verify_response  # noqa: E402
from transforms.audit.steps import audit_steps  # noqa: E402
from transforms.ingest.parse import parse_message  # noqa: E402
from transforms.io.lake.rows import to_lake_rows  # noqa: E402
from transforms.retrieval.report import score_retrieval_step  # noqa: E402
from transforms.text.sentences import split_sentences  # noqa: E402
from transforms.verify.registry import make_verifier  # noqa: E402


def _cpu_split() -> tuple[float, float]:
    """CPU seconds of this process and of its finished children (the workers of a multi-process run)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def bench_verifier(responses: list[LoggedResponse], name: str) -> tuple[int, float]:
    """Sentences verified and CPU seconds spent by `Verifier.verify` alone (sentences split beforehand)."""
    verifier = make_verifier(name)
    work = [(split_sentences(r.answer), r.evidence) for r in responses]
    start = time.process_time()
    sentences = 0
    for split, evidence in work:
        sentences += len(verifier.verify(split, evidence).verdicts)
    return sentences, time.process_time() - start


def bench_stages(lines: list[bytes], name: str) -> list[tuple[str, float]]:
    """CPU milliseconds per response of each stage's plain function, run outside Beam on one core.

    Each response goes through every stage before the next response starts, as in the pipeline, where the
    stages are fused: the caches a stage shares with the one before it (a response's passages, cut and
    stemmed by the verifier, are indexed again by the citation and claim audits) are warm, as they are
    there. Timing each stage over all responses in turn would charge the later stages for cache misses
    the pipeline does not have (citations then cost 15% more). The cycle collector is tuned as the pipeline's
    workers tune it (`settle_garbage_collector`), so that the costs are comparable with a run's.
    """
    verifier = make_verifier(name)
    now = datetime.now(UTC)
    stages = [
        ("ParseResponses", lambda line: ParsedResponse(response=parse_message(line), origin=Origin(source="bench"))),
        (
            "VerifySentences",
            lambda p: verify_response(p, verifier=verifier, threshold=0.7, window_start=now, window_end=now, now=now),
        ),
        *((label, step) for label, _, step in audit_steps(0.7)),
        ("ScoreRetrieval", score_retrieval_step),
        ("ScoreAndFlag", lambda a: score_and_flag(a, 0.7)),
        ("ToLakeRows", to_lake_rows),
    ]
    seconds = dict.fromkeys([label for label, _ in stages], 0.0)
    gc.collect()  # garbage left by what ran before is not charged to the stages
    settle_garbage_collector()
    for line in lines:
        value = line
        for label, stage in stages:
            start = time.process_time()
            value = stage(value)
            seconds[label] += time.process_time() - start
    return [(label, s * 1000 / len(lines)) for label, s in seconds.items()]


def _runner_mode(argv: list[str]) -> str:
    """The runner and workers the audit will use with these arguments (large inputs get one worker per core)."""
    return where_it_runs(pipeline_options(argv))


def _flaw_rate(args) -> float:
    """Flawed by default: the traffic the documented figures were measured on."""
    return HEALTHY_FLAW_RATE if args.healthy else FLAWED_FLAW_RATE


def _traffic(args):
    """The generated responses to measure: 5 sentences and 5 passages each, with or without attribution."""
    return generate_responses(
        args.responses,
        seed=args.seed,
        sentences=5,
        passages=5,
        attributed=not args.unattributed,
        flaw_rate=_flaw_rate(args),
    )


# Run in a fresh interpreter with one checkout first on the path: its own traffic generator, splitter and verifier.
_RATE_PROBE = """
import json, sys, time
from pipelines.traffic.synthetic import generate_responses
from schemas import LoggedResponse
from transforms.text.sentences import split_sentences
from transforms.verify.registry import make_verifier
n, seed, name, flaw_rate = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
messages = generate_responses(n, seed=seed, sentences=5, passages=5, attributed=True, flaw_rate=flaw_rate)
work = [(split_sentences(r.answer), r.evidence) for r in map(LoggedResponse.model_validate, messages)]
verifier = make_verifier(name)
start, count = time.process_time(), 0
for split, evidence in work:
    count += len(verifier.verify(split, evidence).verdicts)
print(json.dumps({"sentences": count, "seconds": time.process_time() - start}))
"""


def _rate(root: str, args) -> tuple[int, float]:
    figures = probe(root, _RATE_PROBE, str(args.responses), str(args.seed), args.verifier, str(_flaw_rate(args)))
    return figures["sentences"], figures["seconds"]


def bench_against(args) -> None:
    """The verifier at `args.against` and this checkout's, alternately (A B A B ...), in the same order as the
    whole-pipeline mode, each round in a fresh process on the same generated responses: sentences per CPU
    second of each, round by round."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rates: dict[str, list[float]] = {args.against: [], here: []}
    for round_no in range(1, args.rounds + 1):
        for root in rates:
            sentences, seconds = _rate(root, args)
            rates[root].append(sentences / seconds)
            print(f"round {round_no} {root}: {sentences} sentences, {seconds:.2f} CPU s = {sentences / seconds:,.0f}/s")
    for root, values in rates.items():
        print(f"{root}: median {statistics.median(values):,.0f} sentences/s over {len(values)} rounds")
    ratio = statistics.median(rates[here]) / statistics.median(rates[args.against])
    print(f"this checkout / {args.against}: {ratio:.2f}x")


STAGES_PROBE = """
import gc, json, os, sys
sys.path.insert(0, os.path.join(os.getcwd(), "scripts"))
try:
    import bench_audit
except ImportError as e:
    if e.name != "bench_audit":
        raise
    bench_audit = None
if not hasattr(bench_audit, "bench_stages"):
    print("null")  # a checkout older than bench_stages
    sys.exit(0)
if not hasattr(bench_audit, "settle_garbage_collector"):
    # Its bench_stages (before 2026-12-06) left the collector untuned, while its workers, from 2026-11-30 on, tuned
    # it once their verifier was built: do as they did, or its stages would cost 10-13% more than in its runs.
    try:
        from transforms.audit.stages import settle_garbage_collector
    except ImportError:
        try:
            from transforms.audit import settle_garbage_collector  # where it lived until 2026-12-01
        except ImportError:
            settle_garbage_collector = None  # older: its workers left the collector as it was, too
    if settle_garbage_collector is not None:
        build = bench_audit.make_verifier
        def make_verifier(name):
            verifier = build(name)
            gc.collect()
            settle_garbage_collector()
            return verifier
        bench_audit.make_verifier = make_verifier
with open(sys.argv[1], "rb") as f:
    lines = [line for line in f.read().splitlines() if line.strip()][: int(sys.argv[3])]
print(json.dumps(dict(bench_audit.bench_stages(lines, sys.argv[2]))))
"""
"""A checkout's stage costs (`bench_stages`, one core, CPU ms per response by stage) on the first responses of a
traffic file: `probe(root, STAGES_PROBE, path, verifier, count)`; None from a checkout older than `bench_stages`."""

INSIDE_TAG = "stage seconds inside the run: "
"""What starts the line of `INSIDE_PROBE`'s output that holds the seconds by stage."""

INSIDE_PROBE = """
import collections, functools, json, sys, time
from transforms.audit import stages
from transforms.ingest import parse
spent = collections.defaultdict(float)
def timed(cls, label_of):
    # A DoFn's process yields its outputs, and the runner sends each one down the fused stages before it asks for
    # the next: only the steps into the generator are the DoFn's own work. This thread's CPU, not the process's.
    inner = vars(cls)["process"]
    @functools.wraps(inner)  # Beam reads the parameters (the window, a side input) from the signature
    def process(self, *args, **kwargs):
        label, steps = label_of(self), iter(inner(self, *args, **kwargs))
        while True:
            start = time.thread_time()
            try:
                out = next(steps)
            except StopIteration:
                return
            finally:
                spent[label] += time.thread_time() - start
            yield out
    cls.process = process
# The DoFns that run the stage functions (the same names since 2026-11-30), by bench_stages' names; the citation
# and claim audits and the retrieval scores are each an ApplyAuditStep: one class, told apart by its stage.
STEPS = {"citations": "AuditCitations", "claims": "CheckClaimAttribution", "retrieval": "ScoreRetrieval"}
for cls, label_of in [
    (parse._ParseDoFn, lambda fn: "ParseResponses"),
    (stages._VerifyDoFn, lambda fn: "VerifySentences"),
    (stages._StepDoFn, lambda fn: STEPS.get(fn._stage, fn._stage)),
    (stages._ScoreDoFn, lambda fn: "ScoreAndFlag"),
    (stages._LakeRowsDoFn, lambda fn: "ToLakeRows"),
]:
    timed(cls, label_of)
from pipelines.cli import main
code = main(["audit", *sys.argv[1:], "--direct_num_workers=1", "--direct_running_mode=in_memory"])
print(INSIDE_TAG + json.dumps(spent))
sys.exit(code)
""".replace("INSIDE_TAG", repr(INSIDE_TAG))
"""`groundwatch audit` of a checkout in this one process, with each stage DoFn's own CPU timed inside the run:
`timed_run(python -c INSIDE_PROBE AUDIT_ARGS)` prints the command's summary, then `INSIDE_TAG` and the seconds by
stage as JSON."""

STAGES_SAMPLE = 1000
"""Responses the stage costs are measured on (the first of the traffic)."""


def probe(root: str, code: str, *args: str) -> Any:
    """Run Python `code` in a fresh interpreter with the checkout `root` first on the path; its last line of
    output, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{root}: the probe failed (exit {done.returncode})\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_traffic(path: str, messages: Iterable[dict]) -> None:
    """The messages as a JSONL file, one line each."""
    with open(path, "wb") as f:
        f.writelines(json.dumps(message).encode("utf-8") + b"\n" for message in messages)


def printed_counts(summary: str) -> dict[str, int]:
    """The counts `groundwatch audit` printed at its end (`read`, `audited`, `dead-lettered`, ...), by name."""
    return {name: int(n) for name, n in re.findall(r"^([a-z][a-z -]*?)\s+(\d+)(?:\s|$)", summary, re.MULTILINE)}


def _audit(root: str, path: str, args, beam_args: list[str], *, stages_inside: bool = False) -> dict:
    """`groundwatch audit` of the checkout `root` over the traffic file, as a command of its own: wall-clock and
    CPU seconds (the command and its worker processes, interpreter start included) and the counts it printed.
    With `stages_inside`, in one process with its stage DoFns timed (`INSIDE_PROBE`): also `by_stage`, CPU ms per
    response by stage."""
    command = ["-c", INSIDE_PROBE] if stages_inside else ["-m", "pipelines.cli", "audit"]
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as lake:
        argv = [sys.executable, *command, f"--input={path}", f"--lake={lake}"]
        wall, cpu, code, output = timed_run(
            [*argv, f"--verifier={args.verifier}", *beam_args], env={**os.environ, "PYTHONPATH": root}, cwd=root
        )
    counts = printed_counts(output)
    if code != 0 or not counts.get("read"):
        said = f"exit {code}" if code != 0 else "nothing read"
        raise SystemExit(f"{root}: groundwatch audit ended with {said}:\n{output[-3000:]}")
    run = {"wall": wall, "cpu": cpu, "counts": counts, "ms": 1000 * cpu / counts["read"]}
    if stages_inside:
        run["by_stage"] = {label: 1000 * s / counts["read"] for label, s in inside_seconds(root, output).items()}
    return run


def inside_seconds(root: str, output: str) -> dict[str, float]:
    """The CPU seconds by stage that `INSIDE_PROBE` printed; an error when a stage DoFn got none."""
    if INSIDE_TAG not in output:
        raise SystemExit(f"{root}: groundwatch audit, timed inside, printed no stage seconds:\n{output[-3000:]}")
    seconds = json.loads(output.rsplit(INSIDE_TAG, 1)[1].splitlines()[0])
    untimed = {"ParseResponses", "VerifySentences", "ScoreAndFlag", "ToLakeRows"} - {k for k, v in seconds.items() if v}
    if untimed:
        # The heuristic's stages in this process's DoFns, or nothing to split: another verifier runs through
        # RunInference, and Beam options that move the work to other processes leave these DoFns idle here.
        raise SystemExit(f"{root}: no CPU timed in {', '.join(sorted(untimed))}: the stages ran elsewhere")
    return seconds


def bench_pipelines_against(args, beam_args: list[str]) -> None:
    """The whole pipeline of `args.against` and of this checkout, alternately (A B A B ...), each run a
    `groundwatch audit` of its own on the same traffic file: responses/s (wall-clock) and CPU ms per response,
    round by round. Before each run on the local runner, the same checkout's stage functions are timed on the
    first 1,000 of the same responses (one core), so that the rest (what the runner, the lake's files and start-up
    cost beside them) compares between checkouts whose stages differ. With `args.stages_inside` each run is in one
    process instead, its stage DoFns timed inside it (`INSIDE_PROBE`), and the rest is that run's CPU outside them.
    On a shared machine only figures measured side by side like this compare."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs: dict[str, list[dict]] = {args.against: [], here: []}
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        path = os.path.join(tmp, "traffic.jsonl")
        write_traffic(path, _traffic(args))
        # Another runner's workers are not this machine's children: its CPU is not all counted, so no rest.
        local = runs_in_process(pipeline_options([f"--input={path}", *beam_args]))
        if args.stages_inside and not local:
            raise SystemExit("--stages-inside times the stages in this machine's one process: not with another runner")
        sample = str(min(args.responses, STAGES_SAMPLE))
        for round_no in range(1, args.rounds + 1):
            for root in runs:
                beside = local and not args.stages_inside
                costs = probe(root, STAGES_PROBE, path, args.verifier, sample) if beside else None
                load = os.getloadavg()[0]
                run = _audit(root, path, args, beam_args, stages_inside=args.stages_inside)
                costs = run.get("by_stage", costs)  # timed inside the run, or else beside it
                run["stages"] = None if costs is None else sum(costs.values())
                runs[root].append(run)
                where = " in one process" if args.stages_inside else ""
                print(
                    f"round {round_no} {root}{where}: {run['counts'].get('audited', 0)} audited, "
                    f"{run['counts']['read'] / run['wall']:,.0f} responses/s, {run['ms']:.2f} CPU ms per response: "
                    f"{_split(run['ms'], run['stages'])} (load {load:.1f})",
                    flush=True,
                )
                if "by_stage" in run:
                    print("  inside the run: " + ", ".join(f"{k} {v:.2f}" for k, v in run["by_stage"].items()))
    for root, values in runs.items():
        rate = statistics.median(r["counts"]["read"] / r["wall"] for r in values)
        ms = statistics.median(r["ms"] for r in values)
        timed = [r for r in values if r["stages"] is not None]
        split = (
            f"stages {statistics.median(r['stages'] for r in timed):.2f}, "
            f"the rest {statistics.median(r['ms'] - r['stages'] for r in timed):.2f}"
            if timed
            else "stage costs not measured"
        )
        print(
            f"{root}: over {len(values)} rounds, each a median: {rate:,.0f} responses/s, {ms:.2f} CPU ms per "
            f"response ({split})"
        )


def _split(ms: float, stages: float | None) -> str:
    if stages is None:
        return "stage costs not measured (another runner, or a checkout without bench_stages)"
    return f"stages {stages:.2f}, the rest {ms - stages:.2f}"


def bench_alone(args) -> float:
    """The verifier alone on `args.responses` generated responses, and the stage costs on the first 1,000 of
    them; returns the stages' CPU ms per response, all together."""
    messages = list(_traffic(args))
    lines = [json.dumps(m).encode("utf-8") for m in messages]
    responses = [LoggedResponse.model_validate(m) for m in messages]
    sentences, seconds = bench_verifier(responses, args.verifier)
    print(f"verifier {args.verifier} alone: {sentences} sentences, {seconds:.2f} CPU s on one core")
    print(f"  = {sentences / seconds:,.0f} sentences/s")
    print("stage costs, plain functions on one core (CPU ms per response):")
    costs = bench_stages(lines[:STAGES_SAMPLE], args.verifier)
    for label, ms in costs:
        print(f"  {label:<24} {ms:7.2f}")
    total = sum(ms for _, ms in costs)
    cores = os.cpu_count() or 1
    print(
        f"  {'all stages':<24} {total:7.2f}: {cores} cores kept busy by them alone reach {cores * 1000 / total:,.0f} "
        "responses/s, before any runner work"
    )
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=5000, help="Responses to generate. Default 5000.")
    parser.add_argument("--verifier", default="heuristic", help="Verifier to measure. Default heuristic.")
    parser.add_argument("--seed", type=int, default=11, help="Traffic seed. Default 11.")
    parser.add_argument(
        "--pipeline-only",
        action="store_true",
        help="Measure only the whole pipeline (the traffic is written to the file as it is generated, so this "
        "process holds none of it: the peak memory is the audit's).",
    )
    parser.add_argument(
        "--unattributed",
        action="store_true",
        help="The same answers without citation markers, citations or claims: only their sentences to verify "
        "(the citation and claim audits find nothing to check).",
    )
    parser.add_argument(
        "--healthy",
        action="store_true",
        help="Healthy traffic (3 sentences in 100 flawed) instead of the default 30 in 100: what a sizing from "
        "healthy traffic assumes (unsupported sentences cost more: their citations are checked against the other "
        "passages too).",
    )
    parser.add_argument(
        "--against",
        metavar="CHECKOUT",
        help="another checkout of groundwatch (e.g. a git worktree of an older commit): time both verifiers side by "
        "side on the same responses, alternately in fresh processes, and stop there",
    )
    parser.add_argument("--rounds", type=int, default=3, help="Alternating rounds with --against. Default 3.")
    parser.add_argument(
        "--stages-inside",
        action="store_true",
        help="with --whole-pipeline: run each audit in one process (--direct_num_workers=1) and time each stage "
        "DoFn's own CPU inside that run, instead of the stage functions in another process beside it: the rest is "
        "then the same run's CPU outside the stages (the runner, the lake's files, start-up)",
    )
    parser.add_argument(
        "--whole-pipeline",
        action="store_true",
        help="with --against: time both checkouts' whole pipelines (their `groundwatch audit`, with its default "
        "options or the Beam options given) instead of their verifiers, each beside its stages' cost on the same "
        "responses",
    )
    args, beam_args = parser.parse_known_args(argv)
    if args.responses < 1:
        parser.error("--responses must be at least 1")
    if args.stages_inside and not (args.against and args.whole_pipeline):
        parser.error("--stages-inside goes with --against CHECKOUT --whole-pipeline")
    if args.against and args.whole_pipeline:
        bench_pipelines_against(args, beam_args)
        return 0
    if args.against:
        bench_against(args)
        return 0
    stages_ms = None if args.pipeline_only else bench_alone(args)

    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        path = os.path.join(tmp, "traffic.jsonl")
        write_traffic(path, _traffic(args))
        load0, cpu0, wall0 = os.getloadavg()[0], _cpu_split(), time.perf_counter()
        argv = [f"--input={path}", f"--lake={os.path.join(tmp, 'lake')}", f"--verifier={args.verifier}", *beam_args]
        mode = _runner_mode(argv)
        with PeakMemory(os.getpgid(0)) as peak:
            counts = run(argv, out=lambda _: None)
        wall = time.perf_counter() - wall0
        own, workers = (after - before for after, before in zip(_cpu_split(), cpu0, strict=True))
        cpu = own + workers
        sizes = _lake_bytes(os.path.join(tmp, "lake"))
    print(f"pipeline ({' '.join(beam_args) or 'default options'}: {mode}):")
    print(f"  {counts.read} responses read, {counts.audited} audited, {counts.dead_lettered} dead-lettered")
    print(f"  the lake got {counts.rows_written.get('responses', 0)} responses rows")
    print(f"  wall {wall:.2f} s = {counts.read / wall:,.0f} responses/s (start-up and lake writing included)")
    print(f"  CPU {cpu:.2f} s (this process and its workers) = {counts.read / cpu:,.0f} responses per CPU second")
    if mode.endswith("(multi_processing)"):
        # Every process of the run is this one or a worker it started and waited for: the split is the run's.
        print(
            f"    this process {own:.2f} s (planning, launching, the runner's control and data planes), "
            f"its worker processes {workers:.2f} s"
        )
        if stages_ms is not None and counts.read:
            ms = cpu * 1000 / counts.read
            print(
                f"    {ms:.2f} ms per response: the stages' functions, at their cost measured above, about "
                f"{stages_ms:.2f} ({stages_ms / ms:.0%}); the rest about {ms - stages_ms:.2f} (the runner, the "
                "lake's files, start-up)"
            )
    else:
        print(f"    this process {own:.2f} s, the child processes it waited for {workers:.2f} s")
    print(f"  load average before / after the run: {load0:.1f} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"peak memory of the run (this process and its workers): {peak.bytes / 2**20:,.0f} MiB")
    audited = max(counts.audited, 1)
    total = sum(sizes.values())
    print(f"lake: {total:,} bytes of Parquet = {total / audited:,.0f} bytes per audited response")
    for table, size in sorted(sizes.items(), key=lambda item: -item[1]):
        print(f"  {table:<16} {size:>12,} bytes  {size / audited:>8,.0f} per response")
    return 0


def _lake_bytes(lake: str) -> dict[str, int]:
    """Bytes of Parquet per table folder of a local lake."""
    sizes: dict[str, int] = {}
    for folder, _, files in os.walk(lake):
        table = os.path.relpath(folder, lake).split(os.sep)[0]
        for name in files:
            if name.endswith(".parquet"):
                sizes[table] = sizes.get(table, 0) + os.path.getsize(os.path.join(folder, name))
    return sizes


if __name__ == "__main__":
    sys.exit(main())
