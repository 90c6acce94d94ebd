"""The heuristic on hand-written answers (`tests/data/paraphrase/answers.jsonl`): paraphrases are support,
a negation or a changed slot is not.

Floors, not exact figures: each one fails when the mechanism behind it (synonyms, numbers in words, negation
scope, closed classes of slots) breaks. The figures themselves are printed by `groundwatch calibrate --golden
tests/data/paraphrase/answers.jsonl`.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from transforms.evaluation.golden import load_golden
from transforms.verify.heuristic.verifier import HeuristicVerifier

SET = Path(__file__).resolve().parents[2] / "data" / "paraphrase" / "answers.jsonl"


@pytest.fixture(scope="module")
def outcomes():
    records, rejected = load_golden(SET)
    assert not rejected and len(records) >= 100
    kinds = {json.loads(line)["id"]: json.loads(line)["meta"]["kind"] for line in SET.read_text().splitlines()}
    verifier = HeuristicVerifier()
    return [
        (r, kinds[r.id], verifier.verify([r.answer], list(r.evidence)).verdicts[0].attribution_verdict.value)
        for r in records
    ]


def test_faithful_paraphrases_are_fully_grounded(outcomes):
    grounded = [(kind, pred) for r, kind, pred in outcomes if r.label == "fully_grounded"]
    assert len(grounded) >= 60
    assert sum(pred == "fully_grounded" for _, pred in grounded) >= 0.8 * len(grounded)
    assert sum(pred == "contradicted" for _, pred in grounded) <= 0.05 * len(grounded)


def test_numbers_in_words_match_digits(outcomes):
    numbers = [pred for r, kind, pred in outcomes if kind == "number_words"]
    assert Counter(numbers)["fully_grounded"] >= len(numbers) - 1


@pytest.mark.parametrize("kind", ["negation", "slot_amount", "slot_time", "slot_role"])
def test_a_flipped_negation_or_a_changed_slot_is_not_fully_grounded(outcomes, kind):
    preds = [pred for r, k, pred in outcomes if k == kind]
    assert preds and sum(pred != "fully_grounded" for pred in preds) >= 0.75 * len(preds)
