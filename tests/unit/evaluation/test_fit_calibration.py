"""Fitting a calibration: the isotonic map, folds grouped by document, the escalation band, risk-coverage."""

import random
from types import SimpleNamespace

import pytest
from sklearn.isotonic import IsotonicRegression

from schemas import EvidencePassage
from transforms.evaluation.fit_calibration import (
    choose_band,
    cross_validate,
    document_groups,
    fit_stage,
    grouped_folds,
    isotonic_fit,
    stage_figures,
)
from transforms.evaluation.metrics import risk_coverage
from transforms.verify.calibration import StageCalibration


def test_isotonic_fit_pools_adjacent_violators_exactly():
    # 0 | 1 0 -> 0.5 | 1 1 0 -> 2/3: three blocks, flat inside, linear between.
    knots = isotonic_fit([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 1, 0, 1, 1, 0])
    assert knots == ((0.1, 0.2, 0.3, 0.4, 0.6), (0.0, 0.5, 0.5, 0.666667, 0.666667))
    stage = StageCalibration(*knots)
    assert stage.probability(0.25) == 0.5 and stage.probability(0.35) == pytest.approx((0.5 + 0.666667) / 2)
    assert stage.probability(0.0) == 0.0 and stage.probability(1.0) == 0.666667


def test_isotonic_fit_is_monotone_and_matches_scikit_learn_with_ties():
    rng = random.Random(7)
    xs = [round(rng.random(), 2) for _ in range(300)]  # many equal scores, as the heuristic gives
    ys = [float(rng.random() < x) for x in xs]
    knots_x, knots_y = isotonic_fit(xs, ys)
    assert list(knots_y) == sorted(knots_y) and list(knots_x) == sorted(knots_x)
    stage = StageCalibration(knots_x, knots_y)
    expected = IsotonicRegression(out_of_bounds="clip").fit(xs, ys).predict(xs)
    assert [stage.probability(x) for x in xs] == pytest.approx(list(expected), abs=1e-6)


def _record(rid, *passages):
    return SimpleNamespace(id=rid, evidence=[EvidencePassage(doc_id=str(i), content=p) for i, p in enumerate(passages)])


def test_records_sharing_a_passage_are_one_group_transitively():
    records = [
        _record("a", "Passage one.", "Passage two."),
        _record("b", "Passage  two.", "Passage three."),  # shares two (up to whitespace) with a
        _record("c", "Passage three."),  # shares three with b, so with a
        _record("d", "Passage four."),
        _record("e"),  # no evidence: a group of its own
    ]
    assert document_groups(records) == ["a", "a", "a", "d", "e"]


def test_grouped_folds_never_split_a_group_and_stay_even():
    rng = random.Random(3)
    groups = [f"g{rng.randrange(60)}" for _ in range(400)]
    folds = grouped_folds(groups, 5)
    fold_of = {}
    for g, f in zip(groups, folds, strict=True):
        assert fold_of.setdefault(g, f) == f
    sizes = [folds.count(f) for f in range(5)]
    assert max(sizes) - min(sizes) <= max(groups.count(g) for g in set(groups))
    assert folds == grouped_folds(groups, 5)  # deterministic
    with pytest.raises(ValueError, match="3 document groups cannot fill 5 folds"):
        grouped_folds(["a", "b", "c"], 5)


def test_cross_validation_holds_out_whole_groups():
    rng = random.Random(5)
    groups = [f"g{i // 3}" for i in range(150)]
    scores = [rng.random() for _ in groups]
    positive = [rng.random() < s for s in scores]
    cv = cross_validate(scores, positive, groups, target=0.9, folds=5)
    assert cv.folds == 5 and len(cv.bands) == 5
    for g in set(groups):
        assert len({cv.fold[i] for i in range(150) if groups[i] == g}) == 1
    # A held-out probability comes from a map fitted without the record: change its label, it stays.
    flipped = list(positive)
    flipped[0] = not flipped[0]
    assert cross_validate(scores, flipped, groups, target=0.9, folds=5).probability[0] == cv.probability[0]
    figures = stage_figures(scores, positive, ["S"] * 150, cv)
    assert figures["overall"]["n"] == 150 and set(figures["per_source"]) == {"S"}
    assert figures["overall"]["escalated_share"] == sum(cv.escalated) / 150


def test_the_band_escalates_the_fewest_sentences_that_reach_the_target():
    p = [0.1, 0.2, 0.45, 0.5, 0.6, 0.9, 0.95]
    truth = [False, False, True, False, False, True, True]  # 0.45, 0.5 and 0.6 are called wrongly
    assert choose_band(p, truth, 0.5) is None  # 4/7 already right
    # 1.0: all three wrong ones go; edges midway to the neighbours decided.
    assert choose_band(p, truth, 1.0) == (0.325, 0.75)
    # 0.7: escalating two leaves 4/5; of the two bands that do, the narrower one.
    assert choose_band(p, truth, 0.7) == (0.325, 0.55)
    assert choose_band([0.2, 0.8], [True, False], 0.9) == (0.0, 1.0)  # nothing reaches it: escalate all


def test_fit_stage_maps_by_all_records_and_bands_by_held_out_ones():
    rng = random.Random(11)
    groups = [f"g{i // 2}" for i in range(200)]
    scores = [rng.random() for _ in groups]
    positive = [rng.random() < s for s in scores]
    stage, held_out = fit_stage(scores, positive, groups, target=0.9, folds=5)
    assert (stage.knots_x, stage.knots_y) == isotonic_fit(scores, [float(y) for y in positive])
    assert stage.escalate == choose_band(held_out, positive, 0.9)


def test_risk_coverage_of_a_hand_made_case():
    # By |p - 0.5|: 0.95 (right), 0.1 (right), 0.8 (wrong), 0.4 (wrong), 0.55 (wrong).
    scores = [0.95, 0.1, 0.8, 0.4, 0.55]
    truth = [True, False, False, True, False]
    rows = risk_coverage(truth, scores, coverages=(0.2, 0.4, 0.6, 0.8, 1.0))
    assert [r["count"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["binary_accuracy"] for r in rows] == [1.0, 1.0, 2 / 3, 0.5, 0.4]
    assert rows[2]["balanced_accuracy"] == pytest.approx((1.0 + 0.5) / 2)
    assert rows[4]["balanced_accuracy"] == pytest.approx((0.5 + 1 / 3) / 2)
    assert rows[0]["min_confidence"] == pytest.approx(0.95) and rows[4]["min_confidence"] == pytest.approx(0.55)
    # Equal scores: the tiebreak decides which one counts as more confident.
    tied = risk_coverage([False, True], [0.2, 0.2], coverages=(0.5,), tiebreak=[0.1, 0.9])
    assert tied[0]["binary_accuracy"] == 0.0  # the second (a grounded one, called not) comes first
