"""The heuristic verifier: the specification's four worked examples, then numbers, dates, negation and spans."""

from __future__ import annotations

import pytest

from schemas import AttributionVerdict, EvidencePassage
from transforms.verify.base import Verifier
from transforms.verify.heuristic.verifier import HeuristicVerifier

V = AttributionVerdict


def _one(sentence: str, *passages: tuple[str, str]):
    evidence = [EvidencePassage(doc_id=d, content=c) for d, c in passages]
    [verdict] = HeuristicVerifier().verify([sentence], evidence).verdicts
    return verdict


def _check_excerpts(verdict, *passages: tuple[str, str]):
    texts = dict(passages)
    for doc_id, excerpt in zip(verdict.supporting_evidence_ids, verdict.supporting_evidence_excerpts, strict=True):
        assert excerpt in texts[doc_id]
    for doc_id, excerpt in zip(
        verdict.contradicting_evidence_ids, verdict.contradicting_evidence_excerpts, strict=True
    ):
        assert excerpt in texts[doc_id]
    for span in verdict.unsupported_spans:
        assert span in verdict.sentence_text
    assert 0.0 <= verdict.confidence <= 1.0


def test_is_a_named_verifier():
    v = HeuristicVerifier()
    assert isinstance(v, Verifier)
    assert v.name == "heuristic" and v.version


def test_worked_example_1_fully_grounded():
    ev = ("e1", "The patient was prescribed 50mg of metoprolol on March 3, 2024.")
    v = _one("The patient received 50mg of metoprolol on March 3, 2024.", ev)
    assert v.attribution_verdict == V.fully_grounded
    assert v.confidence >= 0.9
    assert v.supporting_evidence_ids == ["e1"]
    assert not v.multi_source_flag and not v.unsupported_spans
    _check_excerpts(v, ev)


def test_worked_example_2_partially_grounded_with_exact_span():
    ev = ("e1", "The patient reported mild headache.")
    v = _one("The patient reported mild headache that resolved with acetaminophen.", ev)
    assert v.attribution_verdict == V.partially_grounded
    assert v.unsupported_spans == ["that resolved with acetaminophen"]
    _check_excerpts(v, ev)


def test_worked_example_3_contradicted_value():
    ev = ("e1", "Lab results showed potassium at 4.2 mmol/L.")
    v = _one("Lab results showed potassium at 3.1 mmol/L.", ev)
    assert v.attribution_verdict == V.contradicted
    assert v.contradicting_evidence_ids == ["e1"]
    assert any("potassium at 4.2 mmol/L" in x for x in v.contradicting_evidence_excerpts)
    assert v.confidence >= 0.8
    assert "'3.1 mmol/L' but the evidence says '4.2 mmol/L'" in v.provenance_notes
    _check_excerpts(v, ev)


def test_worked_example_4_time_gap_from_two_passages():
    a = ("A", "The defendant was seen at 8:15 PM.")
    b = ("B", "The incident occurred at 8:30 PM.")
    v = _one("The defendant was seen 15 minutes before the incident.", a, b)
    assert v.attribution_verdict == V.fully_grounded
    assert v.multi_source_flag
    assert set(v.supporting_evidence_ids) == {"A", "B"}
    assert "A" in v.provenance_notes and "B" in v.provenance_notes and "gap" in v.provenance_notes
    _check_excerpts(v, a, b)


def test_time_arithmetic_is_general_not_the_example():
    a = ("log1", "The first alarm sounded at 09:05.")
    b = ("log2", "Firefighters arrived at 10:35.")
    grounded = _one("Firefighters arrived 90 minutes after the first alarm.", a, b)
    assert grounded.attribution_verdict == V.fully_grounded and grounded.multi_source_flag
    wrong = _one("Firefighters arrived 45 minutes after the first alarm.", a, b)
    assert wrong.attribution_verdict != V.fully_grounded
    assert "45 minutes" in " ".join(wrong.unsupported_spans)


def test_date_gap_in_days():
    a = ("a", "The contract was signed on January 10, 2023.")
    b = ("b", "Delivery took place on January 24, 2023.")
    v = _one("Delivery took place two weeks after the contract was signed.", a, b)
    assert v.attribution_verdict == V.fully_grounded and v.multi_source_flag


def test_citation_markers_are_not_claims():
    ev = ("e1", "The patient was prescribed 50mg of metoprolol on March 3, 2024.")
    v = _one("The patient received 50mg of metoprolol on March 3, 2024 [1].", ev)
    assert v.attribution_verdict == V.fully_grounded
    assert v.sentence_text.endswith("[1].")


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The tablet contains 2.5 mg of the drug.", "Each tablet contains 5 mg of the drug."),
        ("The meeting was held on June 4, 2021.", "The meeting was held on June 9, 2021."),
        ("Revenue grew 12% in 2020.", "Revenue grew 8% in 2020."),
        ("The store opens at 9:00 AM.", "The store opens at 10:00 AM."),
        ("The company hired five new engineers.", "The company hired three new engineers."),
    ],
)
def test_a_different_value_of_the_same_attribute_is_contradicted(claim, evidence):
    v = _one(claim, ("d", evidence))
    assert v.attribution_verdict == V.contradicted
    assert v.contradicting_evidence_ids == ["d"]
    _check_excerpts(v, ("d", evidence))


def test_equal_values_in_other_notation_are_grounded():
    ev = ("d", "Sales reached $1,200,000 in fiscal 2022, up 15 percent.")
    v = _one("Sales reached $1.2 million in fiscal 2022, up 15%.", ev)
    assert v.attribution_verdict == V.fully_grounded


def test_flipped_negation_is_contradicted():
    ev = ("d", "The trial found that the vaccine was not effective against the new variant.")
    v = _one("The trial found that the vaccine was effective against the new variant.", ev)
    assert v.attribution_verdict == V.contradicted


def test_antonym_is_contradicted():
    ev = ("d", "Unemployment in the region increased sharply during the second quarter.")
    v = _one("Unemployment in the region decreased sharply during the second quarter.", ev)
    assert v.attribution_verdict == V.contradicted


def test_unrelated_sentence_is_ungrounded_with_low_grounded_probability():
    ev = ("d", "The bridge was completed in 1932 after six years of construction.")
    v = _one("Penguins mostly eat krill and small fish.", ev)
    assert v.attribution_verdict == V.ungrounded
    assert v.grounded_probability < 0.2
    assert v.unsupported_spans


def test_support_assembled_from_two_passages_is_multi_source_with_provenance():
    a = ("bio", "Marie Curie was born in Warsaw.")
    b = ("prize", "Curie won the Nobel Prize in Chemistry in 1911.")
    v = _one("Marie Curie, born in Warsaw, won the Nobel Prize in Chemistry in 1911.", a, b)
    assert v.attribution_verdict == V.fully_grounded
    assert v.multi_source_flag
    assert "bio" in v.provenance_notes and "prize" in v.provenance_notes


def test_one_verdict_per_sentence_in_order():
    ev = [EvidencePassage(doc_id="d", content="The river is 40 km long. It flows into the lake.")]
    sentences = ["The river is 40 km long.", "It flows into the sea.", "Unicorns live there."]
    out = HeuristicVerifier().verify(sentences, ev).verdicts
    assert [v.sentence_index for v in out] == [0, 1, 2]
    assert out[0].attribution_verdict == V.fully_grounded
    assert out[2].attribution_verdict == V.ungrounded


def test_unsupported_span_covers_the_whole_quantity():
    ev = ("d", "The fund charges an annual expense ratio of 0.45%.")
    v = _one("The fund's annual expense ratio is 0.03%.", ev)
    assert v.attribution_verdict == V.contradicted
    assert any(span.endswith("0.03%") for span in v.unsupported_spans)


def test_contradicting_excerpt_is_the_best_aligned_sentence():
    ev = (
        "d",
        "Revenue for the second quarter was $267.9 million, up 21% year over year. "
        "The board declared a quarterly dividend of $0.35 per share.",
    )
    v = _one("The board declared a quarterly dividend of $0.45 per share.", ev)
    assert v.attribution_verdict == V.contradicted
    assert v.contradicting_evidence_excerpts == ["The board declared a quarterly dividend of $0.35 per share."]


def test_a_different_name_in_the_same_place_is_contradicted():
    ev = ("d", "Disputes under the contract are governed by the laws of California.")
    v = _one("Disputes under the contract are governed by the laws of Texas.", ev)
    assert v.attribution_verdict == V.contradicted


def test_an_added_clause_is_partial_not_contradicted():
    ev = ("d", "The tenant paid a security deposit of $3,000 at signing.")
    v = _one("The tenant paid a security deposit of $3,000 at signing unless the landlord waives it in writing.", ev)
    assert v.attribution_verdict == V.partially_grounded
    assert v.unsupported_spans == ["unless the landlord waives it in writing"]


def test_verdict_confidence_and_grounded_probability_agree():
    ev = [EvidencePassage(doc_id="d", content="The river is 40 km long. It flows into the lake.")]
    sentences = ["The river is 40 km long.", "It flows into the sea.", "Dogs bark."]
    for v in HeuristicVerifier().verify(sentences, ev).verdicts:
        assert 0.0 <= v.confidence <= 1.0
        assert (v.grounded_probability >= 0.5) == (v.attribution_verdict == V.fully_grounded)


def test_no_content_words_and_empty_evidence_do_not_crash():
    assert HeuristicVerifier().verify(["Yes."], [EvidencePassage(doc_id="d", content="")]).verdicts[0].confidence <= 1.0
    assert HeuristicVerifier().verify([], [EvidencePassage(doc_id="d", content="x")]).verdicts == ()


def test_negation_in_other_words_is_not_a_flip():
    ev = ("d", "The company failed to meet its sales target in 2022.")
    v = _one("The company did not meet its sales target in 2022.", ev)
    assert v.attribution_verdict != V.contradicted
    ev2 = ("d", "Exercise is not only good for the heart but also for sleep.")
    v2 = _one("Exercise is good for the heart and for sleep.", ev2)
    assert v2.attribution_verdict != V.contradicted


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "The manager assigns suitable contracts to the workers.",
            "The manager assigns unsuitable contracts to the workers.",
        ),
        (
            "The committee considered the proposal legal under state law.",
            "The committee considered the proposal illegal under state law.",
        ),
    ],
)
def test_a_negating_prefix_is_an_antonym(claim, evidence):
    assert _one(claim, ("d", evidence)).attribution_verdict == V.contradicted


def test_a_huge_run_on_sentence_is_checked_in_part_and_not_grounded():
    ev = ("d", "The patient was prescribed 50mg of metoprolol on March 3, 2024.")
    v = _one("The patient received 50mg of metoprolol on March 3, 2024 and " * 20_000, ev)
    assert v.attribution_verdict != V.fully_grounded
    assert "characters were checked" in v.provenance_notes


def test_a_value_the_claim_states_elsewhere_is_not_a_conflict():
    ev = ("d", "Storey can win a 17th title when she rides in Saturday's road race.")
    v = _one("Storey, aged 37, aims to secure her 17th title in the road race.", ev)
    assert "'37' but" not in v.provenance_notes


def test_a_bare_number_conflicts_only_with_a_number_of_the_same_thing():
    ev = ("d", "Elizabeth Patterson, a three-term congresswoman, died on Saturday.")
    v = _one("Elizabeth Patterson died on Saturday at the age of 78.", ev)
    assert v.attribution_verdict != V.contradicted


def test_a_name_spelled_one_letter_differently_is_supported():
    ev = ("d", "Elizabeth Patterson, a congresswoman from Spartanburg, died on Saturday.")
    v = _one("Elizabeth Paterson, a congresswoman from Spartanburg, died on Saturday.", ev)
    assert v.attribution_verdict == V.fully_grounded


def test_million_and_billion_are_not_spelling_variants():
    ev = ("d", "The city has a million registered residents.")
    v = _one("The city has a billion registered residents.", ev)
    assert v.attribution_verdict != V.fully_grounded
