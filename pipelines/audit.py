"""The audit pipeline: logged responses in a JSONL file (or glob) -> verdicts in the audit lake.

    groundwatch audit --input traffic.jsonl --lake ./groundwatch-lake \\
        [--sample-rate 1.0] [--window-seconds 60] [--confidence-threshold 0.7] [--verifier heuristic] \\
        [--calibration cal.json] \\
        [any Beam option, e.g. --runner=PrismRunner --direct_num_workers=2]

Each flag also takes its underscored spelling (`--sample_rate`, as Beam's options are spelled); a flag neither
this command nor Beam knows is refused with the closest one named (`pipelines.options.flags`).

Every message read is accounted for: audited, sampled out, or dead-lettered
(malformed, invalid, duplicate, or failed in a stage). The run prints the four
counts, from Beam's metrics, and fails if they do not add up. It runs on
Beam's FnApiRunner unless `--runner` says otherwise (the DirectRunner would
first try to download Prism): in process for small inputs, with one worker
process per core (up to 4) from 4 MiB of input on, unless
`--direct_num_workers` / `--direct_running_mode` say otherwise. On that runner an input of more than
`--max-records-per-run` lines (default 50,000) is audited in passes, one run each (`pipelines.runner.passes`):
the runner holds a run's data in memory until it ends.

Stages (each a labelled composite in `transforms/`):
ReadJsonl -> ParseResponses -> WindowByEventTime -> SampleResponses -> VerifySentences -> [audit steps]
-> ScoreRetrieval -> ScoreAndFlag -> ToLakeRows (+ WindowMetrics) -> WriteAuditLake. A bounded run drops duplicate
response ids while parsing; a stream (`pipelines.monitor`) drops them per window just before ScoreAndFlag.
A message any stage fails on, for any reason, becomes a dead letter `stage_failed: <stage>: ...` with its
original bytes, and the run goes on.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import sys
import time
import zlib
from collections.abc import Callable, Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions

from pipelines.metrics import recompute_window_metrics, windows_across_passes
from pipelines.options.audit import AUDIT_FLAGS, AuditOptions, load_calibration, validate_options
from pipelines.options.flags import add_flags, flags_argv
from pipelines.options.judge import apply_judge_reports, judge_verifier_config
from pipelines.options.model import add_stage_arguments, model_verifier_config, stage_argv
from pipelines.runner.counts import AuditCounts, counts_from_result, format_counts, sum_counts
from pipelines.runner.passes import JsonlPlan, plan_jsonl_passes, read_ranges
from pipelines.runner.worker_pool import separate_environment
from schemas.base import utc_now
from transforms.attribution.citations import AuditCitationsStep
from transforms.attribution.claims import AuditClaimsStep
from transforms.audit.stages import (
    AUDITED,
    ApplyAuditStep,
    AuditStep,
    ScoreAndFlag,
    ScoreRetrieval,
    ToLakeRows,
    VerifySentences,
)
from transforms.ingest.parse import (
    DEAD_LETTERS,
    PARSED,
    DropDuplicateResponses,
    ParseResponses,
)
from transforms.ingest.sample import SampleResponses
from transforms.ingest.windows import LatePanesJoinOpenWindows, WindowByEventTime
from transforms.io.jsonl import ReadJsonlMessages
from transforms.io.lake.cleanup import remove_stale_temporaries
from transforms.io.lake.rows import lake_rows, row_dict
from transforms.io.lake.writer import WriteAuditLake
from transforms.monitoring.window_metrics import WindowMetrics

__all__ = [
    "ACCEPTS_PIPELINE_ARGS",
    "AuditOptions",
    "add_arguments",
    "audit_steps",
    "build_pipeline",
    "clear_leftovers",
    "exit_code",
    "load_calibration",
    "local_workers",
    "main",
    "run",
    "run_checked",
    "use_workers",
    "validate_options",
    "where_it_runs",
]

ACCEPTS_PIPELINE_ARGS = True
DEFAULT_RUNNER = "FnApiRunner"
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner")
"""The local runners: the FnApiRunner, and the DirectRunner (which picks the FnApiRunner or Prism by itself)."""


def audit_steps(options: AuditOptions) -> list[tuple[str, str, AuditStep]]:
    """The audit steps between VerifySentences and ScoreAndFlag: `(label, stage, step)`, in order.

    A stage plugs in by adding its plain function here, e.g. `("AuditCitations", "citations", audit_citations)`.
    Citations and claims are judged by the offline heuristic whatever `--verifier` is: deterministic, and a
    judge-backed sentence audit does not pay one LLM call per citation and per claim.
    """
    return [
        ("AuditCitations", "citations", AuditCitationsStep("heuristic")),
        ("CheckClaimAttribution", "claims", AuditClaimsStep("heuristic", threshold=options.confidence_threshold)),
    ]


def build_pipeline(
    p: beam.Pipeline,
    options: PipelineOptions,
    *,
    source=None,
    dead_letters=(),
    audit_lanes: int = 0,
    first_copies: Mapping[str, tuple[tuple, str]] | None = None,
) -> dict[str, beam.PCollection]:
    """Build the audit graph on `p`; `source` (raw `(bytes, Origin)` messages) replaces reading `--input`,
    and `dead_letters` (DeadLetterRows the source set aside, already counted) join the run's own.
    `audit_lanes` > 0 splits the responses by id over that many lanes, each running verification and the
    audit steps in an environment of its own (`pipelines.runner.worker_pool`: on local Prism, a worker process
    each). `first_copies` are the repeated response ids of a whole input this run audits part of
    (`pipelines.runner.passes`).

    Returns the outputs: `audited` (scored AuditedResponses), `dead_letters` (DeadLetterRows)
    and `lake_files` (paths written).
    """
    opts = options.view_as(AuditOptions)
    validate_options(opts, need_input=source is None)
    threshold = opts.confidence_threshold
    streaming = bool(options.view_as(StandardOptions).streaming)
    messages = source if source is not None else p | "ReadJsonl" >> ReadJsonlMessages(opts.input)

    # A bounded run has all its input: duplicates are dropped across the whole run while parsing (no shuffle
    # of responses, and a repeat hours later is still caught); a stream drops them per window.
    parsed = messages | "ParseResponses" >> ParseResponses(drop_duplicates=not streaming, first_copies=first_copies)
    window = WindowByEventTime(opts.window_seconds, allowed_lateness_seconds=opts.allowed_lateness_seconds)
    windowed = parsed[PARSED] | "WindowByEventTime" >> window
    dead = [parsed[DEAD_LETTERS], *dead_letters]
    sampled = windowed | "SampleResponses" >> SampleResponses(opts.sample_rate)
    if audit_lanes:
        parts = sampled | "SplitAuditLanes" >> beam.Partition(_lane_of, audit_lanes)
        lanes = [
            _verify_and_audit(part, opts, label=f" (lane {i})", place=functools.partial(separate_environment, lane=i))
            for i, part in enumerate(parts)
        ]
        audited = [lane_audited for lane_audited, _ in lanes] | "JoinAuditLanes" >> beam.Flatten()
        dead = [*dead, *(d for _, lane_dead in lanes for d in lane_dead)]
    else:
        audited, stage_dead = _verify_and_audit(sampled, opts)
        dead = [*dead, *stage_dead]
    audited = apply_judge_reports(opts, audited)  # the judge's citation / claim audit, if --judge-tasks asks
    if streaming:
        # A stream drops repeated copies per window, which it can only do once the window closes: after the
        # audit, so that verifying goes on while the window is open and only scoring and writing wait for it.
        unique = audited | "DropDuplicateResponses" >> DropDuplicateResponses(parsed_of=attrgetter("parsed"))
        audited, dead = unique[PARSED], [*dead, unique[DEAD_LETTERS]]
    routed = audited | "ScoreAndFlag" >> ScoreAndFlag(threshold)
    scored, dead = routed[AUDITED], [*dead, routed[DEAD_LETTERS]]
    lake_bound = scored
    if streaming:
        # A response arriving after its window closed comes out of the dedupe in a late pane, and would be
        # written in files of its own (one per table); it is written with the window open when it was audited.
        lake_bound = scored | "LateToOpenWindow" >> LatePanesJoinOpenWindows(
            opts.window_seconds, allowed_lateness_seconds=opts.allowed_lateness_seconds, time_of=_audit_time
        )
    response_rows = lake_bound | "ToLakeRows" >> ToLakeRows(lake_rows(redact=bool(getattr(opts, "redact", False))))
    dead.append(response_rows[DEAD_LETTERS])

    # Dead letters are windowed by when they were received, so they flatten with the audited rows
    # and reach the lake in bounded and streaming runs alike.
    windowed_dead = [
        d
        | f"WindowDeadLetters{i}"
        >> WindowByEventTime(
            opts.window_seconds,
            allowed_lateness_seconds=opts.allowed_lateness_seconds,  # same windowing as the rows it joins
            time_of=lambda row: row.received_at,
        )
        for i, d in enumerate(dead)
    ]
    dead_letters = windowed_dead | "FlattenDeadLetters" >> beam.Flatten()
    rows = (
        response_rows[AUDITED],
        scored | "WindowMetrics" >> WindowMetrics(per_window=streaming),
        dead_letters | "DeadLetterRows" >> beam.Map(lambda d: ("dead_letters", row_dict(d))),
    )
    # Streaming writes each window as it closes; a bounded run writes one file per table and hour.
    lake_files = rows | "WriteAuditLake" >> WriteAuditLake(opts.lake, per_window=streaming)
    return {"audited": scored, "dead_letters": dead_letters, "lake_files": lake_files}


def _verify_and_audit(parsed, opts: AuditOptions, *, label: str = "", place=lambda transform: transform):
    """VerifySentences, then the audit steps, each placed by `place` and labelled with the suffix `label`.
    Returns the audited responses and the dead letters of each stage."""
    config = {**judge_verifier_config(opts), **model_verifier_config(opts)}
    if opts.calibration:
        config["calibration"] = load_calibration(opts)
    verified = parsed | f"VerifySentences{label}" >> place(
        VerifySentences(opts.verifier, threshold=opts.confidence_threshold, verifier_config=config)
    )
    audited, dead = verified[AUDITED], [verified[DEAD_LETTERS]]
    for step_label, stage, step in audit_steps(opts):
        result = audited | f"{step_label}{label}" >> place(ApplyAuditStep(step, stage=stage))
        audited, dead = result[AUDITED], [*dead, result[DEAD_LETTERS]]
    # Retrieval is scored where the audit's CPU work runs (in the lanes), not after a stream's dedupe waits.
    scored = audited | f"ScoreRetrieval{label}" >> place(ScoreRetrieval())
    return scored[AUDITED], [*dead, scored[DEAD_LETTERS]]


def _lane_of(parsed, lanes: int) -> int:
    """The audit lane of a response: by a stable hash of its id, so every copy of a response takes the same lane."""
    return zlib.crc32(parsed.response.response_id.encode("utf-8")) % lanes


def _audit_time(audited) -> datetime:
    return audited.audited_at or utc_now()


def pipeline_options(argv: list[str]) -> PipelineOptions:
    """Options from argv, on the in-process FnApiRunner unless a runner is named; a large input on the default
    runner is audited by one worker process per core (`local_workers`) unless the worker flags are given."""
    options = PipelineOptions(argv)
    standard = options.view_as(StandardOptions)
    if standard.runner is None:
        standard.runner = DEFAULT_RUNNER
        if not any(a.startswith(WORKER_FLAGS) for a in argv):
            use_workers(options, local_workers(_input_bytes(options.view_as(AuditOptions).input), os.cpu_count() or 1))
    return options


WORKER_FLAGS = ("--direct_num_workers", "--direct_running_mode")
"""Flags by which a user chooses the local runner's workers; an automatic choice never overrides them."""


def use_workers(options: PipelineOptions, workers: int) -> None:
    """Run on `workers` local worker processes when that is more than one (else in process, as given)."""
    if workers > 1:
        direct = options.view_as(DirectOptions)
        direct.direct_num_workers, direct.direct_running_mode = workers, "multi_processing"


def where_it_runs(options: PipelineOptions) -> str:
    """The runner and, for the local one, its workers: `FnApiRunner, in process`, `FnApiRunner, 2 workers
    (multi_processing)`, or another runner's name."""
    direct, runner = options.view_as(DirectOptions), options.view_as(StandardOptions).runner
    if runner not in LOCAL_RUNNERS:
        return str(runner)
    workers = (os.cpu_count() or 1) if direct.direct_num_workers == 0 else direct.direct_num_workers or 1
    return f"{runner}, in process" if workers == 1 else f"{runner}, {workers} workers ({direct.direct_running_mode})"


PARALLEL_INPUT_BYTES = 4 << 20
"""From this much input on (about 1,900 responses with citations and claims) a bounded run is faster on one worker
process per core: starting the workers costs about 4 s, and the audit is CPU-bound Python (one core per process).
Measured on 2 cores (`scripts/bench_audit.py --pipeline-only --direct_num_workers=1|2`): responses with citations
and claims break even at about 1,100 (2.4 MB; 1,500 take 7.8-8.2 s in process, 6.6-6.9 s on 2 workers), answers
without them, half the work per byte, at about 4,000 (6.6 MB). The size is a proxy for the work; 4 MiB errs
toward workers, which gain more above it than they lose below."""
MAX_LOCAL_WORKERS = 4


def local_workers(input_bytes: int, cores: int, *, threshold: int = PARALLEL_INPUT_BYTES) -> int:
    """Worker processes for a bounded run of `input_bytes` (or any size measured against `threshold`, e.g. a
    Kafka backlog in messages) on this machine: 1 (in process) below the threshold."""
    if input_bytes < threshold:
        return 1
    return max(1, min(cores, MAX_LOCAL_WORKERS))


def _input_bytes(pattern: str | None) -> int:
    """Total size of the local files `--input` matches (0 for remote or missing input)."""
    if not pattern or "://" in pattern:
        return 0
    return sum(os.path.getsize(path) for path in glob.glob(pattern) if os.path.isfile(path))


def run(argv: list[str] | None = None, *, out: Callable[[str], None] = print) -> AuditCounts:
    """Validate the options, run the pipeline to the end (in passes, for a large input on the local runner)
    and report its counts."""
    options = pipeline_options(list(sys.argv[1:] if argv is None else argv))
    opts = options.view_as(AuditOptions)
    validate_options(opts)
    clear_leftovers(opts.lake, out)
    plan = plan_jsonl_passes(opts.input, opts.max_records_per_run) if _runs_in_process(options) else None
    if plan is not None and plan.passes:
        counts = _audit_by_plan(options, plan, out)
    else:
        counts = run_checked(options, lambda p: build_pipeline(p, options), "the run", out)
    out(format_counts(counts, opts.lake))
    if not counts.adds_up:
        raise RuntimeError(
            f"counts do not add up: read {counts.read} != audited {counts.audited} + sampled out "
            f"{counts.sampled_out} + dead-lettered {counts.dead_lettered}"
        )
    return counts


def clear_leftovers(lake_dir: str, out: Callable[[str], None]) -> None:
    """Remove the temporary files a killed run left in the lake, and say how many (see `lake.cleanup`)."""
    if removed := remove_stale_temporaries(lake_dir, started_at=time.time()):
        out(f"removed {removed} temporary files that an interrupted run left in the lake")


def run_checked(
    options: PipelineOptions, build: Callable[[beam.Pipeline], Any], what: str, out: Callable[[str], None]
) -> AuditCounts:
    """Run the bounded graph `build` puts on a pipeline to its end, and check that the lake got a row for every
    response it audited and every dead letter it counted (`AuditCounts.lake_shortfall`). If not, the run is
    made once more: its files are named by their rows, so rows written twice are one in the views."""
    for attempt in (1, 2):
        with beam.Pipeline(options=options) as p:
            build(p)
        counts = counts_from_result(p.result)
        shortfall = counts.lake_shortfall()
        if shortfall is None:
            return counts
        if attempt == 1:
            out(f"{what}: {shortfall}; running it again")
    raise RuntimeError(f"{what}: {shortfall}, twice; the lake lacks part of the run")


def _runs_in_process(options: PipelineOptions) -> bool:
    """Whether the run is Beam's local runner, which holds a bounded run's data in memory until it ends."""
    return options.view_as(StandardOptions).runner in LOCAL_RUNNERS


def _audit_by_plan(options: PipelineOptions, plan: JsonlPlan, out: Callable[[str], None]) -> AuditCounts:
    """The audit of a JSONL input by its plan: one run per pass, each deduplicated against the whole input;
    after several passes, the window metrics of the windows that span passes are computed again from the lake
    (each pass wrote metrics of its part).

    An input of one pass is read by the plan too: the repeated ids the plan found come in as a side input
    from the graph's start, not from a look at the lines read, and each worker reads and audits its own
    parts of the line ranges (`ReadJsonlMessages(ranges=...)`), half of them each. (Looking at the lines
    read first made the runner keep them in a buffer it hands out to the workers by the chunk, often two
    thirds to one.)"""

    def reading(ranges):
        def build(p):
            messages = p | "ReadJsonl" >> ReadJsonlMessages(ranges=ranges)
            build_pipeline(p, options, source=messages, first_copies=plan.first_copies)

        return build

    if len(plan.passes) == 1:
        return run_checked(options, reading(plan.passes[0]), "the run", out)
    most = options.view_as(AuditOptions).max_records_per_run
    out(f"passes         {len(plan.passes)} for {plan.messages} messages (at most {most} each)")
    passes = []
    for number, ranges in enumerate(plan.passes, start=1):
        passes.append(run_checked(options, reading(ranges), f"pass {number}", out))
        out(f"pass {number:<9} {passes[-1].read} read, {passes[-1].audited} audited")
    spanning = windows_across_passes(read_ranges(plan.passes))
    windows = recompute_window_metrics(options.view_as(AuditOptions).lake, *spanning)
    out(f"window metrics {windows} windows span passes: computed again from the lake")
    return sum_counts(passes)


_CLI_FLAGS = [flag for flag in AUDIT_FLAGS if flag.name != "allowed-lateness-seconds"]
"""The `groundwatch audit` flags but the judge's: a bounded run has no late data."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `groundwatch audit` flags; anything else is passed to Beam as a pipeline option."""
    parser.allow_abbrev = False  # as Beam's parser: a prefix of a flag is not that flag
    add_flags(parser, _CLI_FLAGS)
    add_stage_arguments(parser)


def to_argv(args: argparse.Namespace) -> list[str]:
    """The pipeline argv for parsed CLI arguments plus the Beam options passed through."""
    return flags_argv(args, _CLI_FLAGS) + stage_argv(args) + list(getattr(args, "extra_args", []) or [])


def exit_code(command: str, run_pipeline: Callable[[list[str]], AuditCounts | None], argv: list[str]) -> int:
    """Run a pipeline command: 2 for bad options or input, 1 for a failed run or counts that do not add up."""
    try:
        counts = run_pipeline(argv)
    except ValueError as e:
        print(f"groundwatch {command}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"groundwatch {command}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0 if counts is None or counts.adds_up else 1


def main(args: argparse.Namespace) -> int:
    return exit_code("audit", run, to_argv(args))
