"""Heuristic verifier word matching on the project's own sentences: irregular verbs, demonyms, connectives."""

from __future__ import annotations

from heuristic_verdict import verdict_on

from schemas import AttributionVerdict
from transforms.heuristic import grounded_score
from transforms.textmatch import stem, tokenize, word_weight

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
    assert grounded_score(linked) >= grounded_score(plain) - 1e-9


_SONG = 'The band released the single "Rock and Roll All Nite" on their 1975 album.'


def test_quoted_title_not_found_word_for_word_is_not_grounded():
    v = verdict_on("The band released the single 'I Want to Rock and Roll' on their 1975 album.", _SONG)
    assert v.attribution_verdict != V.fully_grounded
    assert "I Want to Rock and Roll" in v.unsupported_spans
    assert grounded_score(v) < 0.5


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
