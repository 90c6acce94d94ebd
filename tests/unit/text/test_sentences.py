"""Sentence splitting: what must stay whole, what must be cut, and offsets that quote the text exactly."""

from __future__ import annotations

import pytest

from transforms.text.sentences import sentence_spans, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Potassium was 4.2 mmol/L. It was normal.", ["Potassium was 4.2 mmol/L.", "It was normal."]),
        ("Give 2.5 mg twice daily. Review in 3 days.", ["Give 2.5 mg twice daily.", "Review in 3 days."]),
        ("He was seen at 8:15 PM. The incident followed.", ["He was seen at 8:15 PM.", "The incident followed."]),
        ("Dr. Smith saw Mrs. Jones. She left.", ["Dr. Smith saw Mrs. Jones.", "She left."]),
        ("Use e.g. aspirin or i.e. a salicylate. Then rest.", ["Use e.g. aspirin or i.e. a salicylate.", "Then rest."]),
        ("J. K. Rowling wrote it. George W. Bush read it.", ["J. K. Rowling wrote it.", "George W. Bush read it."]),
        ("The U.S. Army moved. It rained.", ["The U.S. Army moved.", "It rained."]),
        (
            "See https://example.org/a.b?x=1.5 for details. Done.",
            ["See https://example.org/a.b?x=1.5 for details.", "Done."],
        ),
        ("It cost $1,200.50 in total. Paid.", ["It cost $1,200.50 in total.", "Paid."]),
        ("Fig. 2 shows it. No. 5 won.", ["Fig. 2 shows it.", "No. 5 won."]),
        ("The answer is no. We left.", ["The answer is no.", "We left."]),
    ],
)
def test_kept_intact(text, expected):
    assert split_sentences(text) == expected


def test_semicolons_between_independent_claims_are_boundaries():
    text = "The drug lowers blood pressure; it also causes dizziness in some patients."
    assert split_sentences(text) == ["The drug lowers blood pressure", "it also causes dizziness in some patients."]


def test_semicolons_in_short_lists_or_brackets_are_not():
    assert split_sentences("Offices: Paris; Rome; Berlin.") == ["Offices: Paris; Rome; Berlin."]
    one = "The panel (chair; deputy; two members) met and approved the plan."
    assert split_sentences(one) == [one]


def test_bullets_are_boundaries_and_their_markers_dropped():
    text = "Findings:\n- potassium was low\n* sodium was normal\n\u2022 glucose was high\n"
    text += "1. repeat the test\n2) call the GP"
    assert split_sentences(text) == [
        "Findings:",
        "potassium was low",
        "sodium was normal",
        "glucose was high",
        "repeat the test",
        "call the GP",
    ]


def test_citation_markers_stay_with_their_sentence():
    assert split_sentences("It resolved. [1] Then it came back [2]. Done [3][4].") == [
        "It resolved. [1]",
        "Then it came back [2].",
        "Done [3][4].",
    ]
    assert split_sentences("Dose was 50 mg [doc_alpha]. Next one.") == ["Dose was 50 mg [doc_alpha].", "Next one."]


def test_question_and_exclamation_marks_and_quotes():
    assert split_sentences('He said "stop." Then what? Nothing!') == ['He said "stop."', "Then what?", "Nothing!"]


def test_spans_are_exact_offsets():
    text = "  First one.  Second [1]; third clause here.\n- bullet item\n"
    for start, end in sentence_spans(text):
        assert text[start:end] == text[start:end].strip()
        assert text[start:end]
    assert [text[s:e] for s, e in sentence_spans(text)] == split_sentences(text)


def test_empty_and_blank_give_nothing():
    assert split_sentences("") == []
    assert split_sentences("  \n\n ") == []
    assert split_sentences("- \n*") == []


def test_marker_after_a_closing_quote_stays_with_its_sentence():
    text = 'The agreement says "A late payment incurs a penalty. [5]" Next one here.'
    assert split_sentences(text) == ['The agreement says "A late payment incurs a penalty. [5]"', "Next one here."]
