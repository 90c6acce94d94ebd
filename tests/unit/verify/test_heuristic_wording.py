"""Heuristic verifier word matching on the project's own sentences: irregular verbs, demonyms, connectives."""

from __future__ import annotations

from schemas import AttributionVerdict
from tests.support.heuristic_verdict import verdict_on
from transforms.text.tokens import stem, tokenize, word_weight

V = AttributionVerdict


def test_irregular_verb_forms_share_a_stem():
    assert stem("left") == stem("leaving") == stem("leave")
    assert stem("took") == stem("taken") == stem("takes")
    assert stem("rose") == stem("rising") and stem("fell") == stem("falls")
    assert stem("won") == stem("wins") and stem("lost") == stem("loses")


def test_past_tense_of_an_irregular_verb_is_supported():
    v = verdict_on(
        "The storm left three villages without power.",
        "The storm is leaving three villages without power, the utility said.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_country_adjective_is_supported_by_the_country():
    v = verdict_on(
        "A Chinese factory recalled its toys.",
        "A factory in China recalled its toys after a safety review.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_a_different_country_adjective_is_not_supported():
    v = verdict_on(
        "A Japanese factory recalled its toys.", "A factory in China recalled its toys after a safety review."
    )
    assert v.attribution_verdict != V.fully_grounded


def test_opening_connectives_weigh_nothing():
    weights = {t.text: word_weight(t) for t in tokenize("However, moreover, finally the final report.")}
    assert weights["However"] == weights["moreover"] == weights["finally"] == 0.0
    assert weights["final"] > 0.0  # the adjective is a claim of its own ("the final season")


def test_connective_does_not_lower_the_score():
    evidence = "The museum reopened in June after a two-year renovation."
    plain = verdict_on("The museum reopened in June after a two-year renovation.", evidence)
    linked = verdict_on("Moreover, the museum reopened in June after a two-year renovation.", evidence)
    assert linked.attribution_verdict == V.fully_grounded
    assert linked.grounded_probability >= plain.grounded_probability - 1e-9


_SONG = 'The band released the single "Rock and Roll All Nite" on their 1975 album.'


def test_quoted_title_not_found_word_for_word_is_not_grounded():
    v = verdict_on("The band released the single 'I Want to Rock and Roll' on their 1975 album.", _SONG)
    assert v.attribution_verdict != V.fully_grounded
    assert "I Want to Rock and Roll" in v.unsupported_spans
    assert v.grounded_probability < 0.5


def test_quoted_title_in_other_case_and_punctuation_is_grounded():
    v = verdict_on('The band released the single "Rock and roll all nite" on their 1975 album.', _SONG)
    assert v.attribution_verdict == V.fully_grounded
    v = verdict_on('She starred in "Ray & Liz" in 2018.', "In 2018 she starred in Ray and Liz.")
    assert v.attribution_verdict == V.fully_grounded


def test_lowercase_quoted_speech_is_not_held_to_the_letter():
    v = verdict_on(
        'The minister said the plan was "a good start for the city".',
        "The minister said the plan was a good start for the whole city.",
    )
    assert v.attribution_verdict == V.fully_grounded


_RECALL = (
    'The automaker will recall 19 pickups to address a "specific electrical connection issue that could result in a '
    'loss of propulsion while driving."'
)


def test_quotation_with_another_word_inside_is_contradicted():
    v = verdict_on(
        'The company will recall 19 pickups to address a "specific braking issue that could result in a loss of '
        'propulsion while driving."',
        _RECALL,
    )
    assert v.attribution_verdict == V.contradicted
    assert "quotes 'braking' where the evidence reads 'electrical connection'" in v.provenance_notes
    assert v.contradicting_evidence_excerpts == [_RECALL]


def test_quotation_given_word_for_word_or_shortened_is_no_misquote():
    exact = 'The automaker will recall 19 pickups over a "specific electrical connection issue" in them.'
    assert verdict_on(exact, _RECALL).attribution_verdict == V.fully_grounded
    shortened = (
        'The automaker will recall 19 pickups over a "specific issue that could result in a loss of propulsion".'
    )
    assert verdict_on(shortened, _RECALL).attribution_verdict != V.contradicted
    # Square brackets mark the quoter's own words, which may stand in for the source's.
    bracketed = (
        'The recall is over a "specific [fault in the] connection issue that could result in a loss of propulsion".'
    )
    assert verdict_on(bracketed, _RECALL).attribution_verdict != V.contradicted


def test_reference_marker_in_the_evidence_is_not_a_number():
    evidence = "Iron smelting in West Africa began in the 5th century BCE. [2]"
    v = verdict_on("Iron smelting in West Africa began in the 2nd century BCE.", evidence)
    assert v.attribution_verdict == V.contradicted
    assert "'2' but the evidence says '5'" in v.provenance_notes
