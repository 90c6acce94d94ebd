"""The traffic generator's two retrieval scenarios: what each changes, measured on the messages themselves."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime

import pytest

from pipelines.traffic.scenarios import NEW_GENERATOR, NEW_RETRIEVER, ScenarioSpec, change_time, scenario_responses
from schemas import LoggedResponse
from transforms.retrieval.relevance import score_retrieval

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _scored(name: str):
    spec = ScenarioSpec(name, windows=6, per_window=40, change_at=0.5, seed=5, start=START)
    change = change_time(spec)
    for message in scenario_responses(spec):
        response = LoggedResponse.model_validate(message)
        scores = score_retrieval(response.query, {p.doc_id: p.content for p in response.evidence})
        yield response, change is not None and response.timestamp >= change, scores


def test_ordinary_scenario_traffic_asks_about_its_passages():
    empty = [s.empty_retrieval for _, _, s in _scored("stable")]
    assert sum(empty) / len(empty) < 0.1  # each query asks for a fact one of its passages states


def test_the_off_topic_retriever_empties_part_of_r9s_retrieval_and_nothing_before():
    scored = list(_scored("off-topic-retriever"))
    before = [s.empty_retrieval for r, after, s in scored if not after]
    r9 = [s.empty_retrieval for r, after, s in scored if r.metadata.retriever_version == NEW_RETRIEVER]
    assert all(after for r, after, _ in scored if r.metadata.retriever_version == NEW_RETRIEVER)
    assert sum(before) / len(before) < 0.1 and 0.25 < sum(r9) / len(r9) < 0.6  # about 40% off topic


def test_the_generator_regression_leaves_retrieval_alone_and_adds_a_new_model():
    scored = list(_scored("generator-regression"))
    new = [(after, s) for r, after, s in scored if r.metadata.generator_model == NEW_GENERATOR]
    assert new and all(after for after, _ in new)
    relevance = {
        after: statistics.fmean(s.mean_context_relevance for _, a, s in scored if a == after) for after in (0, 1)
    }
    assert relevance[1] == pytest.approx(relevance[0], rel=0.15)
    assert {r.metadata.retriever_version for r, _, _ in scored} <= {"r7", "r8"}
