"""The domain vocabulary of the synthetic traffic: fact templates, fillers, unsupported claims, tenants.

Each fact template draws concrete values and returns a `Fact`: how the evidence
states it, how a faithful answer restates it, and a contradicting restatement
(one number, date or name changed). `pipelines.traffic.synthetic` assembles responses from them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = ["DOMAINS", "Domain", "Fact"]

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]
_NAMES = ["Dr. Alvarez", "Dr. Chen", "Dr. Okafor", "Dr. Lindqvist", "Dr. Patel", "Dr. Moreau"]
_PEOPLE = ["Maria Keller", "Daniel Osei", "Priya Raman", "Tomas Novak", "Helen Park", "Samuel Reyes"]


@dataclass(frozen=True)
class Fact:
    """One fact: in the evidence, restated faithfully, and restated wrongly; and a question it answers."""

    evidence: str
    answer: str
    contradiction: str
    question: str = ""
    """What a user asks to be told this fact (`TOPIC_QUESTIONS`), in the words a retriever would match."""


def _date(rng: random.Random) -> tuple[str, str]:
    month, day, year = rng.choice(_MONTHS), rng.randint(1, 28), rng.choice([2023, 2024, 2025])
    other_day = day + rng.choice([-3, -2, 2, 5]) if day > 5 else day + 4
    return f"{month} {day}, {year}", f"{month} {other_day}, {year}"


def _other(rng: random.Random, value, choices):
    return rng.choice([c for c in choices if c != value])


def _drug(rng):
    drug, doses = rng.choice(
        [
            ("metoprolol", [25, 50, 100]),
            ("lisinopril", [5, 10, 20]),
            ("metformin", [500, 850, 1000]),
            ("atorvastatin", [10, 20, 40]),
            ("amoxicillin", [250, 500, 875]),
        ]
    )
    dose = rng.choice(doses)
    when, other_when = _date(rng)
    freq = rng.choice(["once daily", "twice daily"])
    return Fact(
        f"On {when}, the patient was started on {dose} mg of {drug} {freq}.",
        f"The patient was started on {dose} mg of {drug} {freq} on {when}.",
        f"The patient was started on {_other(rng, dose, doses)} mg of {drug} {freq} on {when}."
        if rng.random() < 0.7
        else f"The patient was started on {dose} mg of {drug} {freq} on {other_when}.",
    )


def _potassium(rng):
    k = round(rng.uniform(3.0, 5.2), 1)
    other = round(k + rng.choice([-0.9, -0.6, 0.7, 1.1]), 1)
    return Fact(
        f"Serum potassium was {k} mmol/L on the admission panel.",
        f"Lab results showed potassium at {k} mmol/L on admission.",
        f"Lab results showed potassium at {other} mmol/L on admission.",
    )


def _blood_pressure(rng):
    sys_, dia = rng.randint(110, 160), rng.randint(70, 100)
    return Fact(
        f"Blood pressure at discharge was {sys_}/{dia} mmHg.",
        f"Blood pressure at discharge was {sys_}/{dia} mmHg.",
        f"Blood pressure at discharge was {sys_ + rng.choice([-20, 15, 25])}/{dia} mmHg.",
    )


def _seen_by(rng):
    hour, minute = rng.randint(1, 11), rng.choice([0, 15, 30, 45])
    doctor = rng.choice(_NAMES)
    return Fact(
        f"The patient was examined by {doctor} at {hour}:{minute:02d} PM in the emergency department.",
        f"{doctor} examined the patient at {hour}:{minute:02d} PM in the emergency department.",
        f"{doctor} examined the patient at {hour % 11 + 1}:{minute:02d} PM in the emergency department.",
    )


def _allergy(rng):
    allergen = rng.choice(["penicillin", "sulfa drugs", "latex", "iodine contrast"])
    return Fact(
        f"The chart lists an allergy to {allergen}.",
        f"The patient has a documented allergy to {allergen}.",
        f"The patient has no documented allergy to {allergen}.",
    )


def _stay(rng):
    days = rng.randint(2, 9)
    return Fact(
        f"The patient was discharged after a hospital stay of {days} days.",
        f"The hospital stay lasted {days} days before discharge.",
        f"The hospital stay lasted {days + rng.choice([2, 3, 4])} days before discharge.",
    )


def _lease(rng):
    months = rng.choice([12, 18, 24, 36])
    when, other_when = _date(rng)
    return Fact(
        f"The lease term is {months} months, beginning on {when}.",
        f"The lease runs for {months} months starting {when}.",
        f"The lease runs for {_other(rng, months, [12, 18, 24, 36])} months starting {when}.",
    )


def _signed(rng):
    person = rng.choice(_PEOPLE)
    when, other_when = _date(rng)
    return Fact(
        f"The agreement was signed by {person} on {when}.",
        f"{person} signed the agreement on {when}.",
        f"{person} signed the agreement on {other_when}.",
    )


def _notice(rng):
    days = rng.choice([30, 60, 90])
    return Fact(
        f"Either party may terminate the agreement with {days} days of written notice.",
        f"Either party can terminate with {days} days of written notice.",
        f"Either party can terminate with {_other(rng, days, [30, 60, 90])} days of written notice.",
    )


def _late_fee(rng):
    pct = rng.choice([2, 3, 5, 8])
    return Fact(
        f"A late payment incurs a penalty of {pct} percent of the outstanding balance.",
        f"Late payments carry a penalty of {pct} percent of the outstanding balance.",
        f"Late payments carry a penalty of {_other(rng, pct, [2, 3, 5, 8])} percent of the outstanding balance.",
    )


def _venue(rng):
    place, other = rng.sample(["Delaware", "New York", "Ontario", "California", "Texas"], 2)
    return Fact(
        f"Disputes under the contract are governed by the laws of {place}.",
        f"The contract is governed by the laws of {place}.",
        f"The contract is governed by the laws of {other}.",
    )


def _deposit(rng):
    amount = rng.choice([1200, 1500, 2400, 3000])
    return Fact(
        f"The tenant paid a security deposit of ${amount:,} at signing.",
        f"A security deposit of ${amount:,} was paid at signing.",
        f"A security deposit of ${amount + 600:,} was paid at signing.",
    )


def _revenue(rng):
    amount, growth = round(rng.uniform(120, 900), 1), rng.randint(3, 24)
    quarter = rng.choice(["first", "second", "third", "fourth"])
    return Fact(
        f"Revenue for the {quarter} quarter was ${amount} million, up {growth}% year over year.",
        f"{quarter.capitalize()}-quarter revenue was ${amount} million, up {growth}% year over year.",
        f"{quarter.capitalize()}-quarter revenue was ${round(amount * 1.15, 1)} million, up {growth}% year over year.",
    )


def _margin(rng):
    pct, year = round(rng.uniform(8, 31), 1), rng.choice([2023, 2024])
    return Fact(
        f"Operating margin was {pct} percent in fiscal {year}.",
        f"The operating margin for fiscal {year} was {pct} percent.",
        f"The operating margin for fiscal {year} was {round(pct + 4.5, 1)} percent.",
    )


def _expense_ratio(rng):
    pct = rng.choice([0.03, 0.12, 0.45, 0.75])
    return Fact(
        f"The fund charges an annual expense ratio of {pct}%.",
        f"The fund's annual expense ratio is {pct}%.",
        f"The fund's annual expense ratio is {_other(rng, pct, [0.03, 0.12, 0.45, 0.75])}%.",
    )


def _cfo(rng):
    person, other = rng.sample(_PEOPLE, 2)
    when, _ = _date(rng)
    return Fact(
        f"{person} was appointed chief financial officer on {when}.",
        f"{person} became chief financial officer on {when}.",
        f"{other} became chief financial officer on {when}.",
    )


def _dividend(rng):
    cents = rng.choice([18, 24, 35, 52])
    return Fact(
        f"The board declared a quarterly dividend of ${cents / 100:.2f} per share.",
        f"The board declared a quarterly dividend of ${cents / 100:.2f} per share.",
        f"The board declared a quarterly dividend of ${(cents + 10) / 100:.2f} per share.",
    )


def _debt(rng):
    amount = rng.choice([250, 400, 750])
    return Fact(
        f"Long-term debt stood at ${amount} million at year end.",
        f"Long-term debt was ${amount} million at year end.",
        f"Long-term debt was ${amount * 2} million at year end.",
    )


@dataclass(frozen=True)
class Domain:
    """One domain's vocabulary and who sends its traffic."""

    name: str
    facts: tuple[Callable[[random.Random], Fact], ...]
    fillers: tuple[str, ...]
    additions: tuple[str, ...]
    unsupported_claims: tuple[str, ...]
    queries: tuple[str, ...]
    tenants: tuple[tuple[str, str], ...]
    quote_lead: str
    uri_prefix: str

    def draw_facts(self, rng: random.Random, n: int) -> list[Fact]:
        templates = rng.sample(self.facts, min(n, len(self.facts)))
        return [replace(t(rng), question=TOPIC_QUESTIONS[t]) for t in templates]

    def filler(self, rng: random.Random) -> str:
        return rng.choice(self.fillers)

    def addition(self, rng: random.Random) -> str:
        return rng.choice(self.additions)

    def unsupported(self, rng: random.Random) -> str:
        return rng.choice(self.unsupported_claims)

    def query(self, rng: random.Random) -> str:
        return rng.choice(self.queries)

    def tenant_and_risk(self, rng: random.Random) -> tuple[str, str]:
        tenant, risk = rng.choice(self.tenants)
        return tenant, risk if rng.random() < 0.8 else rng.choice(["low", "medium", "high"])


TOPIC_QUESTIONS: dict[Callable[[random.Random], Fact], str] = {
    _drug: "Which medication was the patient started on, and at what dose?",
    _potassium: "What was the serum potassium on the admission panel?",
    _blood_pressure: "What was the blood pressure at discharge?",
    _seen_by: "Who examined the patient in the emergency department?",
    _allergy: "Which allergy does the chart list?",
    _stay: "How long was the hospital stay before discharge?",
    _lease: "How long is the lease term?",
    _signed: "Who signed the agreement, and when?",
    _notice: "How much written notice does termination of the agreement need?",
    _late_fee: "What penalty does a late payment incur?",
    _venue: "Which laws govern disputes under the contract?",
    _deposit: "How much was the security deposit?",
    _revenue: "What was revenue for the quarter?",
    _margin: "What was the operating margin?",
    _expense_ratio: "What annual expense ratio does the fund charge?",
    _cfo: "Who was appointed chief financial officer?",
    _dividend: "What quarterly dividend did the board declare?",
    _debt: "How much long-term debt was there at year end?",
}
"""The question each fact template answers: scenario traffic asks it, so that its passages are about the query."""

DOMAINS = {
    d.name: d
    for d in [
        Domain(
            "clinical",
            (_drug, _potassium, _blood_pressure, _seen_by, _allergy, _stay),
            (
                "Vital signs were recorded every four hours.",
                "The note was reviewed by the attending physician.",
                "Nursing staff documented the medication administration record.",
                "Follow-up was arranged with primary care.",
            ),
            (
                "that resolved with acetaminophen",
                "after a cardiology consult",
                "to prevent recurrent atrial fibrillation",
                "because of worsening kidney function",
            ),
            (
                "The patient has a family history of early coronary disease.",
                "An MRI of the brain was scheduled for next week.",
                "The patient quit smoking ten years ago.",
                "Physical therapy was started on the second day.",
            ),
            (
                "What was the patient prescribed at admission?",
                "Summarize the discharge note.",
                "What were the key lab results?",
                "Which allergies are documented?",
            ),
            (("st-marys", "high"), ("northwind-health", "high"), ("carelink", "medium")),
            "The discharge summary states",
            "ehr://notes",
        ),
        Domain(
            "legal",
            (_lease, _signed, _notice, _late_fee, _venue, _deposit),
            (
                "This clause survives termination of the agreement.",
                "Headings are for convenience only.",
                "Notices must be delivered to the addresses listed in Schedule A.",
                "The parties acknowledge receipt of this document.",
            ),
            (
                "unless the landlord waives it in writing",
                "with automatic renewal for another term",
                "subject to approval by the county court",
                "including all legal fees",
            ),
            (
                "The tenant previously sued the landlord over the deposit.",
                "The agreement was drafted by outside counsel in Boston.",
                "Subletting is allowed without the landlord's consent.",
                "The contract was amended twice in the first year.",
            ),
            (
                "How long is the lease?",
                "Who signed the agreement and when?",
                "What are the termination terms?",
                "Which law governs disputes?",
            ),
            (("lexbridge", "medium"), ("civicdocs", "low")),
            "The agreement says",
            "dms://contracts",
        ),
        Domain(
            "financial",
            (_revenue, _margin, _expense_ratio, _cfo, _dividend, _debt),
            (
                "Figures are unaudited and subject to revision.",
                "The company reports in US dollars.",
                "Forward-looking statements involve risks and uncertainties.",
                "Segment results are presented in Note 4.",
            ),
            (
                "driven mainly by the cloud segment",
                "despite higher freight costs",
                "which beat analyst estimates",
                "after a one-time tax benefit",
            ),
            (
                "Analysts expect the company to double its market share next year.",
                "The stock rose 12% after the announcement.",
                "The company plans to acquire a competitor in Europe.",
                "Management expects margins to expand through 2027.",
            ),
            (
                "What was revenue last quarter?",
                "What is the fund's expense ratio?",
                "Who is the CFO?",
                "What dividend was declared?",
            ),
            (("ledgerline", "medium"), ("acme-capital", "high"), ("brightfund", "low")),
            "The filing states",
            "edgar://filings",
        ),
    ]
}
