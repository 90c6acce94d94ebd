"""Event time and fixed windows: a response belongs to the minute (by default) its timestamp says.

    windowed = parsed | "WindowByEventTime" >> WindowByEventTime(window_seconds=60)

The element timestamp becomes the response's own `timestamp` (when it was
answered, not when it was read), so out-of-order and replayed traffic lands in
the window it belongs to. `window_bounds(window, fallback)` turns the window a
DoFn sees (`beam.DoFn.WindowParam`) into UTC datetimes for the lake rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
from apache_beam.transforms import window as beam_window
from apache_beam.utils.timestamp import Duration
from apache_beam.utils.windowed_value import PaneInfoTiming

__all__ = [
    "DEFAULT_WINDOW_SECONDS",
    "AssignEventTime",
    "LatePanesJoinOpenWindows",
    "WindowByEventTime",
    "fixed_windows",
    "late_reason",
    "response_event_time",
    "window_bounds",
]

DEFAULT_WINDOW_SECONDS = 60


def response_event_time(parsed) -> datetime:
    """The event time of a ParsedResponse: when the response was answered."""
    return parsed.response.timestamp


def window_bounds(window: Any, fallback: datetime) -> tuple[datetime, datetime]:
    """The window's [start, end) as UTC datetimes; the global window has none, so `fallback` is both."""
    if isinstance(window, beam_window.IntervalWindow):
        return window.start.to_utc_datetime(has_tz=True), window.end.to_utc_datetime(has_tz=True)
    return fallback, fallback


def late_reason(event_s: float, watermark_s: float, window_seconds: int, allowed_lateness_seconds: int) -> str | None:
    """Why a response with event time `event_s` would be dropped as late data at a watermark of `watermark_s`, or None.

    A streaming runner silently drops an element whose fixed window, plus the allowed lateness, closed before the
    watermark (Prism: window max timestamp + lateness < watermark). Knowing it first lets the caller dead-letter
    the message instead, so it is counted and kept.
    """
    window_end = (event_s // window_seconds + 1) * window_seconds
    closes = window_end - 0.001 + allowed_lateness_seconds  # the window's max timestamp is its end minus 1 ms
    if closes >= watermark_s:
        return None
    when = lambda s: datetime.fromtimestamp(s, UTC).isoformat(timespec="seconds")  # noqa: E731
    return (
        f"late: event time {when(event_s)} belongs to the window ending {when(window_end)}, which closed for good "
        f"({allowed_lateness_seconds}s allowed lateness) before the watermark reached {when(watermark_s)}; "
        "raise --allowed-lateness-seconds, or replay old traffic with --until-caught-up or --event-time message"
    )


def fixed_windows(window_seconds: int, allowed_lateness_seconds: int) -> beam.WindowInto:
    """The pipeline's windowing: fixed windows of `window_seconds`, late data accepted for the lateness."""
    return beam.WindowInto(
        beam_window.FixedWindows(window_seconds), allowed_lateness=Duration(seconds=allowed_lateness_seconds)
    )


def _to_utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class AssignEventTime(beam.PTransform):
    """Stamp each element with the event time `time_of(element)` returns (an aware datetime)."""

    def __init__(self, time_of: Callable[[Any], datetime] = response_event_time):
        super().__init__()
        self._time_of = time_of

    def expand(self, elements):
        time_of = self._time_of
        return elements | "Stamp" >> beam.Map(
            lambda e: beam_window.TimestampedValue(e, _to_utc(time_of(e)).timestamp())
        )


class WindowByEventTime(beam.PTransform):
    """Assign event time, then fixed windows of `window_seconds` (late data accepted for `allowed_lateness_seconds`)."""

    def __init__(
        self,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
        *,
        allowed_lateness_seconds: int = 0,
        time_of: Callable[[Any], datetime] = response_event_time,
    ):
        super().__init__()
        if window_seconds <= 0:
            raise ValueError(f"window size must be a positive number of seconds, got {window_seconds}")
        if allowed_lateness_seconds < 0:
            raise ValueError(f"allowed lateness must be >= 0 seconds, got {allowed_lateness_seconds}")
        self._window_seconds = window_seconds
        self._lateness = allowed_lateness_seconds
        self._time_of = time_of

    def expand(self, elements):
        return (
            elements
            | "AssignEventTime" >> AssignEventTime(self._time_of)
            | "FixedWindows" >> fixed_windows(self._window_seconds, self._lateness)
        )


class _LateToTimeDoFn(beam.DoFn):
    def __init__(self, time_of: Callable[[Any], datetime]):
        self._time_of = time_of

    def process(self, element, pane=beam.DoFn.PaneInfoParam, timestamp=beam.DoFn.TimestampParam):
        if pane.timing != PaneInfoTiming.LATE:
            yield element
            return
        # Never earlier than it was: a timestamp only moves forward, into a window still to close.
        moved = max(timestamp.micros / 1e6, _to_utc(self._time_of(element)).timestamp())
        yield beam_window.TimestampedValue(element, moved)


class LatePanesJoinOpenWindows(beam.PTransform):
    """Move what came in a late pane of a grouping into the fixed window of `time_of(element)`; the rest stays.

    A late pane (data that arrived after its window fired) would go through every later grouping as a late
    pane again, on its own: one lake file per table for each late response. Stamped with the time it was
    audited, it joins the window open then and is written with that window's files. The element keeps its
    own event-time fields (its `window_start` / `window_end`), so nothing it reports changes.
    """

    def __init__(
        self,
        window_seconds: int,
        *,
        allowed_lateness_seconds: int = 0,
        time_of: Callable[[Any], datetime],
    ):
        super().__init__()
        self._window_seconds, self._lateness, self._time_of = window_seconds, allowed_lateness_seconds, time_of

    def expand(self, elements):
        return (
            elements
            | "StampLateWithTimeOf" >> beam.ParDo(_LateToTimeDoFn(self._time_of))
            | "FixedWindows" >> fixed_windows(self._window_seconds, self._lateness)
        )
