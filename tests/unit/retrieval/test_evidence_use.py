"""Evidence use: the share of retrieved passages the answer used, and the share the top-ranked passage supports."""

from __future__ import annotations

import pytest

from schemas.reports import AttributionVerdict, SentenceVerdict
from transforms.retrieval.evidence_use import (
    SentenceSupport,
    passages_used_share,
    sentence_supports,
    top_passage_support_share,
    top_ranked_ids,
)

SENTENCES = [SentenceSupport(True, ("p1",)), SentenceSupport(True, ("p1", "p3")), SentenceSupport(False)]


def test_share_of_retrieved_passages_used_by_supported_sentences():
    assert passages_used_share(SENTENCES, ["p1", "p2", "p3", "p4"]) == pytest.approx(0.5)


def test_passages_named_only_by_unsupported_sentences_are_not_used():
    assert passages_used_share([(False, ("p2",)), (True, ("p1",))], ["p1", "p2"]) == pytest.approx(0.5)


def test_ids_that_were_not_retrieved_do_not_count():
    assert passages_used_share([(True, ("p1", "ghost"))], ["p1", "p2"]) == pytest.approx(0.5)


def test_no_retrieved_passage_gives_none_and_no_sentence_gives_zero_use():
    assert passages_used_share(SENTENCES, []) is None
    assert passages_used_share([], ["p1"]) == 0.0


def test_share_of_the_answer_supported_by_the_top_ranked_passage():
    assert top_passage_support_share(SENTENCES, {"p1": 1, "p2": 2, "p3": 3}) == pytest.approx(2 / 3)
    assert top_passage_support_share(SENTENCES, {"p3": 1, "p1": 2}) == pytest.approx(1 / 3)


def test_a_generator_ignoring_the_top_passage_scores_zero():
    assert top_passage_support_share([(True, ("p2",)), (True, ("p3",))], {"p1": 1, "p2": 2}) == 0.0


def test_without_ranks_or_sentences_the_top_share_is_none():
    assert top_passage_support_share(SENTENCES, None) is None
    assert top_passage_support_share(SENTENCES, {}) is None
    assert top_passage_support_share([], {"p1": 1}) is None


def test_tied_best_ranks_all_count_as_top():
    assert top_ranked_ids({"a": 1, "b": 1, "c": 2}) == frozenset({"a", "b"})
    assert top_passage_support_share([(True, ("b",))], {"a": 1, "b": 1}) == 1.0


def _verdict(i, verdict, ids=(), kind="claim"):
    return SentenceVerdict(
        sentence_index=i,
        sentence_text=f"s{i}",
        attribution_verdict=verdict,
        confidence=0.9,
        supporting_evidence_ids=list(ids),
        claim_kind=kind,
    )


def test_sentence_verdicts_become_supports_claims_only():
    verdicts = [
        _verdict(0, AttributionVerdict.fully_grounded, kind="lead_in"),
        _verdict(1, AttributionVerdict.fully_grounded, ("p1",)),
        _verdict(2, AttributionVerdict.partially_grounded, ("p2",)),
        _verdict(3, AttributionVerdict.contradicted, ("p3",)),
        _verdict(4, AttributionVerdict.ungrounded),
    ]
    supports = sentence_supports(verdicts)
    assert supports == [(True, ("p1",)), (True, ("p2",)), (False, ("p3",)), (False, ())]
    assert passages_used_share(supports, ["p1", "p2", "p3", "p4"]) == pytest.approx(0.5)
    assert top_passage_support_share(supports, {"p2": 1, "p1": 2}) == pytest.approx(0.25)
