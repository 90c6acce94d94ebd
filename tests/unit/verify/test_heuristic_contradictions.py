"""Heuristic verifier mechanisms on the project's own small fixtures: entity swaps in aligned slots, word weights."""

from __future__ import annotations

import pytest

from schemas import AttributionVerdict
from tests.support.heuristic_verdict import verdict_on
from transforms.text.tokens import stem, tokenize, word_weight
from transforms.verify.heuristic.alignment import _greedy_cover, _items, index_evidence
from transforms.verify.heuristic.config import DEFAULT_CONFIG
from transforms.verify.heuristic.contradiction import replaced_and_added
from transforms.verify.heuristic.slot_cues import anchored_name_swap, negated_heads

V = AttributionVerdict


def test_swapped_place_name_is_contradicted_and_named():
    v = verdict_on("The company was founded in Paris.", "The company was founded in London.")
    assert v.attribution_verdict == V.contradicted
    assert v.contradicting_evidence_ids == ["e1"]
    assert "'Paris' where the evidence has 'London'" in v.provenance_notes
    assert v.grounded_probability < 0.5


def test_swapped_name_in_a_list_is_contradicted():
    v = verdict_on("The treaty was signed by France and Spain.", "The treaty was signed by France and Portugal.")
    assert v.attribution_verdict == V.contradicted
    assert "'Spain' where the evidence has 'Portugal'" in v.provenance_notes


def test_swapped_name_inside_a_longer_title_is_contradicted():
    v = verdict_on(
        "We propose the Neuro-Symbolic Evolution Learner, a model that learns visual concepts.",
        "We propose the Neuro-Symbolic Concept Learner, a model that learns visual concepts.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'Evolution'" in v.provenance_notes


def test_names_in_another_order_are_no_swap():
    v = verdict_on("In 2001 Smith met Jones in Leeds.", "In 2001 Jones met Smith in Leeds.")
    assert v.attribution_verdict != V.contradicted


def test_added_name_is_unsupported_not_contradicted():
    v = verdict_on("The company was founded in Paris by Marie Curie.", "The company was founded in Paris.")
    assert v.attribution_verdict == V.partially_grounded
    assert v.unsupported_spans == ["by Marie Curie"]


def test_same_name_is_grounded():
    v = verdict_on("The company was founded in Paris.", "The company was founded in Paris by two engineers.")
    assert v.attribution_verdict == V.fully_grounded


def test_capitalised_first_word_is_not_a_name():
    v = verdict_on(
        "Researchers found the drug lowers blood pressure.", "Scientists found the drug lowers blood pressure."
    )
    assert v.attribution_verdict == V.fully_grounded


def test_connectives_and_emphasis_weigh_little():
    tokens = {t.text: t for t in tokenize("Additionally, it significantly and notably protects.")}
    assert word_weight(tokens["Additionally"]) < 0.5
    assert word_weight(tokens["significantly"]) < 0.5
    assert word_weight(tokens["protects"]) >= 1.0


def test_emphasis_around_a_supported_fact_keeps_it_grounded():
    v = verdict_on(
        "Additionally, the new drug notably and significantly lowers blood pressure.",
        "The new drug lowers blood pressure.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_listed_synonym_supports_a_paraphrase():
    v = verdict_on("The museum purchased the painting in 1990.", "The museum bought the painting in 1990.")
    assert v.attribution_verdict == V.fully_grounded
    assert "purchased" in v.provenance_notes


def test_unlisted_word_is_still_unsupported():
    v = verdict_on("The museum stole the painting in 1990.", "The museum bought the painting in 1990.")
    assert "stole" not in v.provenance_notes  # the supported parts are listed there; "stole" is not one
    assert "museum" in v.provenance_notes


def test_abbreviation_is_supported_by_its_words():
    v = verdict_on(
        "The NHS paid for the new hospital wing.", "The National Health Service paid for the new hospital wing."
    )
    assert v.attribution_verdict == V.fully_grounded
    assert "NHS" in v.provenance_notes


def test_abbreviation_in_place_of_its_words_is_no_swap():
    v = verdict_on(
        "The cartoon aired on TV in Japan in 1999.",
        "The cartoon aired on television in Japan in 1999.",
    )
    assert v.attribution_verdict != V.contradicted


def test_not_allowed_agrees_with_prohibited():
    v = verdict_on(
        "Tobacco and alcohol are not allowed in the park.", "Tobacco and alcohol are prohibited in the park."
    )
    assert v.attribution_verdict == V.fully_grounded


def test_allowed_contradicts_prohibited():
    v = verdict_on("Tobacco and alcohol are allowed in the park.", "Tobacco and alcohol are prohibited in the park.")
    assert v.attribution_verdict == V.contradicted


def test_irregular_antonym_is_contradicted():
    v = verdict_on("The shares rose sharply in 2020.", "The shares fell sharply in 2020.")
    assert v.attribution_verdict == V.contradicted
    assert "opposite" in v.provenance_notes


def test_word_starting_with_a_prefix_is_no_negation():
    # "displayed" is not "dis-" + "played": no antonym cue.
    v = verdict_on("The band played old songs at the museum.", "The museum displayed old songs the band played.")
    assert "opposite" not in v.provenance_notes


def test_synonym_in_the_aligned_slot_is_no_replacement():
    ev = index_evidence([("e1", "The museum bought the old painting from the dealer.")])
    same = replaced_and_added(list(tokenize("The museum purchased the old painting from the dealer.")), ev.sentences[0])
    other = replaced_and_added(list(tokenize("The museum restored the old painting from the dealer.")), ev.sentences[0])
    assert same[0] == 0.0
    assert other[0] > 0.0 and other[2] == "restored"


def test_exclusive_word_the_evidence_never_uses_lowers_the_score():
    claim = "The clinic is the only hospital that treats burns in the region."
    with_it = verdict_on(claim, "The clinic is the only hospital that treats burns in the region.")
    without = verdict_on(claim, "The clinic is a hospital that treats burns in the region.")
    assert with_it.attribution_verdict == V.fully_grounded
    assert without.grounded_probability < with_it.grounded_probability


def test_six_letter_prefix_supports_a_related_form():
    v = verdict_on(
        "The Canadian singer released the album in Toronto.", "The singer from Canada released the album in Toronto."
    )
    assert "Canadian" in v.provenance_notes


_COUNCIL = (
    "In March the city council approved the budget for the new library after a long debate among its members. "
    "Officials later hired suitable contractors for the building work."
)


def test_opposite_in_a_second_evidence_sentence_is_contradicted_despite_high_coverage():
    # Most of the claim is covered by the first sentence; the negated word sits in the slot of the second one.
    v = verdict_on(
        "The city council approved the budget for the new library in March and hired unsuitable contractors for the "
        "building work.",
        _COUNCIL,
    )
    assert v.attribution_verdict == V.contradicted
    assert "'unsuitable' where the evidence says the opposite" in v.provenance_notes
    assert v.grounded_probability < 0.5


def test_opposite_under_a_negation_is_no_contradiction():
    v = verdict_on(
        "The city council approved the budget for the new library in March and did not hire unsuitable contractors "
        "for the building work.",
        _COUNCIL,
    )
    assert v.attribution_verdict != V.contradicted


def test_same_words_in_both_sentences_are_grounded():
    v = verdict_on(
        "The city council approved the budget for the new library in March and hired suitable contractors for the "
        "building work.",
        _COUNCIL,
    )
    assert v.attribution_verdict == V.fully_grounded


def test_listed_antonym_of_a_feeling_is_contradicted():
    v = verdict_on(
        "Most residents love the new park by the river.",
        "A survey found that most residents dislike the new park by the river.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'love'" in v.provenance_notes


_BAR = "The hotel opened a new rooftop bar in May after a long renovation of its upper floors. "


def test_negation_in_the_slot_of_a_second_evidence_sentence_is_contradicted():
    v = verdict_on(
        "The hotel opened a new rooftop bar in May, and guests can't try local wines at the bar.",
        _BAR + "At the bar, guests can try local wines.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'try' negated in the claim only" in v.provenance_notes


def test_word_the_evidence_negates_is_contradicted():
    v = verdict_on(
        "The hotel opened a new rooftop bar in May, and the bar serves local wines.",
        _BAR + "The bar does not serve local wines.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "negated in the evidence only" in v.provenance_notes


def test_same_negation_in_the_second_sentence_is_no_contradiction():
    # The best-aligned sentence (the opening) has no negation, but the claim's negation denies nothing it states.
    v = verdict_on(
        "The hotel opened a new rooftop bar in May, but the bar does not serve local wines.",
        _BAR + "The bar does not serve local wines.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_negation_elsewhere_in_the_clause_is_no_contradiction():
    v = verdict_on(
        "No public transport is available near the new stadium.",
        "Public transport is not available near the new stadium.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_note_is_not_a_negation():
    assert stem("noted") == stem("notes") == "note" != stem("not")
    v = verdict_on("The report noted that the new bridge was safe.", "The new bridge was safe, the report said.")
    assert v.attribution_verdict != V.contradicted


def test_names_the_other_way_round_an_asymmetric_relation_are_contradicted():
    v = verdict_on("In the final, Leeds beat York by two goals.", "In the final, York beat Leeds by two goals.")
    assert v.attribution_verdict == V.contradicted
    assert "'Leeds' and 'York' the other way round" in v.provenance_notes
    v = verdict_on("Lyon is larger than Paris.", "Paris is larger than Lyon.")
    assert v.attribution_verdict == V.contradicted


def test_same_order_or_passive_voice_is_no_role_swap():
    assert verdict_on(
        "Microsoft acquired LinkedIn in 2016.", "In 2016 Microsoft acquired LinkedIn."
    ).attribution_verdict == (V.fully_grounded)
    v = verdict_on("York was beaten by Leeds in the final.", "In the final, Leeds beat York.")
    assert v.attribution_verdict != V.contradicted


def test_names_in_a_list_are_no_role_swap():
    v = verdict_on(
        "People drive on the left in the UK, India, South Africa and Japan.",
        "People drive on the left in Japan, South Africa, India and the UK.",
    )
    assert v.attribution_verdict == V.fully_grounded


@pytest.mark.parametrize(
    ("claim", "evidence", "word"),
    [
        ("More than 50 people attended the opening.", "Fewer than 50 people attended the opening.", "More"),
        ("The library opened before the election.", "The library opened after the election.", "before"),
        ("Prices at the market were higher in June.", "Prices at the market were lower in June.", "higher"),
    ],
)
def test_comparative_direction_reversed_is_contradicted(claim, evidence, word):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.contradicted
    assert f"{word!r} where the evidence says the opposite" in v.provenance_notes


_KOWAL = "Family tree of Jan Kowal, painter. Jan Kowal was born on 5 July 1867 in Warsaw, and died in 1951 in Krakow."


def test_name_in_the_slot_of_another_name_is_contradicted_without_word_alignment():
    # "born ... in Warsaw" several words apart: the same anchor word and preposition, another name.
    ev = index_evidence([("e1", _KOWAL)])
    tokens, items = _items("Jan Kowal was born in Gdansk.", ev)
    total = sum(it.weight for it in items)
    _, _, gain = _greedy_cover(items, total)
    cue = anchored_name_swap(tokens, items, ev, gain, total)
    assert cue is not None and cue.reason == "'Gdansk' where the evidence has 'Warsaw'"
    assert verdict_on("Jan Kowal was born in Gdansk.", _KOWAL).attribution_verdict == V.contradicted


def test_the_named_place_itself_is_no_swap():
    assert verdict_on("Jan Kowal was born in Warsaw.", _KOWAL).attribution_verdict == V.fully_grounded


def test_negation_reaches_over_a_preposition_but_not_into_the_next_phrase():
    assert negated_heads([stem(w) for w in "plead not guilty to the murder".split()]) == {2: 1, 5: 1}
    # A song called "No Good" before "the album": the negation does not reach the album.
    assert negated_heads([stem(w) for w in "it no good the album".split()]) == {2: 1}
    v = verdict_on(
        "At the May hearing in Leeds, Brown pleaded guilty to the murder of a local shopkeeper.",
        "At the May hearing in Leeds, Brown appeared before the court for the killing of a local shopkeeper. "
        "He pleaded not guilty to the murder and guilty to manslaughter.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'murder' negated in the evidence only" in v.provenance_notes


def test_a_title_with_no_in_it_does_not_negate_what_follows():
    v = verdict_on(
        "Ultra is an album by the band.",
        'Preceded by the singles "Barrel" and "It\'s No Good", the album Ultra by the band was released in 1997.',
    )
    assert v.attribution_verdict != V.contradicted


def test_a_word_the_evidence_also_says_in_the_slot_has_no_opposite():
    v = verdict_on(
        "The oxygen atom carries a negative charge.",
        "Oxygen has a larger positive charge in its nucleus. The oxygen atom carries a slightly negative charge.",
    )
    assert v.attribution_verdict == V.fully_grounded


def test_a_capitalised_word_after_an_article_is_no_name_swap():
    v = verdict_on(
        "She was appointed to the U.S. Supreme Court by President Reagan in 1981.",
        "In 1981 she was appointed to the Supreme Court by President Reagan, from Maricopa County.",
    )
    assert v.attribution_verdict != V.contradicted


@pytest.mark.parametrize(
    "claim, evidence",
    [
        (
            "The factory releases a toxic gas used in making dyes.",
            "The factory releases a reportedly toxic gas used in making dyes.",
        ),
        (
            "Drinking coffee raises blood pressure in older adults.",
            "Drinking coffee may raise blood pressure in older adults.",
        ),
        ("The mayor took bribes from the builders.", "The mayor allegedly took bribes from the builders."),
    ],
)
def test_a_claim_that_drops_the_evidence_hedge_is_contradicted(claim, evidence):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.contradicted
    assert "stated as fact where the evidence says" in v.provenance_notes


@pytest.mark.parametrize(
    "claim, evidence",
    [
        # The claim keeps the hedge (in another word).
        (
            "Drinking coffee may raise blood pressure in older adults.",
            "Drinking coffee might raise blood pressure in older adults.",
        ),
        # The evidence also states it plainly.
        (
            "The factory releases a toxic gas used in making dyes.",
            "The factory releases a reportedly toxic gas used in making dyes. Inspectors confirmed the toxic gas.",
        ),
        # "May" the month is no hedge.
        ("The factory opened in May 2020 near the river.", "The factory opened in May 2020 near the river."),
    ],
)
def test_a_kept_hedge_or_a_plain_statement_is_no_dropped_hedge(claim, evidence):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.fully_grounded


@pytest.mark.parametrize(
    "claim, evidence, said",
    [
        (
            "The city sent 300 volunteers to clear the beach after the storm.",
            "The city sent more than 300 volunteers to clear the beach after the storm.",
            "more than '300'",
        ),
        (
            "The museum lent 40 paintings to the gallery in Oslo.",
            "The museum lent up to 40 paintings to the gallery in Oslo.",
            "less than '40'",
        ),
        (
            "The two hikers spent less than ten dollars a day on food.",
            "The two hikers spent less than ten dollars each a day on food.",
            "each 'ten dollars'",
        ),
    ],
)
def test_a_bound_or_share_the_claim_drops_is_contradicted(claim, evidence, said):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.contradicted
    assert f"where the evidence says {said}" in v.provenance_notes


@pytest.mark.parametrize(
    "claim, evidence",
    [
        # The claim keeps the bound, or bounds a number the evidence states bare (less, not other).
        (
            "The city sent over 300 volunteers to clear the beach.",
            "The city sent more than 300 volunteers to clear the beach.",
        ),
        (
            "The city sent more than 300 volunteers to clear the beach.",
            "The city sent 300 volunteers to clear the beach.",
        ),
        # The evidence also states the bare number.
        (
            "The city sent 300 volunteers to clear the beach.",
            "The city sent more than 300 volunteers. In all, 300 volunteers cleared the beach.",
        ),
    ],
)
def test_a_kept_bound_or_a_bare_evidence_number_is_no_dropped_bound(claim, evidence):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict != V.contradicted


@pytest.mark.parametrize(
    "claim, evidence, word",
    [
        (
            "The driver was charged with manslaughter after the crash.",
            "The driver was charged with murder after the crash.",
            "manslaughter",
        ),
        (
            "The painting shows a red boat on the lake at dawn.",
            "The painting shows a blue boat on the lake at dawn.",
            "red",
        ),
        ("Her mother founded the bakery in the old town.", "Her father founded the bakery in the old town.", "mother"),
    ],
)
def test_another_word_of_the_same_closed_class_in_the_slot_is_contradicted(claim, evidence, word):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.contradicted
    assert f"{word!r} where the evidence says the opposite" in v.provenance_notes


@pytest.mark.parametrize(
    "claim, evidence",
    [
        (
            "The painting shows a red boat and a blue boat.",
            "The painting shows a red boat, a blue boat and a green boat.",
        ),
        ("Her mother founded the bakery.", "Her mother and her father founded the bakery."),
        ("The bridge took two years to build.", "The bridge took 24 months to build."),
    ],
)
def test_words_of_one_class_that_the_evidence_also_says_are_no_conflict(claim, evidence):
    assert verdict_on(claim, evidence).attribution_verdict == V.fully_grounded


def test_another_time_unit_in_the_slot_is_contradicted():
    v = verdict_on(
        "The bridge was closed for several weeks after the flood.",
        "The bridge was closed for several months after the flood.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'weeks' where the evidence says the opposite" in v.provenance_notes


@pytest.mark.parametrize(
    "claim, evidence",
    [
        ("The bridge took two years to build.", "The bridge took 24 months to build."),
        ("The bridge took a year to build.", "The bridge took twelve months to build."),
    ],
)
def test_counted_time_units_are_left_to_the_quantities(claim, evidence):
    assert verdict_on(claim, evidence).attribution_verdict == V.fully_grounded


@pytest.mark.parametrize(
    "claim, evidence",
    [
        # A capitalised "May" is a name, not a hedge.
        ("The prime minister said that the deal was final.", "Theresa May said that the deal was final."),
        # "each" before a noun is a determiner, not a share.
        ("The museum gets 10,000 visitors a year.", "The museum gets 10,000 visitors each year."),
        # "over three days" is a stretch of time, not a bound.
        ("The festival ran for three days.", "The festival ran over three days."),
    ],
)
def test_words_that_only_look_like_hedges_bounds_or_shares_are_no_conflict(claim, evidence):
    assert verdict_on(claim, evidence).attribution_verdict != V.contradicted


def test_a_slot_whose_words_are_listed_synonyms_is_the_same_slot():
    # "different kinds" / "various types": the negation is in the same slot although no context word is the same.
    v = verdict_on(
        "Alex picks an old pub on Main Street where guests can't taste different kinds of ale.",
        "Alex picks an old pub on Main Street for the party. There you can taste various types of ale.",
    )
    assert v.attribution_verdict == V.contradicted
    assert "'taste' negated in the claim only" in v.provenance_notes


@pytest.mark.parametrize(
    "claim, evidence, word",
    [
        ("Their next stop on the tour is Vienna.", "Their latest stop on the tour is Vienna.", "next"),
        ("The new bridge is narrower than the old bridge.", "The new bridge is wider than the old bridge.", "narrower"),
        ("The former mayor opened the new library.", "The current mayor opened the new library.", "former"),
        (
            "Attendance at the festival is voluntary for staff.",
            "Attendance at the festival is mandatory for staff.",
            "voluntary",
        ),
    ],
)
def test_a_flipped_sequence_or_comparative_is_contradicted(claim, evidence, word):
    v = verdict_on(claim, evidence)
    assert v.attribution_verdict == V.contradicted
    assert f"{word!r} where the evidence says the opposite" in v.provenance_notes


_STAY = "The patient was discharged after a hospital stay of six days."


def test_a_converse_word_with_its_sides_swapped_is_the_same_relation():
    v = verdict_on("The hospital stay lasted six days before discharge.", _STAY)
    assert v.attribution_verdict != V.contradicted and not v.contradicting_evidence_ids
    assert "opposite" not in v.provenance_notes and "converse" not in v.provenance_notes


def test_a_converse_word_with_its_sides_kept_is_contradicted():
    v = verdict_on("The patient was discharged before a hospital stay of six days.", _STAY)
    assert v.attribution_verdict == V.contradicted
    assert "'before' where the evidence says the opposite" in v.provenance_notes


def test_a_converse_word_whose_sides_cannot_be_told_doubts():
    v = verdict_on("Before the vote, the council met.", "The council met after the vote.")
    assert v.attribution_verdict != V.contradicted and not v.contradicting_evidence_ids
    assert "converse" in v.provenance_notes
    asserting = DEFAULT_CONFIG.with_cue_mode("converse", "assert")
    assert (
        verdict_on(
            "Before the vote, the council met.", "The council met after the vote.", config=asserting
        ).attribution_verdict
        == V.contradicted
    )


def test_a_word_whose_stem_is_a_function_word_still_counts():
    # "evening" stems to "even": it is still a content word, and another time of day than "morning".
    verdict = verdict_on("Dr. Patel reviews the chart each evening.", "Dr. Patel reviews the chart each morning.")
    assert verdict.attribution_verdict != V.fully_grounded


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Interest is paid quarterly.", "Interest is paid monthly."),
        ("Risk of loss passes to the seller upon delivery.", "Risk of loss passes to the buyer upon delivery."),
        ("The bank cut its prime rate to 8.5%.", "The bank raised its prime rate to 8.5%."),
        ("Setting the TTL to zero enables caching.", "Setting the TTL to zero disables caching."),
    ],
)
def test_another_member_of_a_closed_class_or_an_antonym_is_no_support(claim, evidence):
    assert verdict_on(claim, evidence).attribution_verdict != V.fully_grounded


_TWO_DENIALS = "Sick leave does not carry over and is not paid out at termination."


@pytest.mark.parametrize(
    ("claim", "verdict"),
    [
        # Two negations in the evidence are two denied clauses, not a double negation: parity says nothing.
        ("Sick leave is paid out at termination.", V.contradicted),
        ("Sick leave carries over.", V.contradicted),
        ("Sick leave is not paid out at termination.", V.fully_grounded),
        ("Sick leave does not carry over.", V.fully_grounded),
        ("Sick leave is not paid out and does not carry over.", V.fully_grounded),
        # A "No," that answers the question negates nothing in the sentence.
        ("No, unused sick leave does not carry over.", V.fully_grounded),
    ],
)
def test_each_denied_clause_of_the_evidence_keeps_its_own_polarity(claim, verdict):
    assert verdict_on(claim, _TWO_DENIALS).attribution_verdict == verdict


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # Two negations around a condition or a relative clause are one double negation, not two denials.
        ("If the form is not signed, the claim is not processed.", "The claim is processed once the form is signed."),
        (
            "Refunds are not given for items that are not returned within 30 days.",
            "Refunds are given for items returned within 30 days.",
        ),
        (
            "Part-time staff do not earn PTO and do not get sick leave.",
            "Full-time staff earn PTO and sick leave; part-time staff do not.",
        ),
        (
            "Pets are not allowed unless they are service animals, which are not restricted.",
            "Pets are allowed only if they are service animals.",
        ),
        ("No, the clinic is open on Sundays.", "The clinic is open on Sundays."),  # the answer particle again
    ],
)
def test_two_negations_that_make_one_condition_are_no_contradiction(claim, evidence):
    assert verdict_on(claim, evidence).attribution_verdict != V.contradicted


def test_an_acronym_of_the_evidence_s_words_is_no_swapped_name():
    evidence = "Full-time employees accrue 1.25 days of paid time off per month of service."
    acronym = verdict_on("Full-time staff earn 1.25 days of PTO per month.", evidence)
    other_name = verdict_on("Full-time staff earn 1.25 days of NBA per month.", evidence)
    assert acronym.attribution_verdict != V.contradicted and other_name.attribution_verdict == V.contradicted


def test_a_negation_moved_by_the_passive_is_the_same_polarity():
    evidence = "Patients with an eGFR below 30 must not receive metformin."
    verdict = verdict_on("Metformin must not be given to patients whose eGFR is below 30.", evidence)
    assert verdict.attribution_verdict != V.contradicted


def test_no_verdict_is_certain():
    same = "Lab results showed potassium at 4.2 mmol/L on admission."
    assert verdict_on(same, same).confidence <= 0.97


def test_affirming_what_an_evidence_clause_denies_is_not_fully_grounded():
    evidence = "The API supports JSON only; XML is not supported."
    verdict = verdict_on("The API supports both JSON and XML.", evidence)
    assert verdict.attribution_verdict != V.fully_grounded
    # The denial doubts (without coreference a pronoun's clause looks the same): kept from fully grounded, not
    # asserted as a contradiction.
    assert verdict.attribution_verdict == V.partially_grounded and "denied_clause" in verdict.provenance_notes
