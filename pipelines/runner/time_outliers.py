"""Answers dated far outside the rest of an audit's input: counted and named, so that they are not silent.

    outliers = far_in_time("./groundwatch-lake", ["file:/data/traffic.jsonl"])
    outliers.count, outliers.examples        # 1, [("resp-7", datetime(2025, 11, 29, ...))]

The rule is Tukey's "far out" fence: with the middle half of the input's answers between the first and
third quartiles of `event_time` (a span of at least a day, `MIN_SPAN_SECONDS`), an answer is far outside
when it lies more than three such spans before the first quartile or after the third. A year-old answer
among a day or a week of traffic is; the first answer of a quiet night before a busy morning is not, and
neither is the start of a week of a small tenant's answers. Quartiles, unlike the extremes, do not move
with the outliers themselves, even in a small input. Such an answer is still audited (a backfill may be real),
but it stretches every chart and every drift baseline to its date, so the audit's summary counts them and
names the first few.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from dashboards.views import connect_lake

__all__ = ["FENCE", "MIN_SPAN_SECONDS", "TimeOutliers", "far_in_time"]

MIN_SPAN_SECONDS = 86_400
"""The least span the middle half of an input is given: a day (a burst of traffic has a span of minutes)."""
FENCE = 3.0
"""Spans beyond the quartiles that are far out (Tukey's fence for "far out" values)."""

_SQL = """
WITH run AS (SELECT response_id, event_time, epoch(event_time) AS t FROM responses WHERE origin_source IN ({}))
, range AS (SELECT quantile_cont(t, 0.25) AS lo, quantile_cont(t, 0.75) AS hi FROM run)
, far AS (
    SELECT response_id, event_time FROM run, range
    WHERE t < lo - ? * greatest(hi - lo, ?) OR t > hi + ? * greatest(hi - lo, ?)
)
SELECT (SELECT count(*) FROM far), (SELECT list(response_id ORDER BY event_time)[:3] FROM far),
       (SELECT list(event_time ORDER BY event_time)[:3] FROM far),
       (SELECT to_timestamp(lo) FROM range), (SELECT to_timestamp(hi) FROM range)
"""


@dataclass(frozen=True)
class TimeOutliers:
    """How many answers of the input lie far out, the first few of them, and the middle half's range."""

    count: int = 0
    examples: list[tuple[str, datetime]] = field(default_factory=list)
    range: tuple[datetime, datetime] | None = None

    def summary_line(self) -> str:
        """The audit summary's line for them (only printed when there are any)."""
        named = ", ".join(f"{rid} at {when:%Y-%m-%d %H:%M}" for rid, when in self.examples)
        lo, hi = self.range or (None, None)
        return (
            f"far in time    {self.count:>8}   answers dated far from the middle half of the others "
            f"({lo:%Y-%m-%d %H:%M} .. {hi:%Y-%m-%d %H:%M}; audited, but charts stretch to them): {named}"
        )


def far_in_time(lake_dir: str, sources: Sequence[str]) -> TimeOutliers:
    """The answers of the lake's `responses` from `sources` (their `origin_source`) that lie far out in time,
    by the rule above."""
    if not sources:
        return TimeOutliers()
    con = connect_lake(lake_dir)
    try:
        sql = _SQL.format(", ".join("?" * len(sources)))
        count, ids, times, lo, hi = con.execute(
            sql, [*sources, FENCE, MIN_SPAN_SECONDS, FENCE, MIN_SPAN_SECONDS]
        ).fetchone()
    finally:
        con.close()
    if not count:
        return TimeOutliers()
    return TimeOutliers(count, list(zip(ids, times, strict=True)), (lo, hi))
