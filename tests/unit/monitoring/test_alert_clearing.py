"""An alert clears after `clear_after` passing windows in a row, whether one run checked them or one run each.

The monitor's drift stage checks each window as it closes, in a run of its own, so the passing windows an open
alert has counted must come back from the lake's `drift_checks` with the alert (`AlertTracker.from_lake_rows`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from schemas.monitoring import AlertRow, AlertStatus, CheckStatus, DriftCheckRow
from transforms.monitoring.alerts import AlertTracker
from transforms.monitoring.drift import WindowEvaluation

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
CHECK, SLICE = "mean_confidence_drop", ("retriever_version", "r9")
KEY = (CHECK, *SLICE)


def _at(minute: int) -> datetime:
    return T0 + timedelta(minutes=minute)


def _check(minute: int, status: CheckStatus, slice_=SLICE, check=CHECK) -> DriftCheckRow:
    return DriftCheckRow(
        window_start=_at(minute),
        window_end=_at(minute + 1),
        slice_dimension=slice_[0],
        slice_value=slice_[1],
        check=check,
        status=status,
        test="mean attribution confidence >= reference - 10%",
        current_responses=40,
        reference_responses=200,
        reference="trailing 6 windows",
        checked_at=_at(minute + 1),
    )


def _firing_since(minute: int) -> pd.DataFrame:
    row = AlertRow(
        alert_id="alert-0123456789abcdef",
        check=CHECK,
        metric="mean_attribution_confidence",
        slice_dimension=SLICE[0],
        slice_value=SLICE[1],
        status=AlertStatus.firing,
        severity="critical",
        window_start=_at(minute),
        window_end=_at(minute + 1),
        started_at=_at(minute),
        test="mean attribution confidence >= reference - 10%",
        current_responses=40,
        reference_responses=200,
        reference="trailing 6 windows",
        message="mean attribution confidence of retriever_version=r9 fell",
        updated_at=_at(minute + 1),
    )
    return pd.DataFrame([row.model_dump(mode="python")])


def _checks_table(rows: list[DriftCheckRow]) -> pd.DataFrame:
    """`drift_checks` as `load_lake_frames` reads it: enum values as strings, times in UTC."""
    frame = pd.DataFrame([row.model_dump(mode="json") for row in rows])
    for column in ("window_start", "window_end", "checked_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    return frame


def _window(minute: int, *rows: DriftCheckRow) -> WindowEvaluation:
    """A window whose slices are those of `rows` (a slice without a row had no traffic)."""
    plans = {(row.slice_dimension, row.slice_value): object() for row in rows}
    return WindowEvaluation(_at(minute), _at(minute + 1), checks=list(rows), plans=plans)  # type: ignore[arg-type]


def test_passing_windows_counted_by_earlier_runs_clear_the_alert_in_this_one():
    # Fired at 09:00; 09:01 passed; 09:02 inconclusive (neither raises nor clears); at 09:03 another check of
    # the slice ran, not this one; the next run checks 09:04, which passes: the second passing window.
    earlier = [
        _check(0, CheckStatus.alert),
        _check(1, CheckStatus.ok),
        _check(2, CheckStatus.inconclusive),
        _check(3, CheckStatus.ok, check="confidence_drift"),
    ]
    tracker = AlertTracker.from_lake_rows(_firing_since(0), 2, checks=_checks_table(earlier))
    (cleared,) = tracker.update(_window(4, _check(4, CheckStatus.ok)), _at(5))
    assert (cleared.status, cleared.cleared_at, cleared.cleared_window_start) == (AlertStatus.cleared, _at(1), _at(4))
    assert KEY not in tracker.open


def test_a_failing_window_starts_the_count_again_and_a_window_without_the_slice_counts():
    earlier = [
        _check(0, CheckStatus.alert),
        _check(1, CheckStatus.ok),
        _check(2, CheckStatus.alert),  # still failing: 09:01 no longer counts
        _check(3, CheckStatus.ok, slice_=("all", "all")),  # the slice had no traffic at 09:03: that counts
    ]
    tracker = AlertTracker.from_lake_rows(_firing_since(0), 2, checks=_checks_table(earlier))
    (cleared,) = tracker.update(_window(4, _check(4, CheckStatus.ok)), _at(5))
    assert (cleared.cleared_at, cleared.cleared_window_start) == (_at(3), _at(4))  # not 09:01


def test_without_the_checks_an_open_alert_starts_counting_afresh():
    earlier = [_check(0, CheckStatus.alert), _check(1, CheckStatus.ok)]
    assert AlertTracker.from_lake_rows(_firing_since(0), 2).update(_window(2, _check(2, CheckStatus.ok)), _at(3)) == []
    tracker = AlertTracker.from_lake_rows(_firing_since(0), 2, checks=_checks_table(earlier))
    assert [a.status for a in tracker.update(_window(2, _check(2, CheckStatus.ok)), _at(3))] == [AlertStatus.cleared]
