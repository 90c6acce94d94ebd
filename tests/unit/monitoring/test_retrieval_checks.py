"""Retrieval figures in window metrics, the drift checks on them, and the evidence an incident's cause rests on.

Plain frames of responses as the lake reader gives them (one row per response, the `responses` columns), so
that each figure is known exactly; the scenario tests (`test_retrieval_incidents.py`) run the same code on
generated traffic end to end.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pandas as pd
import pytest

from schemas.monitoring import CheckStatus
from transforms.monitoring.incident_messages import incident_message
from transforms.monitoring.incident_retrieval import attribute, retrieval_evidence
from transforms.monitoring.plans import DriftConfig, SlicePlan
from transforms.monitoring.retrieval_checks import retrieval_checks
from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_rows

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
BASE = dict(
    window_start=START,
    window_end=START,
    slice_dimension="all",
    slice_value="all",
    current_responses=40,
    reference_responses=240,
    reference="trailing 6 windows",
    checked_at=START,
)


def _responses(n: int, relevance: float, empty_share: float, seed: int, used: float = 0.73) -> pd.DataFrame:
    """`n` responses around these figures; evidence use as on stable scenario traffic (0.73, sd 0.24)."""
    rng = random.Random(seed)
    return pd.DataFrame(
        {
            "mean_context_relevance": [min(1.0, max(0.0, rng.gauss(relevance, 0.12))) for _ in range(n)],
            "empty_retrieval": [rng.random() < empty_share for _ in range(n)],
            "passages_used_share": [min(1.0, max(0.0, rng.gauss(used, 0.24))) for _ in range(n)],
        }
    )


def _plan(current: pd.DataFrame, reference: pd.DataFrame) -> SlicePlan:
    return SlicePlan("all", "all", current, pd.DataFrame(), {}, reference_responses=reference)


def _statuses(current: pd.DataFrame, reference: pd.DataFrame) -> dict[str, CheckStatus]:
    rows = retrieval_checks(_plan(current, reference), BASE, DriftConfig(), p_threshold=0.001)
    return {row.check: row.status for row in rows}


REFERENCE = _responses(240, 0.30, 0.03, seed=1)


def test_ordinary_windows_raise_no_alert():
    for seed in range(2, 22):
        assert CheckStatus.alert not in _statuses(_responses(40, 0.30, 0.03, seed), REFERENCE).values()


def test_passages_off_the_topic_alert_on_relevance_and_empty_retrieval():
    statuses = _statuses(_responses(40, 0.18, 0.40, seed=2), REFERENCE)
    assert statuses == {
        "context_relevance_drop": CheckStatus.alert,
        "empty_retrieval_rise": CheckStatus.alert,
        "evidence_use_drop": CheckStatus.ok,
    }


def test_answers_that_stop_drawing_on_good_passages_alert_on_evidence_use_alone():
    statuses = _statuses(_responses(40, 0.30, 0.03, seed=4, used=0.42), REFERENCE)  # the generator regression
    assert statuses == {
        "context_relevance_drop": CheckStatus.ok,
        "empty_retrieval_rise": CheckStatus.ok,
        "evidence_use_drop": CheckStatus.alert,
    }


def test_a_small_fall_raises_no_alert_even_when_certain_but_keeps_one_open():
    # 7% lower relevance, 5 points more empty, about 12% less evidence use
    statuses = _statuses(_responses(2000, 0.28, 0.08, seed=3, used=0.62), REFERENCE)
    inconclusive = CheckStatus.inconclusive  # neither raises nor clears: a regression's milder windows
    assert set(statuses.values()) == {inconclusive} and len(statuses) == 3


def test_a_lake_without_retrieval_scores_gets_no_retrieval_checks():
    old = pd.DataFrame({"faithfulness": [0.9] * 40})
    assert retrieval_checks(_plan(old, old), BASE, DriftConfig(), p_threshold=0.001) == []
    nulls = pd.DataFrame(
        {"mean_context_relevance": [None] * 40, "empty_retrieval": [None] * 40, "passages_used_share": [None] * 40}
    )
    assert retrieval_checks(_plan(nulls, REFERENCE), BASE, DriftConfig(), p_threshold=0.001) == []


def _row(response_id: str, relevance: float | None, empty: bool | None, used: float | None) -> dict:
    return {
        "response_id": response_id,
        "window_start": START,
        "window_end": START,
        "tenant": "acme",
        "retriever_version": "r7",
        "generator_model": "g",
        "overall_faithfulness_score": 1.0,
        "mean_context_relevance": relevance,
        "empty_retrieval": empty,
        "passages_used_share": used,
    }


def test_window_figures_skip_responses_without_scores_instead_of_counting_zero():
    rows = [_row("a", 0.8, False, 1.0), _row("b", 0.2, True, 0.5), _row("old", None, None, None)]
    (metrics,) = [m for m in compute_window_metrics(stats_from_rows(r, []) for r in rows) if m.slice_dimension == "all"]
    assert metrics.responses == 3
    assert metrics.mean_context_relevance == pytest.approx(0.5)
    assert metrics.empty_retrieval_rate == pytest.approx(0.5)
    assert metrics.mean_passages_used_share == pytest.approx(0.75)
    (old,) = [m for m in compute_window_metrics([stats_from_rows(rows[2], [])]) if m.slice_dimension == "all"]
    assert (old.mean_context_relevance, old.empty_retrieval_rate, old.mean_passages_used_share) == (None, None, None)


GENERATION_PROBLEMS = {
    "ungrounded_sentences": 10,
    "uncited_claims": 0,
    "contradicted_sentences": 40,
    "misattributed_citations": 20,
    "fabricated_citations": 0,
    "inexact_quotes": 5,
}
UNGROUNDED_ONLY = {**dict.fromkeys(GENERATION_PROBLEMS, 0), "ungrounded_sentences": 50}


def test_moved_retrieval_names_retrieval_whatever_the_problems_counted():
    # A stale index makes numbers contradicted, as a misquoting generator does: the counts say "generation".
    evidence = retrieval_evidence(_responses(200, 0.2, 0.3, 4), REFERENCE, p_value=0.001, min_change=0.10)
    assert evidence is not None and evidence.moved
    assert attribute(evidence, GENERATION_PROBLEMS)[0] == "retrieval"


def test_held_retrieval_names_generation_for_sentences_the_evidence_does_not_hold():
    # Ungrounded sentences used to count as retrieval; with the passages as relevant as before, they are the
    # generator's.
    evidence = retrieval_evidence(_responses(200, 0.30, 0.03, 5), REFERENCE, p_value=0.001, min_change=0.10)
    assert evidence is not None and not evidence.moved
    cause, shares = attribute(evidence, UNGROUNDED_ONLY)
    assert cause == "generation" and shares["generation"] == 1.0 and shares["retrieval"] == 0.0


def test_without_scores_the_problem_counts_decide_as_before():
    old = pd.DataFrame({"faithfulness": [0.5] * 30})
    assert retrieval_evidence(old, old, p_value=0.001, min_change=0.10) is None
    assert attribute(None, UNGROUNDED_ONLY)[0] == "retrieval"
    assert attribute(None, GENERATION_PROBLEMS)[0] == "generation"


def test_the_incident_message_states_the_evidence_for_its_call():
    from schemas.monitoring import AlertStatus, IncidentRow

    evidence = retrieval_evidence(_responses(200, 0.17, 0.45, 6), REFERENCE, p_value=0.001, min_change=0.10)
    cause, shares = attribute(evidence, GENERATION_PROBLEMS)
    row = IncidentRow(
        incident_id="i",
        status=AlertStatus.firing,
        cause_dimension="retriever_version",
        cause_value="r9",
        window_start=START,
        started_at=START,
        responses=200,
        cause=cause,
        **GENERATION_PROBLEMS,
        retrieval_share=shares["retrieval"],
        generation_share=shares["generation"],
        citation_hygiene_share=shares["citation_hygiene"],
        **evidence.fields(),
        message="",
        updated_at=START,
    )
    text = incident_message(row)
    relevance = f"context relevance {evidence.reference_relevance:.2f} -> {evidence.relevance:.2f}"
    assert f"likely cause retrieval: retrieval moved ({relevance}" in text
    assert f"empty retrieval {evidence.reference_empty_rate:.0%} -> {evidence.empty_rate:.0%}" in text
    # The call is retrieval's, so the shares say what went wrong in the answers, not "generation 59%".
    assert f"(unsupported {shares['retrieval']:.0%}, misstated {shares['generation']:.0%}" in text
    assert "generation" not in text.split("likely cause", 1)[1]
