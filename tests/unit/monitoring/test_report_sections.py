"""The report's operator sections on plain frames: worst slices weighted by responses, incidents open first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from dashboards.report_sections import incidents_frame, worst_slices

T0 = pd.Timestamp(datetime(2026, 11, 29, 10, 0, tzinfo=UTC))


def _metrics(rows):
    columns = ["window_start", "slice_dimension", "slice_value", "responses", "mean_attribution_confidence"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["mean_faithfulness"] = frame["mean_attribution_confidence"]
    frame["needs_review_responses"] = (frame["responses"] * (1 - frame["mean_attribution_confidence"])).round()
    return frame


def test_worst_slices_weigh_windows_by_responses_and_leave_out_small_slices_and_all_traffic():
    metrics = _metrics(
        [
            (T0, "all", "all", 100, 0.80),
            (T0, "retriever_version", "r9", 30, 0.50),
            (T0 + timedelta(minutes=1), "retriever_version", "r9", 10, 0.90),  # weighted: (15 + 9) / 40 = 0.6
            (T0, "retriever_version", "r7", 60, 0.85),
            (T0, "tenant", "tiny", 5, 0.10),  # too few responses to rank
        ]
    )
    worst = worst_slices(metrics)
    assert list(worst["slice"]) == ["retriever_version=r9", "retriever_version=r7"]
    assert worst["mean_attribution_confidence"].iloc[0] == 0.6
    assert worst["responses"].iloc[0] == 40


def test_incidents_of_the_period_open_first_with_their_cause_slice():
    base = {
        "cause_dimension": "retriever_version",
        "affected_slices": ["all traffic", "generator_model=gen-small-1"],  # as slice_label writes them
        "alert_ids": ["a", "b"],
        "drop": 0.39,
        "responses": 34,
        "cause": "generation",
        "retrieval_share": 0.3,
        "generation_share": 0.5,
        "citation_hygiene_share": 0.2,
        "example_response_ids": ["x", "y", "z", "w"],
    }

    def incident(status, value, started, cleared):
        return {**base, "status": status, "cause_value": value, "started_at": started, "cleared_at": cleared}

    incidents = pd.DataFrame(
        [
            incident("cleared", "r8", T0, T0 + timedelta(minutes=5)),
            incident("firing", "r9", T0 - timedelta(hours=2), None),
            incident("cleared", "old", T0 - timedelta(hours=3), T0 - timedelta(hours=2, minutes=30)),
        ]
    )
    incidents["cleared_at"] = pd.to_datetime(incidents["cleared_at"], utc=True)
    frame = incidents_frame(incidents, T0 - timedelta(minutes=30), T0 + timedelta(minutes=30))
    assert list(frame["cause_slice"]) == ["retriever_version=r9", "retriever_version=r8"]  # open first; old is out
    first = frame.iloc[0]
    assert first["drop"] == "-39%" and first["alerts"] == 2 and first["examples"] == "x, y, z"
    assert first["also_affected"] == "all traffic, generator_model=gen-small-1"
