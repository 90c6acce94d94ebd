"""The logistic calibration map of a verdict: its fit, its file, and that the figures reported are held out."""

import json
import math
import random
from dataclasses import dataclass

import pytest

from pipelines.cli import main as groundwatch
from transforms.evaluation.fit_calibration import (
    MAPS,
    cross_validate,
    fit_calibration,
    fit_isotonic,
    fit_logistic_map,
    fit_stage,
    stage_figures,
)
from transforms.evaluation.logistic import DEFAULT_L2, fit_logistic, fit_verdict_model
from transforms.evaluation.metrics import risk_coverage
from transforms.verify.calibration import (
    VERDICT_FEATURES,
    Calibration,
    StageCalibration,
    VerdictModel,
    verdict_features,
)

CLASSES = ("fully_grounded", "partially_grounded", "ungrounded", "contradicted")


def _verdicts(n: int, seed: int):
    """Verdict-like records: a class, a raw grounded score on the class's side of 0.5, and a label whose
    probability rises with the score and is lower for contradicted than for partially grounded verdicts."""
    rng = random.Random(seed)
    truth = VerdictModel(-0.4, (0.6, 0.25, -1.5, -1.0, 0.3))
    scores, classes, positive = [], [], []
    for _ in range(n):
        verdict = rng.choice(CLASSES)
        score = round(rng.uniform(0.5, 1.0) if verdict == "fully_grounded" else rng.uniform(0.0, 0.5), 4)
        scores.append(score)
        classes.append(verdict)
        positive.append(rng.random() < truth.probability(score, verdict))
    return scores, classes, positive, truth


def test_the_logistic_fit_is_scikit_learns_ridge_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    scores, classes, positive, _ = _verdicts(400, seed=1)
    rows = [verdict_features(s, v) for s, v in zip(scores, classes, strict=True)]
    bias, weights = fit_logistic(rows, positive, l2=DEFAULT_L2)
    k = len(rows[0])
    mean = [sum(r[j] for r in rows) / len(rows) for j in range(k)]
    sd = [math.sqrt(sum((r[j] - mean[j]) ** 2 for r in rows) / len(rows)) for j in range(k)]
    z = [[(r[j] - mean[j]) / sd[j] for j in range(k)] for r in rows]
    sk = LogisticRegression(C=1 / DEFAULT_L2, tol=1e-10, max_iter=10_000).fit(z, positive)
    assert weights == pytest.approx([w / s for w, s in zip(sk.coef_[0], sd, strict=True)], abs=1e-3)
    sk_bias = sk.intercept_[0] - sum(w / s * m for w, s, m in zip(sk.coef_[0], sd, mean, strict=True))
    assert bias == pytest.approx(sk_bias, abs=1e-2)  # only the faint bias penalty differs


def test_the_verdict_model_recovers_the_curve_that_made_the_labels():
    scores, classes, positive, truth = _verdicts(4000, seed=2)
    model = fit_verdict_model(scores, classes, positive)
    for verdict in CLASSES:
        for score in (0.55, 0.8, 0.99) if verdict == "fully_grounded" else (0.01, 0.2, 0.45):
            assert model.probability(score, verdict) == pytest.approx(truth.probability(score, verdict), abs=0.06)


def test_a_falling_slope_is_held_at_zero_so_the_map_stays_monotone():
    rng = random.Random(3)
    scores = [round(rng.uniform(0, 0.5), 4) for _ in range(300)]
    classes = ["ungrounded"] * 300
    positive = [rng.random() < 0.8 - s for s in scores]  # here a higher score means less often grounded
    model = fit_verdict_model(scores, classes, positive)
    assert model.weights[1] == 0.0
    assert fit_logistic([verdict_features(s, v) for s, v in zip(scores, classes, strict=True)], positive)[1][1] < 0
    with pytest.raises(ValueError, match="monotone"):
        VerdictModel(0.0, (0.1, -0.1, 0.0, 0.0, 0.0))


def test_the_smooth_map_breaks_the_ties_of_the_isotonic_one():
    scores, classes, positive, _ = _verdicts(300, seed=4)
    iso = fit_isotonic(scores, classes, positive)
    smooth = fit_logistic_map(scores, classes, positive)
    distinct = {(s, v) for s, v in zip(scores, classes, strict=True)}
    assert len({iso.probability_of(s, v) for s, v in distinct}) < len(distinct) / 3  # flat steps
    assert len({smooth.probability_of(s, v) for s, v in distinct}) == len(distinct)
    assert (smooth.knots_x, smooth.knots_y) == (iso.knots_x, iso.knots_y)  # kept for score-only callers
    with pytest.raises(ValueError, match="needs each record's verdict"):
        fit_logistic_map(scores, None, positive)
    # Scores have 4 decimals: a saturated 0 and the smallest score above it are different inputs.
    assert verdict_features(0.0, "ungrounded") != verdict_features(0.0001, "ungrounded")
    assert verdict_features(1.0, "fully_grounded") != verdict_features(0.9999, "fully_grounded")


def test_a_calibration_file_with_a_verdict_model_round_trips(tmp_path):
    scores, classes, positive, _ = _verdicts(200, seed=5)
    groups = [f"g{i}" for i in range(200)]
    stage, _ = fit_stage(scores, positive, groups, target=0.8, folds=5, verdicts=classes, fit=MAPS["logistic"])
    path = tmp_path / "cal.json"
    digest = Calibration({"heuristic": stage}, 0.8, {"records": 200}).save(str(path))
    loaded = Calibration.load(str(path))
    assert loaded.digest == digest and loaded.stage("heuristic") == stage
    again = loaded.stage("heuristic")
    assert [again.probability_of(s, v) for s, v in zip(scores, classes, strict=True)] == [
        stage.model.probability(s, v) for s, v in zip(scores, classes, strict=True)
    ]
    data = json.loads(path.read_text())
    assert set(data["stages"]["heuristic"]["model"]["weights"]) == set(VERDICT_FEATURES)
    del data["stages"]["heuristic"]["model"]["weights"]["ungrounded"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="is invalid: a verdict model is logistic over"):
        Calibration.load(str(path))


@dataclass(frozen=True)
class _Memoriser:
    """A "map" that remembers each training record's label by its score and knows nothing else (0.5)."""

    table: dict
    escalate: tuple[float, float] | None = None

    def probability_of(self, score: float, verdict: str) -> float:
        return self.table.get(score, 0.5)

    def escalates(self, probability: float) -> bool:
        return self.escalate is not None and self.escalate[0] <= probability <= self.escalate[1]


def _memorise(scores, verdicts, positive):
    return _Memoriser({s: 1.0 if y else 0.0 for s, y in zip(scores, positive, strict=True)})


def test_the_reported_figures_are_held_out_a_memoriser_is_perfect_only_in_sample():
    rng = random.Random(6)
    scores = [i / 1000 for i in rng.sample(range(1000), 400)]  # every score unique
    positive = [rng.random() < 0.5 for _ in scores]  # labels owe nothing to the score
    groups = [f"g{i // 2}" for i in range(400)]
    in_sample = [_memorise(scores, None, positive).probability_of(s, "") for s in scores]
    assert all(r["binary_accuracy"] == 1.0 for r in risk_coverage(positive, in_sample))
    cv = cross_validate(scores, positive, groups, target=0.9, folds=5, fit=_memorise)
    assert set(cv.probability) == {0.5}  # no held-out record was seen by the map that scored it
    figures = stage_figures(scores, positive, ["S"] * 400, cv)
    top = {r["coverage"]: r["binary_accuracy"] for r in figures["overall"]["risk_coverage_calibrated"]}
    assert top[0.5] < 0.65 and top[1.0] == pytest.approx(sum(positive) / 400)


def test_fit_calibration_reports_the_held_out_risk_coverage_of_the_logistic_map():
    scores, classes, positive, _ = _verdicts(500, seed=7)
    groups = [f"g{i // 3}" for i in range(500)]
    sources = ["A" if i % 2 else "B" for i in range(500)]
    kw = {"stages": ("heuristic",), "target": 0.85, "folds": 5, "fitted_on": {}}
    calibration, report = fit_calibration(
        {"heuristic": scores}, positive, sources, groups, verdicts={"heuristic": classes}, map_kind="logistic", **kw
    )
    info = calibration.fitted_on["cross_validated"]["heuristic"]
    figures = report["heuristic"]["figures"]
    assert report["heuristic"]["map"] == "logistic" and calibration.stage("heuristic").model is not None
    assert info["accuracy_top_50"] == figures["overall"]["risk_coverage_calibrated"][4]["binary_accuracy"]
    assert set(figures["per_source"]) == {"A", "B"}
    with pytest.raises(ValueError, match="unknown calibration map"):
        fit_calibration({"heuristic": scores}, positive, sources, groups, map_kind="spline", **kw)


def _golden_line(i: int, rng: random.Random) -> str:
    year, cost = 1900 + i, 10 + i
    passage = f"The bridge over the river Nar{i} opened in {year} and cost {cost} million dollars to build."
    kind = rng.choice(CLASSES)
    answer = {
        "fully_grounded": f"The bridge over the river Nar{i} opened in {year}.",
        "contradicted": f"The bridge over the river Nar{i} opened in {year + 7}.",
        "ungrounded": f"The mayor of Lisbon{i} praised the new tram line on Sunday.",
        "partially_grounded": f"The bridge over the river Nar{i} opened in {year} after a long strike by painters.",
    }[kind]
    record = {
        "id": f"r{i}",
        "source_dataset": "Bridges" if i % 2 else "Trams",
        "answer": answer,
        "evidence": [{"doc_id": f"d{i}", "content": passage}],
        "label": kind,
    }
    return json.dumps(record)


def test_calibrate_fits_the_logistic_map_on_the_real_heuristic_and_prints_and_reports_it(tmp_path, capsys):
    rng = random.Random(8)
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(_golden_line(i, rng) for i in range(60)) + "\n")
    out, report = tmp_path / "cal.json", tmp_path / "report"
    args = ["calibrate", "--golden", str(golden), "--fit", str(out), "--report", str(report), "--bootstrap", "0"]
    assert groundwatch(args) == 0
    printed = capsys.readouterr().out
    assert "CALIBRATION heuristic: logistic map, 5-fold CV" in printed
    assert "risk-coverage, binary accuracy of the most confident share, by max(p, 1 - p)" in printed
    stage = Calibration.load(str(out)).stage("heuristic")
    assert stage.model is not None and stage.model.weights[0] >= 0
    text = (report / "report.md").read_text()
    assert "Logistic map of the verdict" in text and "| Bridges |" in text and "| Trams |" in text
    assert (report / "risk_coverage_heuristic.png").read_bytes()[:4] == b"\x89PNG"
    isotonic = tmp_path / "isotonic.json"
    assert groundwatch(["calibrate", "--golden", str(golden), "--fit", str(isotonic), "--map", "isotonic"]) == 0
    plain = Calibration.load(str(isotonic)).stage("heuristic")
    assert isinstance(plain, StageCalibration) and plain.model is None
