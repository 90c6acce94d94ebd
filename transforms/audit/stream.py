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
    scored[DEAD_LETTERS]   # responses routing or building failed on
    unique = scored[AUDITED] | drop_duplicate_rows()
    counted = unique[PARSED] | "CountAudited" >> CountAudited()

`ScoreToRows` is `ScoreAndFlag` and `ToLakeRows` with `scored_rows` as the builder, neither counting: a
repeated copy is dropped after them, so `CountAudited` counts what the dedupe keeps.

A bounded run needs none of this: its audit is fused with the lake writer, so nothing crosses the runner.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas import AuditedResponse, Origin
from schemas.base import utc_now
from transforms.audit.stages import AUDITED, ScoreAndFlag, ToLakeRows
from transforms.ingest.parse import DEAD_LETTERS, METRICS_NAMESPACE, DropDuplicateResponses, original_bytes
from transforms.io.kafka.sink import KafkaMessage, review_message
from transforms.monitoring.window_metrics import ResponseStats, stats_from_audited

__all__ = ["CountAudited", "ScoreToRows", "ScoredRows", "drop_duplicate_rows", "scored_rows"]


@dataclass(frozen=True, slots=True)
class ScoredRows:
    """One audited, scored response as the lake, the window metrics and the review queue need it."""

    origin: Origin
    raw: bytes
    """The message's original bytes: a copy dropped as a duplicate is dead-lettered with them."""
    audited_at: datetime
    rows: list[tuple[str, dict[str, Any]]]
    """Its `(table, row)` pairs, as `transforms.io.lake.rows.to_lake_rows` builds them."""
    stats: ResponseStats
    """Its window figures; they hold its response id and whether it needs review."""
    review_message: KafkaMessage | None
    """Its review-queue message (`transforms.io.kafka.sink.review_message`), or None when it needs no human."""

    @property
    def response_id(self) -> str:
        return self.stats.response_id

    @property
    def needs_review(self) -> bool:
        return self.stats.needs_review


def scored_rows(
    scored: AuditedResponse,
    *,
    rows: Callable[[AuditedResponse], list],
    threshold: float,
    now: Callable[[], datetime] = utc_now,
) -> ScoredRows:
    """A routed response (`score_and_flag`) made into its lake rows (`rows`), window figures and review message."""
    return ScoredRows(
        origin=scored.parsed.origin,
        raw=original_bytes(scored.parsed),
        audited_at=scored.audited_at or now(),
        rows=rows(scored),
        stats=stats_from_audited(scored),
        review_message=review_message(scored, threshold),
    )


def drop_duplicate_rows(*, clock: Callable[[], datetime] = utc_now) -> DropDuplicateResponses:
    """`DropDuplicateResponses` over `ScoredRows`: the first-read copy of each response id per window is kept."""
    return DropDuplicateResponses(
        id_of=attrgetter("response_id"), origin_of=attrgetter("origin"), raw_of=attrgetter("raw"), clock=clock
    )


class ScoreToRows(beam.PTransform):
    """Route each audited response and build what the rest of a stream needs of it (`scored_rows`).

    Returns a tagged result: `[AUDITED]` one `ScoredRows` per response, `[DEAD_LETTERS]` the responses routing
    (stage `score`) or the rest (stage `lake_rows`: the rows, the window figures or the review message) failed
    on. Every copy of a repeated id that fails is its own dead letter: the dedupe comes after this, so a bounded
    run of the same input says `duplicate_response_id` for the later copies instead (the counts add up either
    way). Nothing is counted audited here (`CountAudited` does, after the dedupe).
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
        self._route = ScoreAndFlag(threshold, review_sample=review_sample, clock=clock, count=False)
        build = functools.partial(scored_rows, rows=rows, threshold=threshold, now=clock)
        self._build = ToLakeRows(build, clock=clock, counted=False)

    def expand(self, audited):
        routed = audited | "Route" >> self._route
        built = routed[AUDITED] | "Build" >> self._build
        dead = (routed[DEAD_LETTERS], built[DEAD_LETTERS]) | "DeadLetters" >> beam.Flatten()
        return {AUDITED: built[AUDITED], DEAD_LETTERS: dead}


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
