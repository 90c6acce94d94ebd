"""A bounded audit run: where it runs, in how many workers, by which plan of line ranges, with its counts checked.

    counts = run_audit(["--input", "traffic.jsonl", "--lake", "./groundwatch-lake"])   # AuditCounts
    counts.audited, counts.dead_lettered

Every message read is accounted for: audited, sampled out, or dead-lettered (malformed, invalid, duplicate,
or failed in a stage). The run prints the four counts, from Beam's metrics, and fails if they do not add up.
It runs on Beam's FnApiRunner unless `--runner` says otherwise (the DirectRunner would first try to download
Prism): in process for small inputs, with one worker process per core (up to 4) from 4 MiB of input on,
unless `--direct_num_workers` / `--direct_running_mode` say otherwise. On that runner an input of more than
`--max-records-per-run` lines (default 50,000) is audited in passes, one run each (`pipelines.runner.passes`):
the runner holds a run's data in memory until it ends. On another runner (Flink) a local input is read by line
ranges too, in one pass, as many ranges for each subtask. After the run, the windows it read that hold a
reviewed response get their metrics computed again from the lake, reviews included (the pipeline's rows count
none). `groundwatch audit`, `groundwatch demo` and the streaming monitor's catch-up run through here.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, FlinkRunnerOptions, PipelineOptions, StandardOptions

from pipelines.options.audit import AuditOptions, validate_options
from pipelines.runner.audit_graph import build_pipeline
from pipelines.runner.counts import AuditCounts, counts_from_result, format_counts, sum_counts
from pipelines.runner.passes import (
    JsonlPlan,
    ReadRange,
    input_files,
    plan_jsonl_passes,
    read_by_sql,
    read_ranges,
    windows_across_passes,
)
from pipelines.runner.progress import Progress
from pipelines.runner.read_counts import CountMessages, counted_run
from pipelines.runner.time_outliers import far_in_time
from pipelines.runner.window_metrics import recompute_reviewed_windows, recompute_window_metrics
from transforms.io.jsonl import LINE_RANGES, ReadJsonlMessages
from transforms.io.lake.cleanup import remove_stale_temporaries

__all__ = [
    "DEFAULT_RUNNER",
    "PARALLEL_INPUT_BYTES",
    "WORKER_FLAGS",
    "clear_leftovers",
    "exit_code",
    "local_workers",
    "pipeline_options",
    "run_audit",
    "run_checked",
    "runs_in_process",
    "use_workers",
    "where_it_runs",
]

DEFAULT_RUNNER = "FnApiRunner"
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner")
"""The local runners: the FnApiRunner, and the DirectRunner (which picks the FnApiRunner or Prism by itself)."""


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


def run_audit(
    argv: list[str] | None = None, *, out: Callable[[str], None] = print, progress: str | None = None
) -> AuditCounts:
    """Validate the options, run the pipeline to the end (in passes, for a large input on the local runner),
    compute again the window metrics of the windows it read that hold a reviewed response (its own rows count
    no review: `pipelines.runner.window_metrics`) and report its counts. With `progress` (the command's name)
    the messages read are shown as they go (`pipelines.runner.progress`)."""
    options = pipeline_options(list(sys.argv[1:] if argv is None else argv))
    opts = options.view_as(AuditOptions)
    validate_options(opts)
    clear_leftovers(opts.lake, out)
    plan = _reading_plan(options, opts)
    with contextlib.ExitStack() as stack:
        counts_to = None
        if progress:
            shown = Progress(progress, total=plan.messages if plan is not None else None, unit="messages")
            counts_to = stack.enter_context(counted_run(shown))
        if plan is not None and plan.passes:
            counts = _audit_by_plan(options, plan, out, counts_to)
        else:
            read = functools.partial(_read_jsonl, pattern=opts.input, counts_to=counts_to)
            counts = run_checked(options, lambda p: build_pipeline(p, options, source=read(p)), "the run", out)
    if windows := recompute_reviewed_windows(opts.lake, *read_by_sql(_what_it_read(opts, plan))):
        out(f"window metrics {windows} windows with reviews: computed again from the lake")
    out(format_counts(counts, opts.lake))
    if (far := far_in_time(opts.lake, [f"file:{path}" for path in input_files(opts.input)])).count:
        out(far.summary_line())
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


def _reading_plan(options: PipelineOptions, opts: AuditOptions) -> JsonlPlan | None:
    """How the input is read: by a plan of line ranges each worker reads its share of (`_audit_by_plan`), or
    (None) whole by one worker and spread from there. The local runner holds a run's data in memory, so its plan
    has passes of at most `--max_records_per_run`; another runner reading local files gets one pass (on Flink the
    ranges are dealt round-robin to the subtasks, which read them side by side). A URL is not scanned here."""
    if runs_in_process(options):
        return plan_jsonl_passes(opts.input, opts.max_records_per_run)
    if "://" not in opts.input:
        return plan_jsonl_passes(opts.input, sys.maxsize)
    return None


def _what_it_read(opts: AuditOptions, plan: JsonlPlan | None) -> list[list[ReadRange]]:
    """What a run read, as the lake's rows name it: the plan's line ranges, or every input file whole."""
    if plan is not None and plan.passes:
        return read_ranges(plan.passes)
    return [[ReadRange(f"file:{path}", None, 1, None) for path in input_files(opts.input)]]


def _line_range_pieces(options: PipelineOptions) -> int:
    """How many line ranges a pass is cut into: `LINE_RANGES` (16), or on a runner of `--parallelism` N the smallest
    multiple of N from there (N=3: 18), since Flink deals them round-robin and every subtask should get as many
    (`split_line_ranges` makes that many wherever the pass has as many lines, and as many files at most)."""
    parallelism = options.view_as(FlinkRunnerOptions).parallelism  # -1 when not given
    if runs_in_process(options) or parallelism < 1:
        return LINE_RANGES
    return parallelism * -(-LINE_RANGES // parallelism)


def runs_in_process(options: PipelineOptions) -> bool:
    """Whether the run is Beam's local runner: in this process, or in worker processes it starts and waits for
    (so their CPU is this process's children's); it holds a bounded run's data in memory until it ends."""
    return options.view_as(StandardOptions).runner in LOCAL_RUNNERS


def _read_jsonl(p: beam.Pipeline, *, counts_to: str | None, **where: Any) -> beam.PCollection:
    """The raw messages of `ReadJsonlMessages(**where)`, counted into `counts_to` for the progress, if given."""
    messages = p | "ReadJsonl" >> ReadJsonlMessages(**where)
    if counts_to is not None:
        messages | "CountProgress" >> CountMessages(counts_to)
    return messages


def _audit_by_plan(
    options: PipelineOptions, plan: JsonlPlan, out: Callable[[str], None], counts_to: str | None
) -> AuditCounts:
    """The audit of a JSONL input by its plan: one run per pass, each deduplicated against the whole input;
    after several passes, the window metrics of the windows that span passes are computed again from the lake
    (each pass wrote metrics of its part).

    An input of one pass is read by the plan too: the repeated ids the plan found come in with the parse step
    (`ParseResponses(first_copies=...)`), not from a look at the lines read, and each worker reads and audits its own
    parts of the line ranges (`ReadJsonlMessages(ranges=...)`), about as many of them each. (Looking at the lines
    read first made the runner keep them in a buffer it hands out to the workers by the chunk, often two
    thirds to one.)"""

    pieces = _line_range_pieces(options)

    def reading(ranges):
        def build(p):
            messages = _read_jsonl(p, ranges=ranges, pieces=pieces, counts_to=counts_to)
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
