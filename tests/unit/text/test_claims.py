"""Telling claims from the sentences generators write around them: lead-ins, labels, headers, greetings."""

from __future__ import annotations

import pytest

from transforms.text.claims import ClaimKind, is_claim, non_claim_kind, plain_claim


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Summary:", ClaimKind.lead_in),
        ("Here is what I found:", ClaimKind.lead_in),
        ("Here's a quick summary of the chart.", ClaimKind.lead_in),
        ("Based on the provided documents:", ClaimKind.lead_in),
        ("**Key findings:**", ClaimKind.lead_in),
        ("Medication:", ClaimKind.lead_in),
        ("I don't know.", ClaimKind.abstention),
        ("I don\u2019t know.", ClaimKind.abstention),
        ("The documents do not say.", ClaimKind.abstention),
        ("The provided context doesn't mention the discharge date.", ClaimKind.abstention),
        ("I couldn't find that in the records.", ClaimKind.abstention),
        ("## Results", ClaimKind.formatting),
        ("---", ClaimKind.formatting),
        ("Hello!", ClaimKind.pleasantry),
        ("Hi Sam,", ClaimKind.pleasantry),
        ("Let me know if you need more.", ClaimKind.pleasantry),
        ("I hope this helps!", ClaimKind.pleasantry),
        ("Thanks for asking.", ClaimKind.pleasantry),
    ],
)
def test_non_claims_are_recognised_with_their_kind(sentence, kind):
    assert non_claim_kind(sentence) is kind
    assert not is_claim(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Potassium was 4.2 mmol/L on admission.",
        "**Medication:** metoprolol 50 mg twice daily.",
        "Summary: the clinic opens at 9 a.m.",
        "Hi-fi speakers ship in May.",
        "Thanks to the new policy, refunds take 5 days.",
        "The documents were signed on March 3, 2024.",
        "The answer key lists 12 questions.",
    ],
)
def test_claims_stay_claims(sentence):
    assert non_claim_kind(sentence) is None


def test_markdown_is_stripped_and_spans_map_back_to_the_original():
    sentence = "**Medication:** metoprolol *50 mg* twice `daily`"
    plain = plain_claim(sentence)
    assert plain.text == "Medication: metoprolol 50 mg twice daily"
    span = plain.original_span("50 mg twice daily")
    assert span == "50 mg* twice `daily" and span in sentence
    assert plain.original_span("Medication") == "Medication"


def test_a_leading_lead_in_is_not_verified():
    plain = plain_claim("Here is what I found: the clinic opens at 9.")
    assert plain.text == "the clinic opens at 9."
    assert plain.original_span("the clinic") == "the clinic"
