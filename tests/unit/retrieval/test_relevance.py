"""Context relevance, answer relevance and the empty-retrieval flag on small hand-made cases."""

from __future__ import annotations

import pytest

from transforms.retrieval.relevance import (
    RelevanceConfig,
    answer_relevance,
    context_relevance,
    is_empty_retrieval,
    query_terms,
    score_retrieval,
)

QUERY = "What is the waiting period for dental crowns?"
ON_TOPIC = "Major dental services such as crowns have a 12-month waiting period."
OFF_TOPIC = "Vision exams are covered once every 24 months."


def test_question_frame_and_function_words_are_not_terms():
    assert [t for t, _ in query_terms("Can you please explain what the waiting period is?")] == ["wait", "period"]


def test_a_passage_covering_every_query_word_scores_one_and_an_unrelated_one_zero():
    assert context_relevance(QUERY, ON_TOPIC) == pytest.approx(1.0)
    assert context_relevance(QUERY, OFF_TOPIC) == 0.0


def test_partial_coverage_scores_between_and_in_order():
    half = context_relevance(QUERY, "Dental crowns are covered at 50 percent.")
    assert 0.0 < half < 1.0
    assert context_relevance(QUERY, OFF_TOPIC) < half < context_relevance(QUERY, ON_TOPIC)


def test_inflected_forms_match_through_stems():
    assert context_relevance("When was the contract terminated?", "The employer terminates contracts in writing.") > 0.9


def test_a_synonym_counts_but_less_than_the_word_itself():
    flat = RelevanceConfig(b=0.0)  # no length normalisation: a short passage would saturate both to 1
    query = "Which medication lowers blood pressure?"
    own = context_relevance(query, "This medication lowers blood pressure.", flat)
    synonym = context_relevance(query, "This drug lowers blood pressure.", flat)
    assert 0.5 < synonym < own


def test_a_related_form_counts_through_its_prefix():
    assert context_relevance("Is the deductible waived?", "No deduction is waived for out-of-network care.") > 0.5


def test_a_long_passage_needs_more_mentions_for_full_credit():
    filler = " ".join(f"clause{i} text{i}" for i in range(100))
    short = context_relevance("dental crowns", "Dental crowns are covered.")
    long = context_relevance("dental crowns", f"Dental crowns are covered. {filler}")
    assert long < short


def test_a_query_without_content_words_scores_zero():
    assert context_relevance("What is it?", ON_TOPIC) == 0.0


def test_an_answer_that_addresses_the_query_beats_one_that_dodges_it():
    good = answer_relevance(QUERY, "Crowns are covered after a 12-month waiting period for dental work.")
    off_topic = answer_relevance(QUERY, "Vision exams are covered every 24 months.")
    assert good > 0.9 and off_topic == 0.0


def test_abstentions_and_pleasantries_address_nothing_even_when_they_repeat_the_query():
    assert answer_relevance(QUERY, "I don't know the waiting period for dental crowns. I hope this helps!") == 0.0


def test_claim_sentences_given_by_the_audit_replace_the_split():
    answer = "Crowns wait a year. Vision is separate."
    assert answer_relevance(QUERY, answer, claim_sentences=["Vision is separate."]) == 0.0
    assert answer_relevance(QUERY, answer, claim_sentences=["Crowns wait a year."]) > 0.0


def test_empty_retrieval_is_no_passage_at_or_above_the_threshold():
    config = RelevanceConfig(empty_threshold=0.5)
    assert is_empty_retrieval([0.1, 0.49], config)
    assert not is_empty_retrieval([0.1, 0.5], config)
    assert is_empty_retrieval([], config)


def test_score_retrieval_gathers_per_passage_scores_mean_max_and_flag():
    scores = score_retrieval(QUERY, {"a": ON_TOPIC, "b": OFF_TOPIC}, "Crowns wait twelve months.")
    assert scores.passage_relevance == {"a": pytest.approx(1.0), "b": 0.0}
    assert scores.mean_context_relevance == pytest.approx(0.5)
    assert scores.max_context_relevance == pytest.approx(1.0)
    assert scores.answer_relevance is not None and 0.0 < scores.answer_relevance < 1.0
    assert not scores.empty_retrieval
    off = score_retrieval(QUERY, {"b": OFF_TOPIC})
    assert off.empty_retrieval and off.answer_relevance is None


def test_no_passages_is_empty_retrieval_without_mean_or_max():
    scores = score_retrieval(QUERY, {})
    assert scores.empty_retrieval
    assert scores.mean_context_relevance is None and scores.max_context_relevance is None


@pytest.mark.parametrize("kwargs", [{"k1": 0}, {"b": 1.5}, {"avg_len": 0}, {"empty_threshold": 1.2}])
def test_bad_configuration_raises_at_construction(kwargs):
    with pytest.raises(ValueError):
        RelevanceConfig(**kwargs)
