"""Late messages of a stream become dead letters, counted, instead of vanishing in the runner.

    read = p | ReadKafkaMessages(..., bounded=False, late=functools.partial(
        message_late_reason, window_seconds=60, allowed_lateness_seconds=3600))
    dead = read[LATE] | "DeadLetterLateMessages" >> DeadLetterLateMessages()

A streaming runner drops an element whose window (plus the allowed lateness) closed before the watermark,
before any aggregation and without a count. The Kafka source knows its watermark, so it asks
`message_late_reason` about each record and sends late ones aside; here they are counted as read and as
dead-lettered (reason `late`), keeping their original bytes, so a run's counts still add up.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.base import utc_now
from transforms.ingest.parse import DEAD_LETTER_NAMESPACE, METRICS_NAMESPACE, dead_letter_row
from transforms.ingest.windows import late_reason
from transforms.io.kafka.client import message_event_time

__all__ = ["LATE_REASON", "DeadLetterLateMessages", "message_late_reason"]

LATE_REASON = "late"
"""The dead-letter reason (metric name, and the head of the error text) of a message too late for its window."""


def message_late_reason(
    raw: bytes, watermark_s: float, *, window_seconds: int, allowed_lateness_seconds: int
) -> str | None:
    """Why the stream would drop this message as late at `watermark_s`, judged by the message's own `timestamp`
    (what its window is chosen by); None when it is on time or has no readable timestamp (parsing rejects those)."""
    event_s = message_event_time(raw, None)
    if event_s is None:
        return None
    return late_reason(event_s, watermark_s, window_seconds, allowed_lateness_seconds)


class _DeadLetterLateFn(beam.DoFn):
    def __init__(self, clock: Callable[[], datetime]):
        self._clock = clock
        self._read = Metrics.counter(METRICS_NAMESPACE, "read")
        self._late = Metrics.counter(DEAD_LETTER_NAMESPACE, LATE_REASON)

    def process(self, element):
        raw, origin, reason = element
        self._read.inc()
        self._late.inc()
        yield dead_letter_row(raw, origin, stage="window", error=reason, received_at=self._clock())


class DeadLetterLateMessages(beam.PTransform):
    """`(raw, Origin, reason)` late messages -> DeadLetterRows, each counted as read and as dead-lettered."""

    def __init__(self, *, clock: Callable[[], datetime] = utc_now):
        super().__init__()
        self._clock = clock

    def expand(self, late):
        return late | "ToDeadLetters" >> beam.ParDo(_DeadLetterLateFn(self._clock))
