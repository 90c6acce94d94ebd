"""Heuristic verifier mechanisms on the project's own small fixtures: entity swaps in aligned slots, word weights."""

from __future__ import annotations

from schemas import AttributionVerdict, EvidencePassage
from transforms.heuristic import HeuristicVerifier, grounded_score
from transforms.textmatch import tokenize, word_weight

V = AttributionVerdict


def _one(sentence: str, evidence: str):
    [verdict] = HeuristicVerifier().verify([sentence], [EvidencePassage(doc_id="e1", content=evidence)])
    return verdict


def test_swapped_place_name_is_contradicted_and_named():
    v = _one("The company was founded in Paris.", "The company was founded in London.")
    assert v.attribution_verdict == V.contradicted
    assert v.contradicting_evidence_ids == ["e1"]
    assert "'Paris' where the evidence has 'London'" in v.provenance_notes
    assert grounded_score(v) < 0.5


def test_swapped_name_in_a_list_is_contradicted():
    v = _one("The treaty was signed by France and Spain.", "The treaty was signed by France and Portugal.")
    assert v.attribution_verdict == V.contradicted
    assert "'Spain' where the evidence has 'Portugal'" in v.provenance_notes


def test_swapped_name_inside_a_longer_title_is_contradicted():
    v = _one(
        "We propose the Neuro-Symbolic Evolution Learner, a model that learns visual concepts.",
        "We propose the Neuro-Symbolic Concept Learner, a model that learns visual concepts.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'Evolution'" in v.provenance_notes


def test_names_in_another_order_are_no_swap():
    v = _one("In 2001 Smith met Jones in Leeds.", "In 2001 Jones met Smith in Leeds.")
    assert v.attribution_verdict != V.contradicted


def test_added_name_is_unsupported_not_contradicted():
    v = _one("The company was founded in Paris by Marie Curie.", "The company was founded in Paris.")
    assert v.attribution_verdict == V.partially_grounded
    assert v.unsupported_spans == ["by Marie Curie"]


def test_same_name_is_grounded():
    v = _one("The company was founded in Paris.", "The company was founded in Paris by two engineers.")
    assert v.attribution_verdict == V.fully_grounded


def test_capitalised_first_word_is_not_a_name():
    v = _one("Researchers found the drug lowers blood pressure.", "Scientists found the drug lowers blood pressure.")
    assert v.attribution_verdict == V.fully_grounded


def test_connectives_and_emphasis_weigh_little():
    tokens = {t.text: t for t in tokenize("Additionally, it significantly and notably protects.")}
    assert word_weight(tokens["Additionally"]) < 0.5
    assert word_weight(tokens["significantly"]) < 0.5
    assert word_weight(tokens["protects"]) >= 1.0


def test_emphasis_around_a_supported_fact_keeps_it_grounded():
    v = _one(
        "Additionally, the new drug notably and significantly lowers blood pressure.",
        "The new drug lowers blood pressure.",
    )
    assert v.attribution_verdict == V.fully_grounded
