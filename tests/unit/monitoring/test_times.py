"""Drift's lines give a minute's date wherever a reader could not infer it (a lake may span days or years)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.runner.drift_run import DriftOutcome, summary
from transforms.monitoring.times import later_text, span_text

START = datetime(2025, 11, 3, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("end", "plain", "short"),
    [
        (datetime(2025, 11, 3, 15, 5, tzinfo=UTC), "2025-11-03 14:00 .. 15:05", "14:00..15:05"),
        (datetime(2026, 12, 8, 9, 35, tzinfo=UTC), "2025-11-03 14:00 .. 2026-12-08 09:35", None),
        (datetime(2025, 11, 4, 0, 4, tzinfo=UTC), "2025-11-03 14:00 .. 2025-11-04 00:04", None),
    ],
)
def test_a_span_names_the_end_s_date_when_it_is_another_day(end, plain, short):
    assert span_text(START, end) == plain
    # Without the start's date, a span within one day is two times, and one across days has both dates.
    assert span_text(START, end, "..", date=False) == (short or plain.replace(" .. ", ".."))
    assert later_text(START, end) == plain.split(" .. ")[1]


def test_the_drift_summary_dates_both_ends_of_windows_years_apart():
    outcome = DriftOutcome(windows=[START, datetime(2026, 12, 8, 9, 35, tzinfo=UTC)])
    first = summary(outcome, "lake").splitlines()[0]
    assert first == "windows checked  2   (2025-11-03 14:00 .. 2026-12-08 09:35)"


def test_a_reference_span_on_another_day_than_its_window_is_dated():
    late = datetime(2025, 11, 3, 23, 50, tzinfo=UTC)
    window = datetime(2025, 11, 4, 0, 10, tzinfo=UTC)
    assert span_text(START, late, "..", date=False, beside=window) == "2025-11-03 14:00..23:50"
    assert span_text(START, late, "..", date=False, beside=START) == "14:00..23:50"
