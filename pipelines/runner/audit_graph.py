"""The audit graph: raw messages -> parsed, windowed, sampled, verified, audited, scored -> the audit lake.

    with beam.Pipeline(options=options) as p:
        outputs = build_pipeline(p, options)                 # reads --input
        outputs = build_pipeline(p, options, source=messages)  # or raw `(bytes, Origin)` messages, e.g. Kafka's

Stages (each a labelled composite in `transforms/`):
ReadJsonl -> ParseResponses -> WindowByEventTime -> SampleResponses -> VerifySentences -> [audit steps]
-> ScoreRetrieval -> ScoreAndFlag -> ToLakeRows (+ WindowMetrics) -> WriteAuditLake. A bounded run drops
duplicate response ids while parsing. A stream (`groundwatch monitor`) scores each response and builds its rows
where it was audited (`ScoreToRows`, in its audit lane), then drops repeated ids per window
(`DropDuplicateResponses`) before the window metrics and the lake: what crosses from the lanes is plain data
(`transforms.audit.stream`).
A message any stage fails on, for any reason, becomes a dead letter `stage_failed: <stage>: ...` with its
original bytes, and the run goes on. `groundwatch audit` and `groundwatch monitor` both build this graph.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Mapping
from operator import attrgetter

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from pipelines.options.audit import AuditOptions, load_calibration, validate_options
from pipelines.options.judge import apply_judge_reports, judge_report_tasks, judge_verifier_config
from pipelines.options.model import model_verifier_config
from pipelines.runner.worker_pool import separate_environment
from transforms.audit.stages import (
    AUDITED,
    ApplyAuditStep,
    ScoreAndFlag,
    ScoreRetrieval,
    ToLakeRows,
    VerifySentences,
)
from transforms.audit.steps import audit_steps
from transforms.audit.stream import CountAudited, ScoreToRows, drop_duplicate_rows
from transforms.ingest.parse import DEAD_LETTERS, PARSED, ParseResponses
from transforms.ingest.sample import SampleResponses
from transforms.ingest.windows import LatePanesJoinOpenWindows, WindowByEventTime
from transforms.io.jsonl import ReadJsonlMessages
from transforms.io.lake.rows import lake_rows, row_dict
from transforms.io.lake.writer import WriteAuditLake
from transforms.monitoring.window_metrics import WindowMetrics

__all__ = ["build_pipeline", "lane_of"]


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

    Returns the outputs: `audited` (scored AuditedResponses; a stream's are `ScoredRows`), `dead_letters`
    (DeadLetterRows) and `lake_files` (paths written).
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
    # A stream's lanes score each response and build its rows themselves, so that what crosses back and through
    # the dedupe is plain data (`transforms.audit.stream`); the judge's reports, if asked for, need the
    # whole response, so then that happens after them.
    rows_in_lanes = streaming and not judge_report_tasks(opts)
    if audit_lanes:
        parts = sampled | "SplitAuditLanes" >> beam.Partition(lane_of, audit_lanes)
        lanes = [
            _verify_and_audit(
                part,
                opts,
                label=f" (lane {i})",
                place=functools.partial(separate_environment, lane=i),
                to_scored_rows=rows_in_lanes,
            )
            for i, part in enumerate(parts)
        ]
        audited = [lane_audited for lane_audited, _ in lanes] | "JoinAuditLanes" >> beam.Flatten()
        dead = [*dead, *(d for _, lane_dead in lanes for d in lane_dead)]
    else:
        audited, stage_dead = _verify_and_audit(sampled, opts, to_scored_rows=rows_in_lanes)
        dead = [*dead, *stage_dead]
    if not rows_in_lanes:
        audited = apply_judge_reports(opts, audited)  # the judge's citation / claim audit, if --judge-tasks asks
    if streaming:
        if not rows_in_lanes:
            audited, built_dead = _score_to_rows(opts, audited)
            dead = [*dead, built_dead]
        scored, response_rows, dead = _stream_tail(audited, opts, dead)
        metrics = scored | "WindowMetrics" >> WindowMetrics(per_window=True, stats_of=attrgetter("stats"))
    else:
        routed = audited | "ScoreAndFlag" >> ScoreAndFlag(threshold, review_sample=opts.review_sample)
        scored, dead = routed[AUDITED], [*dead, routed[DEAD_LETTERS]]
        built = scored | "ToLakeRows" >> ToLakeRows(_lake_rows(opts))
        response_rows, dead = built[AUDITED], [*dead, built[DEAD_LETTERS]]
        metrics = scored | "WindowMetrics" >> WindowMetrics(per_window=False)

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
        response_rows,
        metrics,
        dead_letters | "DeadLetterRows" >> beam.Map(lambda d: ("dead_letters", row_dict(d))),
    )
    # Streaming writes each window as it closes; a bounded run writes one file per table and hour.
    lake_files = rows | "WriteAuditLake" >> WriteAuditLake(opts.lake, per_window=streaming)
    return {"audited": scored, "dead_letters": dead_letters, "lake_files": lake_files}


def _verify_and_audit(
    parsed, opts: AuditOptions, *, label: str = "", place=lambda transform: transform, to_scored_rows: bool = False
):
    """VerifySentences, then the audit steps, each placed by `place` and labelled with the suffix `label`, and
    with `to_scored_rows` a stream's `ScoreToRows` after them. Returns the audited responses (`ScoredRows`
    with `to_scored_rows`) and the dead letters of each stage."""
    config = {**judge_verifier_config(opts), **model_verifier_config(opts)}
    if opts.calibration:
        config["calibration"] = load_calibration(opts)
    verified = parsed | f"VerifySentences{label}" >> place(
        VerifySentences(opts.verifier, threshold=opts.confidence_threshold, verifier_config=config)
    )
    audited, dead = verified[AUDITED], [verified[DEAD_LETTERS]]
    for step_label, stage, step in audit_steps(opts.confidence_threshold):
        result = audited | f"{step_label}{label}" >> place(ApplyAuditStep(step, stage=stage))
        audited, dead = result[AUDITED], [*dead, result[DEAD_LETTERS]]
    # Retrieval is scored where the audit's CPU work runs (in the lanes), not after a stream's dedupe waits.
    scored = audited | f"ScoreRetrieval{label}" >> place(ScoreRetrieval())
    audited, dead = scored[AUDITED], [*dead, scored[DEAD_LETTERS]]
    if to_scored_rows:
        audited, built_dead = _score_to_rows(opts, audited, label=label, place=place)
        dead = [*dead, built_dead]
    return audited, dead


def _lake_rows(opts: AuditOptions):
    return lake_rows(redact=bool(opts.redact))


def _score_to_rows(opts: AuditOptions, audited, *, label: str = "", place=lambda transform: transform):
    """A stream's responses routed and made into `ScoredRows` (`transforms.audit.stream`); returns them and
    their dead letters."""
    built = audited | f"ScoreToRows{label}" >> place(
        ScoreToRows(opts.confidence_threshold, rows=_lake_rows(opts), review_sample=opts.review_sample)
    )
    return built[AUDITED], built[DEAD_LETTERS]


def _stream_tail(scored_rows, opts: AuditOptions, dead: list):
    """A stream's ScoredRows with repeated ids dropped per window, counted, and late panes moved into the
    window open when they were audited. Returns the kept ones, their rows and the dead letters."""
    # Dropping repeated copies per window waits for the window to close: after the audit, so that verifying
    # goes on while the window is open and only writing waits for it.
    unique = scored_rows | "DropDuplicateResponses" >> drop_duplicate_rows()
    scored = unique[PARSED] | "CountAudited" >> CountAudited()
    # A response arriving after its window closed comes out of the dedupe in a late pane, and would be
    # written in files of its own (one per table); it is written with the window open when it was audited.
    lake_bound = scored | "LateToOpenWindow" >> LatePanesJoinOpenWindows(
        opts.window_seconds, allowed_lateness_seconds=opts.allowed_lateness_seconds, time_of=attrgetter("audited_at")
    )
    rows = lake_bound | "LakeRows" >> beam.Map(attrgetter("rows"))
    return scored, rows, [*dead, unique[DEAD_LETTERS]]


def lane_of(parsed, lanes: int) -> int:
    """The audit lane of a response: by a stable hash of its id, so every copy of a response takes the same lane."""
    return zlib.crc32(parsed.response.response_id.encode("utf-8")) % lanes
