"""What a stream's audit lanes hand the rest of the graph: each response scored and made into its lake rows.

A stream (`groundwatch monitor`) audits in lanes, processes of their own, and drops repeated response ids per
window afterwards, in the process that writes the lake. Everything that crosses between the two is encoded
by the runner, and a scored `AuditedResponse` is a tree of pydantic models that Beam can only pickle: about
12 KB, 180-230 µs to encode and 145-230 to decode by the day's measure, paid once out of the lane and twice
more through the dedupe's grouping. So the lane finishes the response's work itself (routing, lake rows, its
window figures, its review message) and sends one `ScoredRows`: a dataclass of plain values (and the small
pydantic `Origin`) that pickles whole in about 75 µs and decodes in 65 (docs/benchmarks.md, "What a stream's
lanes hand on").

    scored = audited | "ScoreToRows" >> ScoreToRows(threshold, rows=lake_rows(redact=False))
    scored[AUDITED]        # ScoredRows, one per response (repeats of an id included)
    scored[DEAD_LETTERS]   # responses routing or row building failed on
    unique = scored[AUDITED] | drop_duplicate_rows()
    counted = unique[PARSED] | "CountAudited" >> CountAudited()

A bounded run needs none of this: its audit is fused with the lake writer, so nothing crosses the runner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas import AuditedResponse, Origin
from schemas.base import utc_now
from transforms.audit.stages import AUDITED, score_and_flag
from transforms.ingest.parse import DEAD_LETTERS, METRICS_NAMESPACE, DropDuplicateResponses, stage_failed_dead_letter
from transforms.io.kafka.sink import KafkaMessage, review_message
from transforms.monitoring.window_metrics import ResponseStats, stats_from_audited

__all__ = ["CountAudited", "ScoreToRows", "ScoredRows", "drop_duplicate_rows", "scored_rows"]


@dataclass(frozen=True, slots=True)
class ScoredRows:
    """One audited, scored response as the lake, the window metrics and the review queue need it."""

    response_id: str
    origin: Origin
    raw: bytes
    """The message's original bytes: a copy dropped as a duplicate is dead-lettered with them."""
    audited_at: datetime
    rows: list[tuple[str, dict[str, Any]]]
    """Its `(table, row)` pairs, as `transforms.io.lake.rows.to_lake_rows` builds them."""
    stats: ResponseStats
    needs_review: bool
    review_message: KafkaMessage | None
    """Its review-queue message (`transforms.io.kafka.sink.review_message`), or None when it needs no human."""


def drop_duplicate_rows(*, clock: Callable[[], datetime] = utc_now) -> DropDuplicateResponses:
    """`DropDuplicateResponses` over `ScoredRows`: the first-read copy of each id per window is kept."""
    return DropDuplicateResponses(
        id_of=attrgetter("response_id"), origin_of=attrgetter("origin"), raw_of=attrgetter("raw"), clock=clock
    )


def scored_rows(
    audited: AuditedResponse,
    threshold: float,
    *,
    rows: Callable[[AuditedResponse], list],
    review_sample: float = 0.0,
    now: Callable[[], datetime] = utc_now,
) -> ScoredRows:
    """`audited` routed (`score_and_flag`) and made into its lake rows, window figures and review message."""
    scored = score_and_flag(audited, threshold, review_sample)
    return _scored_rows(scored, list(rows(scored)), threshold, now)


def _scored_rows(scored: AuditedResponse, rows: list, threshold: float, now: Callable[[], datetime]) -> ScoredRows:
    parsed = scored.parsed
    return ScoredRows(
        response_id=parsed.response.response_id,
        origin=parsed.origin,
        raw=parsed.raw if parsed.raw is not None else parsed.response.model_dump_json().encode("utf-8"),
        audited_at=scored.audited_at or now(),
        rows=rows,
        stats=stats_from_audited(scored),
        needs_review=bool(scored.review and scored.review.needs_review),
        review_message=review_message(scored, threshold),
    )


class _ScoreToRowsDoFn(beam.DoFn):
    def __init__(self, threshold: float, review_sample: float, rows: Callable[[AuditedResponse], list], clock):
        self._threshold, self._review_sample, self._rows, self._clock = threshold, review_sample, rows, clock

    def process(self, audited: AuditedResponse):
        try:
            scored = score_and_flag(audited, self._threshold, self._review_sample)
        except Exception as e:  # one response that routing cannot decide must not stop the run
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_dead_letter(audited.parsed, "score", e, self._clock())
            )
            return
        try:
            rows = list(self._rows(scored))
            out = _scored_rows(scored, rows, self._threshold, self._clock)
        except Exception as e:  # all of a response's rows or none, and its dead letter instead
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_dead_letter(audited.parsed, "lake_rows", e, self._clock())
            )
            return
        yield out


class ScoreToRows(beam.PTransform):
    """Route each audited response and build what the rest of a stream needs of it (`scored_rows`).

    Returns a tagged result: `[AUDITED]` one `ScoredRows` per response, `[DEAD_LETTERS]` the responses routing
    (stage `score`) or the rest (stage `lake_rows`: the rows, the window figures or the review message) failed
    on. Every copy of a repeated id that fails is its own dead letter: the dedupe comes after this, so a bounded
    run of the same input says `duplicate_response_id` for the later copies instead (the counts add up either
    way). Nothing is counted audited here: a repeated
    copy is dropped after this, so `CountAudited` counts the responses the dedupe keeps.
    """

    def __init__(
        self,
        threshold: float,
        *,
        rows: Callable[[AuditedResponse], list],
        review_sample: float = 0.0,
        clock: Callable[[], datetime] = utc_now,
    ):
        super().__init__()
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"confidence threshold must be in [0, 1], got {threshold}")
        if not 0.0 <= review_sample <= 1.0:
            raise ValueError(f"review sample must be in [0, 1], got {review_sample}")
        self._fn = _ScoreToRowsDoFn(threshold, review_sample, rows, clock)

    def expand(self, audited):
        return audited | "Build" >> beam.ParDo(self._fn).with_outputs(DEAD_LETTERS, main=AUDITED)


class _CountAuditedDoFn(beam.DoFn):
    def __init__(self):
        self._audited = Metrics.counter(METRICS_NAMESPACE, "audited")
        self._review = Metrics.counter(METRICS_NAMESPACE, "needs_review")

    def process(self, scored: ScoredRows):
        self._audited.inc()
        if scored.needs_review:
            self._review.inc()
        yield scored


class CountAudited(beam.PTransform):
    """Count each `ScoredRows` as audited (and as needing review if it does), as `ScoreAndFlag` counts a
    bounded run's responses; passes them on unchanged."""

    def expand(self, scored):
        return scored | "Count" >> beam.ParDo(_CountAuditedDoFn())
