"""Abstentions: sentences that decline to answer or say the documents do not tell, in many phrasings and
domains, told apart from claims that merely contain a negation (`transforms.text.nonclaim_words`)."""

from __future__ import annotations

import pytest

from transforms.text.claims import ClaimKind, non_claim_kind

ABSTAINING = [
    "I couldn't find that information in the documents.",
    "I could not find any information about the refund policy in the provided documents.",
    "The provided documents do not contain information about parental leave.",
    "Unfortunately, the documentation does not cover this version.",
    "I'm sorry, but I can't answer that based on the available information.",
    "The context does not specify the dosage for children.",
    "There is no mention of a carry-over limit in the policy.",
    "I don't have enough information to answer that.",
    "The retrieved passages don't say when the contract expires.",
    "I was unable to find details on the API rate limits.",
    "Sorry, the knowledge base does not include that.",
    "That information is not available in the provided sources.",
    "I cannot determine the filing deadline from the given context.",
    "The documents provided do not address whether the fee is refundable.",
    "Based on the documents, I cannot say whether the drug interacts with warfarin.",
    "The policy documents are silent on remote work stipends.",
    "Nothing in the provided materials mentions a grace period.",
    "I\u2019m not able to find that in the documents.",
    "Unfortunately I could not locate the termination clause in the provided text.",
    "The answer to this question is not in the documents.",
    "The manual does not say.",
    "This is not covered in the documentation.",
    "The handbook doesn't mention it.",
    "I'm afraid the search results do not indicate the release date.",
    "**Note:** the provided context doesn't state the patient's allergies.",
]

CLAIMS = [
    "The patient was not discharged.",
    "The policy does not cover dental implants.",
    "The warranty does not cover water damage.",
    "The plan does not include vision coverage.",
    "The contract does not specify a penalty for early termination.",
    "I cannot recommend exceeding 4 g of paracetamol per day.",
    "Unfortunately, the claim was denied.",
    "I am unable to process refunds after 30 days.",
    "Unused vacation days do not carry over to the next year.",
    "The API does not support batch requests.",
]


@pytest.mark.parametrize("sentence", ABSTAINING)
def test_an_abstention_is_recognised_in_many_phrasings(sentence):
    assert non_claim_kind(sentence) is ClaimKind.abstention


@pytest.mark.parametrize("sentence", CLAIMS)
def test_a_negated_claim_is_still_a_claim(sentence):
    assert non_claim_kind(sentence) is None
