"""Times as the drift lines print them: a minute, with the date wherever a reader could not infer it.

span_text(start, end)                  # "2026-11-29 09:00 .. 09:35", "2025-11-03 14:00 .. 2026-12-08 09:35"
span_text(start, end, "..", date=False)  # "09:02..09:18", and both dates when the span crosses midnight
later_text(start, then)                # "09:23", or "2026-11-30 00:04" on another day than `start`
"""

from __future__ import annotations

from datetime import datetime

__all__ = ["later_text", "span_text"]

_DAY, _MINUTE = "%Y-%m-%d %H:%M", "%H:%M"


def later_text(start: datetime, then: datetime) -> str:
    """`then` as a minute after `start` was printed with its date: the time alone on the same day."""
    return f"{then:{_MINUTE if then.date() == start.date() else _DAY}}"


def span_text(
    start: datetime, end: datetime, sep: str = " .. ", *, date: bool = True, beside: datetime | None = None
) -> str:
    """From `start` to `end`: the start's date when `date`, when the span crosses days, or when it starts on
    another day than `beside` (the time printed next to it); the end's date when it falls on another day."""
    dated = date or end.date() != start.date() or (beside is not None and beside.date() != start.date())
    return f"{start:{_DAY if dated else _MINUTE}}{sep}{later_text(start, end)}"
