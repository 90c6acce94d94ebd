"""Audit a Kafka topic continuously: responses in, the audit lake, a review queue and dead letters out.

    groundwatch monitor --bootstrap-servers 127.0.0.1:39092 --topic rag.responses --lake ./groundwatch-lake \\
        [--group-id groundwatch] [--window-seconds 60] [--sample-rate 1.0] [--until-caught-up] \\
        [--review-topic rag.review] [--dead-letter-topic rag.dead-letters] \\
        [--drift-every-seconds 30] [--alerts-topic rag.alerts] \\
        [--security-protocol SASL_SSL --sasl-mechanism PLAIN --sasl-username U --ssl-cafile ca.pem] \\
        [any Beam option, e.g. --runner=FlinkRunner]

Streaming (the default) runs on Beam's Prism runner (`--prism-location`, else `$GROUNDWATCH_PRISM`, else
`~/.cache/groundwatch/bin/prism` as built by `scripts/build-prism.sh`): the Kafka source checkpoints every
`--checkpoint-records` records or `--checkpoint-seconds` seconds, windows close as the watermark passes them,
and each window's Parquet files appear in the lake. Prism's SDK workers are processes from our own pool
(`pipelines.runner.worker_pool`), and the audit stages run in lanes split by response id, one per core, each in an
environment, so a process, of its own.
`--until-caught-up` reads from the group's committed
offsets to the end offsets seen at start and exits, on the FnApiRunner (catch-up, backfills): in process for
a small backlog, with one worker process per core (up to 4) from `PARALLEL_BACKLOG_RECORDS` messages on,
unless `--runner`, `--direct_num_workers` or `--direct_running_mode` are given. The bounded read never
checkpoints, so several workers are safe, and the messages are reshuffled after it so they share the audit.
A backlog larger than `--max-records-per-run` is read in passes, each a run of its own that commits before
the next starts, so memory stays bounded (`pipelines.runner.catch_up`).

Drift runs inside the monitor: every `--drift-every-seconds` (default 30; 0 turns it off) the windows closed
since the last check get the checks of `groundwatch drift`, and alerts and incidents go to the lake's `alerts`
and `incidents` tables, the log and `--alerts-topic` (`pipelines.runner.drift_stage`: a stage beside the graph,
driven by this process, so it is the same on every runner and its state is the lake's); a catch-up checks once,
after its last pass.

The consumer group's offsets are committed only after the rows the records produced are in the lake
(`transforms.io.kafka.commit`); a crashed run restarts where the group's commits say and may re-audit a few
responses, which the lake views count once. SASL and SSL passwords come only from the environment
(`GROUNDWATCH_KAFKA_SASL_PASSWORD`, `GROUNDWATCH_KAFKA_SSL_PASSWORD`). The same graph runs on Flink or
Dataflow by runner options only.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, PortableOptions, StandardOptions

from pipelines.options.audit import AuditOptions, validate_options
from pipelines.options.monitor import (
    DEFAULT_PRISM,
    MonitorOptions,
    add_arguments,
    connection_from_options,
    to_argv,
    validate,
)
from pipelines.runner.audit_graph import build_pipeline
from pipelines.runner.bounded import (
    DEFAULT_RUNNER,
    WORKER_FLAGS,
    clear_leftovers,
    exit_code,
    use_workers,
    where_it_runs,
)
from pipelines.runner.bounded import local_workers as local_worker_count
from pipelines.runner.catch_up import (
    after_pass,
    backlog,
    committed_offsets,
    end_offsets,
    plan_pass,
    refresh_reviewed_windows,
    refresh_window_metrics,
    start_offsets,
)
from pipelines.runner.counts import AuditCounts, counts_from_result, format_counts, sum_counts
from pipelines.runner.drift_run import log_alerts_to_stderr
from pipelines.runner.drift_stage import StreamDrift
from pipelines.runner.progress import Progress
from pipelines.runner.read_counts import CountMessages, counted_run
from pipelines.runner.stop import flink_rest_urls, wait_or_cancel
from pipelines.runner.worker_pool import local_audit_lanes, start_worker_pool
from schemas import Origin, ParsedResponse
from transforms.ingest.late import DeadLetterLateMessages, message_late_reason
from transforms.ingest.parse import ParseError, parse_message
from transforms.ingest.sample import is_sampled
from transforms.io.kafka.client import named_kafka_errors
from transforms.io.kafka.commit import CommitOffsetsAfterLake
from transforms.io.kafka.partitions import topic_partitions
from transforms.io.kafka.sink import PublishDeadLetters, PublishReviewQueue, ensure_topics
from transforms.io.kafka.source import LATE, MESSAGES, PROGRESS, ReadKafkaMessages
from transforms.monitoring.drift import DriftConfig

__all__ = [
    "ACCEPTS_PIPELINE_ARGS",
    "PARALLEL_BACKLOG_RECORDS",
    "add_arguments",
    "build_monitor",
    "find_prism",
    "lake_bound",
    "local_workers",
    "main",
    "run",
    "use_local_workers",
]

ACCEPTS_PIPELINE_ARGS = True


def lake_bound(raw: bytes, *, rate: float) -> bool:
    """Whether a message will leave rows in the lake: everything but a valid response that is sampled out."""
    try:
        return is_sampled(_parsed_stub(parse_message(raw, count=False)), rate)
    except ParseError:
        return True


def _parsed_stub(response):
    return ParsedResponse(response=response, origin=Origin(source="kafka:stub"))


def build_monitor(
    p: beam.Pipeline,
    options: PipelineOptions,
    *,
    audit_lanes: int = 0,
    offset_ranges: Mapping[int, tuple[int, int]] | None = None,
    counts_to: str | None = None,
) -> dict[str, beam.PCollection]:
    """Kafka -> the audit graph (`pipelines.runner.audit_graph`) -> lake, review queue, dead letters, commits.

    `audit_lanes`: verification and the audit steps split over that many environments of their own (see
    `build_pipeline`).
    `offset_ranges` ({partition: (start, stop)}): a catch-up reads exactly these (one pass,
    `pipelines.runner.catch_up`).
    `counts_to`: a folder the messages read are counted into, for the progress (`pipelines.runner.read_counts`).
    """
    opts = options.view_as(MonitorOptions)
    audit_opts = options.view_as(AuditOptions)
    validate(opts)
    connection = connection_from_options(opts)
    rate = audit_opts.sample_rate
    read = p | "ReadFromKafka" >> ReadKafkaMessages(
        connection,
        [opts.kafka_topic],
        group_id=opts.kafka_group_id,
        bounded=opts.until_caught_up,
        start_from=opts.start_from,
        max_records=opts.checkpoint_records,
        max_seconds=opts.checkpoint_seconds,
        event_time=opts.event_time,
        max_out_of_order_seconds=opts.max_out_of_order_seconds,
        discovery_interval_s=opts.partition_discovery_seconds,
        offset_ranges=None
        if offset_ranges is None
        else {(opts.kafka_topic, partition): r for partition, r in offset_ranges.items()},
        lake_bound=None if rate >= 1.0 else functools.partial(lake_bound, rate=rate),
        late=functools.partial(
            message_late_reason,
            window_seconds=audit_opts.window_seconds,
            allowed_lateness_seconds=audit_opts.allowed_lateness_seconds,
        ),
    )
    messages = read[MESSAGES]
    if counts_to is not None:
        messages | "CountProgress" >> CountMessages(counts_to)
    if opts.until_caught_up:
        # A partition is read whole by one worker; without a shuffle every stage fused with the read (parse,
        # verify, ...) would run there too, so a catch-up would use one core per partition at most, unevenly.
        # Streaming keeps its graph: Prism passes chunks downstream as they are read.
        messages = messages | "SpreadOverWorkers" >> beam.Reshuffle()
    # Records the stream would drop as late (a bounded read has none) become counted dead letters instead.
    late = read[LATE] | "DeadLetterLateMessages" >> DeadLetterLateMessages()
    outputs = build_pipeline(p, options, source=messages, dead_letters=[late], audit_lanes=audit_lanes)
    outputs["commits"] = {"progress": read[PROGRESS], "lake_files": outputs["lake_files"]} | (
        "CommitOffsets" >> CommitOffsetsAfterLake(connection, opts.kafka_group_id)
    )
    if opts.review_topic:
        outputs["audited"] | "PublishReviewQueue" >> PublishReviewQueue(
            connection, opts.review_topic, threshold=audit_opts.confidence_threshold
        )
    if opts.dead_letter_topic:
        outputs["dead_letters"] | "PublishDeadLetters" >> PublishDeadLetters(connection, opts.dead_letter_topic)
    return outputs


def _check_topics(connection: dict[str, Any], opts: MonitorOptions) -> None:
    """Fail early, naming the flag, when the input topic is missing; create missing output topics."""
    with named_kafka_errors(opts.kafka_bootstrap_servers):
        if topic_partitions(connection, opts.kafka_topic) is None:
            raise ValueError(f"--topic {opts.kafka_topic!r} does not exist at {opts.kafka_bootstrap_servers}")
        ensure_topics(connection, [opts.review_topic, opts.dead_letter_topic])


def find_prism(explicit: str | None = None) -> str:
    """The Prism binary: the flag, `$GROUNDWATCH_PRISM`, or the one `scripts/build-prism.sh` builds."""
    for candidate in (explicit, os.environ.get("GROUNDWATCH_PRISM"), DEFAULT_PRISM):
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise ValueError(
        f"no Prism binary: pass --prism-location or build it with scripts/build-prism.sh ({DEFAULT_PRISM})"
    )


def pipeline_options(argv: list[str]) -> PipelineOptions:
    """Options from argv: FnApiRunner when bounded, Prism streaming otherwise, unless a runner is named.

    Prism's binary is looked for later (`locate_prism`), once every flag has been checked: a bad flag is
    refused as such on a machine that has no Prism yet."""
    options = PipelineOptions(argv)
    standard = options.view_as(StandardOptions)
    if options.view_as(MonitorOptions).until_caught_up:
        standard.runner = standard.runner or DEFAULT_RUNNER
    else:
        standard.streaming = True
        if standard.runner is None:
            standard.runner = "PrismRunner"
        workers = options.view_as(DirectOptions).direct_num_workers
        if standard.runner in ("FnApiRunner", "DirectRunner") and workers not in (None, 1):
            # An unbounded read checkpoints (defer_remainder), and the multi-worker FnApiRunner drops deferred
            # SDF residuals (apache/beam#19842): half a read. Bounded reads never defer, so they may.
            raise ValueError("--direct_num_workers > 1 needs --until-caught-up on the FnApiRunner")
    return options


def locate_prism(options: PipelineOptions) -> None:
    """Sets `--prism_location` to the binary `find_prism` finds, when the run is on Prism."""
    if options.view_as(StandardOptions).runner == "PrismRunner":
        from apache_beam.options.pipeline_options import PrismRunnerOptions

        prism = options.view_as(PrismRunnerOptions)
        prism.prism_location = find_prism(prism.prism_location)


PARALLEL_BACKLOG_RECORDS = 1_700
"""From this backlog on, a catch-up is read by one worker process per core. It is the JSONL audit's
`PARALLEL_INPUT_BYTES` (4 MiB, `pipelines.runner.bounded`) in messages of about 2.5 KB (generated traffic is 1.7-2.2
KB, the golden set 4.2 KB): the same trade, about 4 s to start the workers against CPU-bound Python on one core.
Measured on 2 cores (`scripts/bench_kafka.py --mode bounded --workers 1|2`): 1,000 messages 12.0 s in process, 12.2
s on 2 workers; 1,500 17.3 / 14.5 s; 2,000 17.7 / 14.7 s. Counted in offsets, because end offsets are what a broker
tells without reading the log."""


def local_workers(backlog: int, cores: int) -> int:
    """Worker processes for a bounded run over `backlog` messages on this machine: 1 (in process) when small."""
    return local_worker_count(backlog, cores, threshold=PARALLEL_BACKLOG_RECORDS)


def use_local_workers(options: PipelineOptions, argv: list[str], backlog: int) -> str:
    """Give a bounded run on the default runner `local_workers(backlog)` worker processes, unless the runner or
    the worker flags were named in `argv`; return where the run executes, e.g. `FnApiRunner, 2 workers (...)`."""
    named = any(a.startswith(("--runner", *WORKER_FLAGS)) for a in argv)
    if options.view_as(MonitorOptions).until_caught_up and not named:
        use_workers(options, local_workers(backlog, os.cpu_count() or 1))
    return where_it_runs(options)


def use_worker_processes(options: PipelineOptions, argv: list[str]) -> Callable[[], None] | None:
    """On local Prism: serve its SDK workers from a pool of processes (`pipelines.runner.worker_pool`), so that
    the audit stages, split into lanes in environments of their own, run on every core. Returns the pool's
    stop function, or None when it does not apply: another runner, an `--environment_type` named in `argv`,
    or a single core."""
    if options.view_as(StandardOptions).runner != "PrismRunner" or (os.cpu_count() or 1) < 2:
        return None
    if any(a.startswith("--environment_type") for a in argv):
        return None
    address, stop = start_worker_pool(options)
    portable = options.view_as(PortableOptions)
    portable.environment_type, portable.environment_config = "EXTERNAL", address
    return stop


def run(argv: list[str], *, out: Callable[[str], None] = print) -> AuditCounts | None:
    """Run until caught up (returns the counts, summed over its passes) or forever (streaming; stop it with
    Ctrl-C or SIGTERM)."""
    options = pipeline_options(argv)
    validate_options(options.view_as(AuditOptions), need_input=False)
    opts = options.view_as(MonitorOptions)
    validate(opts)
    flink_rest_urls(options)  # a bad --flink-rest is refused before a job starts, not when it is stopped
    locate_prism(options)
    connection = connection_from_options(opts)
    _check_topics(connection, opts)
    clear_leftovers(options.view_as(AuditOptions).lake, out)
    drift = _drift_stage(options, connection, out)
    if opts.until_caught_up:
        counts = _catch_up(options, argv, connection, out)
        if drift:  # after the last pass: earlier ones may leave a window half read
            drift.run_once()
    else:
        where, stop_workers = use_local_workers(options, argv, 0), use_worker_processes(options, argv)
        lanes = local_audit_lanes() if stop_workers else 0
        if lanes:
            where += f", {lanes + 1} SDK worker processes (the audit in {lanes} lanes by response id)"
        out(f"runner         {where}")
        if drift:
            drift.start()
        try:
            # A stream ends only when its runner says so.
            counts = _run_pipeline(options, stop_workers, audit_lanes=lanes)
        finally:
            if drift:
                drift.stop()
    out(format_counts(counts, options.view_as(AuditOptions).lake))
    if drift:
        out(drift.summary())
    return counts


def _drift_stage(
    options: PipelineOptions, connection: dict[str, Any], out: Callable[[str], None]
) -> StreamDrift | None:
    """The drift checks beside the graph (`pipelines.runner.drift_stage`), or None with `--drift-every-seconds 0`."""
    opts = options.view_as(MonitorOptions)
    if not opts.drift_every_seconds:
        return None
    lake = options.view_as(AuditOptions).lake
    return StreamDrift(
        lake,
        DriftConfig(),
        connection=connection,
        alerts_topic=opts.alerts_topic,
        every_seconds=opts.drift_every_seconds,
        out=out,
    )


def _catch_up(
    options: PipelineOptions, argv: list[str], connection: dict[str, Any], out: Callable[[str], None]
) -> AuditCounts:
    """Read the backlog up to the end offsets seen now, in passes of at most `--max-records-per-run` messages
    (`pipelines.runner.catch_up`), showing how far it got; return the counts of all passes."""
    with contextlib.ExitStack() as stack:
        return _catch_up_passes(options, argv, connection, out, stack)


def _catch_up_passes(
    options: PipelineOptions,
    argv: list[str],
    connection: dict[str, Any],
    out: Callable[[str], None],
    stack: contextlib.ExitStack,
) -> AuditCounts:
    opts = options.view_as(MonitorOptions)
    topic, group = opts.kafka_topic, opts.kafka_group_id
    most = options.view_as(AuditOptions).max_records_per_run
    targets = end_offsets(connection, topic)
    starts = start_offsets(connection, topic, group, opts.start_from)
    left = backlog(starts, targets)
    out(f"runner         {use_local_workers(options, argv, min(left, most))}, backlog {left} messages")
    in_passes, passes, plans = left > most, [], []
    counts_to = stack.enter_context(counted_run(Progress("monitor", total=left, unit="messages")))
    while True:
        plan = plan_pass(starts, targets, most)
        plans.append(plan)
        if in_passes:
            size = sum(stop - start for start, stop in plan.values())
            out(f"pass {len(passes) + 1:<9} {size} of {left} messages left")
        passes.append(_run_pipeline(options, None, offset_ranges=plan, counts_to=counts_to))
        if shortfall := passes[-1].lake_shortfall():
            # The runner lost part of the pass's output: those offsets are not durable, so they stay uncommitted.
            out(f"pass {len(passes):<9} {shortfall}")
        reached = after_pass(plan, committed_offsets(connection, topic, group))
        starts = {**starts, **reached}
        still = backlog(starts, targets)
        if still >= left > 0:
            # The commit stage only commits what the lake holds, so nothing is lost; but the run is not done.
            raise RuntimeError(f"not caught up: {still} messages before the end seen at start are not committed")
        if behind := backlog(reached, {partition: stop for partition, (_, stop) in plan.items()}):
            out(f"pass {len(passes):<9} {behind} messages read but not committed (the next pass reads them again)")
        if still == 0:
            break
        left = still
    if in_passes:
        out(f"passes         {len(passes)} (at most {most} messages each)")
        windows = refresh_window_metrics(options.view_as(AuditOptions).lake, topic, plans)
        out(f"window metrics {windows} windows span passes: computed again from the lake")
    if windows := refresh_reviewed_windows(options.view_as(AuditOptions).lake, topic, plans):
        out(f"window metrics {windows} windows with reviews: computed again from the lake")
    return sum_counts(passes)


def _run_pipeline(options: PipelineOptions, stop_workers: Callable[[], None] | None, **build) -> AuditCounts:
    """Build the monitor graph, run it to its end (a catch-up pass) or forever, and return its counts."""
    p = beam.Pipeline(options=options)
    build_monitor(p, options, **build)
    try:
        result = p.run()
        # Ctrl-C or SIGTERM cancels the job and waits for the runner to end it (CANCELED on Flink, not FAILED).
        wait_or_cancel(result, flink_rest=flink_rest_urls(options))
    finally:
        if stop_workers:
            stop_workers()
    return counts_from_result(result)


def main(args: argparse.Namespace) -> int:
    log_alerts_to_stderr()  # the drift stage's alerts and clears, one line each, as groundwatch drift logs them
    return exit_code("monitor", run, to_argv(args))
