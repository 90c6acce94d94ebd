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


def test_a_window_of_refusals_counts_in_responses_not_in_means():
    """A window whose responses claimed nothing has no means; its responses still count, as in 'Over time'."""
    metrics = _metrics(
        [
            (T0, "retriever_version", "r9", 30, 0.50),
            (T0 + timedelta(minutes=1), "retriever_version", "r9", 6, None),  # refusals only
        ]
    )
    metrics.loc[1, "needs_review_responses"] = 0
    worst = worst_slices(metrics)
    assert worst["responses"].tolist() == [36] and worst["windows"].tolist() == [2]
    assert worst["mean_attribution_confidence"].iloc[0] == 0.5 and worst["mean_faithfulness"].iloc[0] == 0.5


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
    assert first["breakdown"] == "retrieval 30%, generation 50%, citation hygiene 20%"  # no retrieval scores


def test_where_retrieval_scores_made_the_call_the_breakdown_says_what_went_wrong():
    """The cause is retrieval because the passages got worse; the shares count sentence kinds, so they are not
    called "generation 59%" beside it."""
    row = {
        "status": "firing",
        "cause_dimension": "retriever_version",
        "cause_value": "r9",
        "started_at": T0,
        "cleared_at": pd.NaT,
        "affected_slices": [],
        "alert_ids": ["a"],
        "drop": 0.27,
        "responses": 104,
        "cause": "retrieval",
        "retrieval_moved": True,
        "retrieval_share": 0.31,
        "generation_share": 0.59,
        "citation_hygiene_share": 0.10,
        "example_response_ids": ["x"],
    }
    incidents = pd.DataFrame([row, {**row, "cause_value": "r8", "cause": "generation", "retrieval_moved": False}])
    incidents["cleared_at"] = pd.to_datetime(incidents["cleared_at"], utc=True)
    frame = incidents_frame(incidents, T0 - timedelta(minutes=30), T0 + timedelta(minutes=30))
    assert frame["likely_cause"].iloc[0] == "retrieval"  # no retrieval evidence in these rows
    row |= {"context_relevance": 0.24, "reference_context_relevance": 0.29}
    row |= {"empty_retrieval_rate": 0.22, "reference_empty_retrieval_rate": 0.02}
    incidents = pd.DataFrame([row, {**row, "cause_value": "r8", "cause": "generation", "retrieval_moved": False}])
    incidents["cleared_at"] = pd.to_datetime(incidents["cleared_at"], utc=True)
    frame = incidents_frame(incidents, T0 - timedelta(minutes=30), T0 + timedelta(minutes=30))
    causes = dict(zip(frame["cause_slice"], frame["likely_cause"], strict=True))
    assert causes["retriever_version=r9"] == (
        "retrieval: retrieval moved (context relevance 0.29 -> 0.24, empty retrieval 2% -> 22%)"
    )
    assert causes["retriever_version=r8"].startswith("generation: retrieval held (")
    by_slice = dict(zip(frame["cause_slice"], frame["breakdown"], strict=True))
    assert by_slice["retriever_version=r9"] == "unsupported 31%, misstated 59%, citation hygiene 10%"
    assert by_slice["retriever_version=r8"] == "retrieval 31%, generation 59%, citation hygiene 10%"
