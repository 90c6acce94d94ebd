"""Slots of time written as frequencies, rates and amounts in words: a claim that keeps the evidence's frame but
puts another schedule, rate unit or counted amount in one slot is not fully grounded, and the same schedule or
amount in other words still is. Examples written for these tests, across domains."""

from __future__ import annotations

import pytest

from schemas import EvidencePassage
from transforms.text.quantities import extract_quantities
from transforms.verify.heuristic.verifier import HeuristicVerifier


def _verdict(claim: str, evidence: str) -> str:
    passages = [EvidencePassage(doc_id="d1", content=evidence)]
    return HeuristicVerifier().verify([claim], passages).verdicts[0].attribution_verdict.value


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        # a frequency in place of another, beside the unit it is built from ("monthly" is not "month")
        (
            "Stock is counted monthly for the first month after opening.",
            "Stock is counted weekly for the first month after opening.",
        ),
        ("The gym charges a monthly membership fee of $40.", "The gym charges an annual membership fee of $40."),
        # a rate per another time unit
        (
            "The gateway allows 20 logins per hour from one address.",
            "The gateway allows 20 logins per minute from one address.",
        ),
        # a counted amount in words, "one" included
        (
            "Tenants may terminate the lease within two years of signing.",
            "Tenants may terminate the lease within one year of signing.",
        ),
    ],
)
def test_another_value_in_a_time_slot_is_not_fully_grounded(claim, evidence):
    assert _verdict(claim, evidence) != "fully_grounded"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "Invoices are reviewed every week during the first quarter.",
            "Invoices are reviewed weekly during the first quarter.",
        ),
        ("The gym charges a yearly membership fee of $40.", "The gym charges an annual membership fee of $40."),
        (
            "Tenants may terminate the lease within 1 year of signing.",
            "Tenants may terminate the lease within one year of signing.",
        ),
    ],
)
def test_the_same_schedule_or_amount_in_other_words_is_fully_grounded(claim, evidence):
    assert _verdict(claim, evidence) == "fully_grounded"


def test_one_is_an_amount_only_with_a_unit():
    assert [q.kind for q in extract_quantities("The warranty lasts one year.")] == ["duration"]
    assert extract_quantities("One of the nurses signed the chart.") == ()


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Overtime is paid to salaried staff only.", "Overtime is paid to all staff."),  # narrowed
        ("Only the landlord may end the tenancy with notice.", "Either party may end the tenancy with notice."),
        ("The discount applies to all orders.", "The discount applies to online orders only."),  # widened
    ],
)
def test_a_changed_scope_is_not_fully_grounded(claim, evidence):
    assert _verdict(claim, evidence) != "fully_grounded"


def test_the_same_scope_in_another_place_is_fully_grounded():
    assert _verdict("The discount applies only to online orders.", "The discount applies to online orders only.") == (
        "fully_grounded"
    )


@pytest.mark.parametrize(
    ("words", "value", "unit"),
    [
        ("twenty-five cents", 0.25, "$"),
        ("forty two", 42.0, ""),
        ("ninety-nine percent", 99.0, "%"),
        ("40 pence", 0.4, "£"),
    ],
)
def test_compound_number_words_and_currency_hundredths_are_one_amount(words, value, unit):
    (quantity,) = extract_quantities(words)
    assert (quantity.value, quantity.unit) == (pytest.approx(value), unit)


def test_an_amount_in_cents_or_compound_words_matches_its_digits():
    evidence = "Members pay a late fee of $0.25 per day and may borrow 25 items at once."
    assert _verdict("Members pay a late fee of 25 cents per day.", evidence) == "fully_grounded"
    assert _verdict("Members may borrow twenty-five items at once.", evidence) == "fully_grounded"
    assert _verdict("Members may borrow twenty-four items at once.", evidence) != "fully_grounded"


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The auditors approved the annual budget in March.", "The board approved the annual budget in March."),
        ("Contractors must complete the security training.", "Employees must complete the security training."),
    ],
)
def test_another_role_in_the_same_slot_is_not_fully_grounded(claim, evidence):
    assert _verdict(claim, evidence) != "fully_grounded"
