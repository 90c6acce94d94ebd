"""Calibration metrics against values computed by hand, and `groundwatch calibrate` end to end.

The fixture `tests/data/calibration_golden.jsonl` (written for these tests) has
8 valid records and 2 bad lines. `TABLE` gives, for each record, the verdict a
fixed-answer verifier returns, so every figure below can be checked on paper:

    #  source gold  verifier  confidence  grounded score
    1  A      FG    FG        0.90        0.90
    2  A      FG    FG        0.60        0.60
    3  A      FG    PG        0.70        0.30
    4  A      PG    PG        0.80        0.20   (human span "in 2019", verifier span "approved in 2019")
    5  B      PG    FG        0.55        0.55
    6  B      UG    UG        0.90        0.10
    7  B      CT    UG        0.60        0.40   (acceptable: CT or UG)
    8  B      CT    CT        0.95        0.05
"""

import json
from pathlib import Path

import pytest
from sklearn.metrics import balanced_accuracy_score, cohen_kappa_score, f1_score, roc_auc_score

from pipelines.cli import main as groundwatch
from schemas import SentenceVerdict, grounded_probability
from transforms.evaluation.golden import load_golden
from transforms.evaluation.metrics import (
    SENTENCE_LABELS,
    Scored,
    bootstrap_intervals,
    classification_metrics,
    recommend_threshold,
    span_token_f1,
    threshold_sweep,
)
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.registry import register_verifier

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "calibration_golden.jsonl"
FG, PG, UG, CT = SENTENCE_LABELS

ROWS = [
    ("A", FG, FG, 0.90),
    ("A", FG, FG, 0.60),
    ("A", FG, PG, 0.70),
    ("A", PG, PG, 0.80),
    ("B", PG, FG, 0.55),
    ("B", UG, UG, 0.90),
    ("B", CT, UG, 0.60),
    ("B", CT, CT, 0.95),
]
ITEMS = [
    Scored(
        gold=gold,
        predicted=pred,
        acceptable=(CT, UG) if i == 6 else (gold,),
        score=grounded_probability(pred, conf),
        confidence=conf,
        source=src,
    )
    for i, (src, gold, pred, conf) in enumerate(ROWS)
]


def test_sentence_metrics_match_hand_computation():
    m = classification_metrics(ITEMS, SENTENCE_LABELS, positive=FG)
    assert m["accuracy"] == 5 / 8
    assert m["confusion_matrix"] == [[2, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]
    # F1 per class: FG 2/3, PG 1/2, UG 2/3 (P 1/2, R 1), CT 2/3 (P 1, R 1/2).
    assert m["macro_f1"] == pytest.approx((2 / 3 + 1 / 2 + 2 / 3 + 2 / 3) / 4)
    assert m["compatible_accuracy"] == 6 / 8
    # Fully grounded recall 2/3, the rest 4/5.
    assert m["binary_balanced_accuracy"] == pytest.approx((2 / 3 + 4 / 5) / 2)
    # p_o = 40/64, p_e = (3*3 + 2*2 + 1*2 + 2*1)/64 = 17/64.
    assert m["cohen_kappa"] == pytest.approx(23 / 47)
    # Positives score 0.9, 0.6, 0.3; they beat 5 + 5 + 3 of the 15 positive-negative pairs.
    assert m["roc_auc"] == pytest.approx(13 / 15)
    # One item per bin, so ECE is the mean |score - truth|.
    assert m["expected_calibration_error"] == pytest.approx((0.1 + 0.4 + 0.7 + 0.2 + 0.55 + 0.1 + 0.4 + 0.05) / 8)
    assert m["per_class"][CT]["recall"] == 0.5
    # Compatible recall: the contradicted item predicted ungrounded is allowed by its annotation (CT or UG).
    assert m["compatible_recall"] == {FG: 2 / 3, PG: 1 / 2, UG: 1.0, CT: 1.0}


def test_metrics_agree_with_scikit_learn():
    gold, pred = [it.gold for it in ITEMS], [it.predicted for it in ITEMS]
    m = classification_metrics(ITEMS, SENTENCE_LABELS, positive=FG)
    assert m["macro_f1"] == pytest.approx(f1_score(gold, pred, average="macro"))
    assert m["cohen_kappa"] == pytest.approx(cohen_kappa_score(gold, pred))
    assert m["roc_auc"] == pytest.approx(roc_auc_score([g == FG for g in gold], [it.score for it in ITEMS]))
    assert m["binary_balanced_accuracy"] == pytest.approx(
        balanced_accuracy_score([g == FG for g in gold], [p == FG for p in pred])
    )


def test_undefined_metrics_are_none_not_errors():
    only_grounded = [Scored(gold=FG, predicted=FG, acceptable=(FG,), score=0.9, confidence=0.9)]
    m = classification_metrics(only_grounded, SENTENCE_LABELS, positive=FG)
    assert m["roc_auc"] is None and m["cohen_kappa"] is None and m["binary_balanced_accuracy"] == 1.0
    assert classification_metrics([], SENTENCE_LABELS, positive=FG)["accuracy"] is None


def test_span_token_f1_counts_tokens_of_the_answer():
    text = "The drug was approved in 2019 by the FDA."
    assert span_token_f1(text, ["in 2019"], ["approved in 2019"]) == (2, 3, 2)
    assert span_token_f1(text, ["IN 2019"], []) == (0, 0, 2)


def test_threshold_sweep_follows_the_pipeline_flag_rule():
    (at_07,) = threshold_sweep(ITEMS, thresholds=[0.7])
    # Flagged: #2 (0.60 < 0.7), #5 (0.55), #6 and #7 (ungrounded), #8 (contradicted); #2 is the false alarm.
    assert (at_07.flagged, at_07.precision, at_07.recall) == (5, 4 / 5, 4 / 5)
    points = threshold_sweep(ITEMS)
    best_precision = recommend_threshold(points, target_precision=1.0)
    # Thresholds 0.56..0.60 flag #5-#8 only: precision 1, recall 4/5; the lowest of them is recommended.
    assert (best_precision.threshold, best_precision.recall) == (0.56, 4 / 5)
    full_recall = recommend_threshold(points, target_recall=1.0)
    # Catching #4 (fully trusted partial at 0.80) needs a threshold above 0.80, flagging 7 of 8.
    assert (full_recall.threshold, full_recall.flagged, full_recall.precision) == (0.81, 7, 5 / 7)
    assert recommend_threshold(points[:1], target_recall=1.0) is None
    with pytest.raises(ValueError):
        recommend_threshold(points)


def test_load_golden_reports_bad_lines_with_their_numbers():
    records, rejected = load_golden(FIXTURE)
    assert [r.id for r in records] == [f"r{i}" for i in range(1, 9)]
    assert [line for line, _ in rejected] == [5, 6]
    assert "label" in rejected[0][1] and "JSON" in rejected[1][1]


TABLE = {
    "Aspirin was first synthesised in 1897.": (FG, 0.90, []),
    "The bridge is 1,280 metres long.": (FG, 0.60, []),
    "The museum opens at 9 am on weekdays.": (PG, 0.70, []),
    "The drug was approved in 2019 by the FDA.": (PG, 0.80, ["approved in 2019"]),
    "The festival drew 40,000 visitors and sold out.": (FG, 0.55, []),
    "The river freezes every winter.": (UG, 0.90, []),
    "The tower was built in 1850.": (UG, 0.60, []),
    "The trial enrolled 300 patients.": (CT, 0.95, []),
}
# Citation checks of record 1 see one passage each: d1 supports (0.8), d2 is judged partial (0.6) but is unrelated.
CITED = {"d1": (FG, 0.80), "d2": (PG, 0.60)}


class FixedAnswers(Verifier):
    """Answers from the tables above: a verifier whose output is known, so the figures are known."""

    name = "fixed-answers"
    version = "test"

    def verify(self, sentences, evidence):
        (sentence,) = sentences
        kind, confidence, spans = TABLE[sentence]
        if len(evidence) == 1 and evidence[0].doc_id in CITED and sentence.startswith("Aspirin"):
            kind, confidence = CITED[evidence[0].doc_id]
        verdict = SentenceVerdict(
            sentence_index=0,
            sentence_text=sentence,
            attribution_verdict=kind,
            confidence=confidence,
            unsupported_spans=spans,
        )
        return VerificationResult.decided(self.name, [verdict])


def test_calibrate_command_prints_and_writes_the_hand_computed_figures(tmp_path, capsys):
    register_verifier("fixed-answers", FixedAnswers)
    report = tmp_path / "report"
    code = groundwatch(["calibrate", "--golden", str(FIXTURE), "--verifier", "fixed-answers", "--report", str(report)])
    assert code == 0
    out = capsys.readouterr()
    assert "8 records (2 rejected lines)" in out.out
    assert ":5 skipped" in out.err and ":6 skipped" in out.err

    payload = json.loads((report / "metrics.json").read_text())
    overall = payload["summary"]["sentences"]["overall"]
    assert overall["accuracy"] == 5 / 8 and overall["roc_auc"] == pytest.approx(13 / 15)
    assert overall["spans"]["token_f1"] == pytest.approx(0.8)  # P 2/3, R 1
    per_source = payload["summary"]["sentences"]["per_source"]
    assert per_source["A"]["accuracy"] == 3 / 4 and per_source["B"]["accuracy"] == 2 / 4
    citations = payload["summary"]["citations"]["overall"]
    assert (citations["n"], citations["accuracy"], citations["roc_auc"]) == (2, 0.5, 1.0)
    assert payload["threshold"]["in_use"]["precision"] == 4 / 5
    # Default target: flag recall 0.8. Source A's one bad item (#4, partial at 0.80) needs 0.81 and flags
    # #2-#4; source B's four bad items need #5 (0.55) flagged, at 0.56.
    per_source = payload["threshold"]["recommended_per_source"]
    assert (per_source["A"]["threshold"], per_source["A"]["flagged"], per_source["A"]["precision"]) == (0.81, 3, 1 / 3)
    assert (per_source["B"]["threshold"], per_source["B"]["precision"], per_source["B"]["recall"]) == (0.56, 1.0, 1.0)

    text = (report / "report.md").read_text()
    assert "95% bootstrap intervals" in text
    assert "| overall | 8 | 0.625 |" in text and "![roc](roc.png)" in text and "line 5:" in text
    for png in ("reliability.png", "roc.png"):
        assert (report / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_calibrate_gates_on_balanced_accuracy_and_rejects_bad_usage(tmp_path):
    register_verifier("fixed-answers", FixedAnswers)
    args = ["calibrate", "--golden", str(FIXTURE), "--verifier", "fixed-answers", "--no-citations"]
    assert groundwatch(args + ["--min-balanced-accuracy", "0.7"]) == 0  # 0.733
    assert groundwatch(args + ["--min-balanced-accuracy", "0.75"]) == 1
    assert groundwatch(args + ["--target-recall", "1.5"]) == 2
    assert groundwatch(["calibrate", "--golden", str(tmp_path / "missing.jsonl")]) == 2
    assert groundwatch(["calibrate", "--golden", str(FIXTURE), "--verifier", "no-such-verifier"]) == 2


def test_bootstrap_intervals_are_reproducible_and_degenerate_when_every_item_agrees():
    first = bootstrap_intervals(ITEMS, positive=FG, resamples=300, seed=7)
    assert first == bootstrap_intervals(ITEMS, positive=FG, resamples=300, seed=7)
    lo, hi = first["accuracy"]
    assert 0.0 <= lo <= 5 / 8 <= hi <= 1.0
    perfect = [Scored(gold=FG, predicted=FG, score=0.9), Scored(gold=UG, predicted=UG, score=0.1)] * 5
    assert bootstrap_intervals(perfect, positive=FG, resamples=50)["accuracy"] == (1.0, 1.0)
    assert bootstrap_intervals([], positive=FG)["roc_auc"] is None


def test_calibrate_runs_the_real_heuristic_and_its_figures_agree_with_its_confusion_matrix(tmp_path, capsys):
    report = tmp_path / "heuristic"
    assert groundwatch(["calibrate", "--golden", str(FIXTURE), "--report", str(report), "--bootstrap", "0"]) == 0
    overall = json.loads((report / "metrics.json").read_text())["summary"]["sentences"]["overall"]
    matrix = overall["confusion_matrix"]
    assert sum(map(sum, matrix)) == 8
    assert overall["accuracy"] == pytest.approx(sum(matrix[i][i] for i in range(4)) / 8)
    assert "heuristic" in capsys.readouterr().out


def test_minimal_records_of_your_own_traffic_are_enough(tmp_path):
    own = tmp_path / "labeled.jsonl"
    own.write_text(
        json.dumps(
            {
                "answer": "The refund window is 30 days.",
                "evidence": [{"doc_id": "policy", "content": "Refunds are accepted within 30 days."}],
                "label": "fully_grounded",
            }
        )
        + "\n"
    )
    (record,), rejected = load_golden(own)
    assert rejected == [] and (record.source, record.acceptable, record.id) == ("unknown", (FG,), "line-1")
    assert groundwatch(["calibrate", "--golden", str(own), "--bootstrap", "0"]) == 0


@pytest.mark.server
def test_calibrate_measures_the_llm_judge_through_a_real_http_endpoint(tmp_path, monkeypatch):
    from tests.support.openai_server import OpenAIServer

    monkeypatch.setenv("GROUNDWATCH_JUDGE_API_KEY", "test-key")
    report = tmp_path / "judge"
    with OpenAIServer() as server:
        code = groundwatch(
            ["calibrate", "--golden", str(FIXTURE), "--verifier", "openai", "--judge-base-url", server.base_url]
            + ["--judge-model", "fixture-judge", "--report", str(report), "--bootstrap", "0", "--no-citations"]
        )
        asked = len(server.requests)
    assert code == 0
    assert asked >= 8  # every record was sent to the judge (each is verified on its own)
    payload = json.loads((report / "metrics.json").read_text())
    assert payload["header"]["verifier"] == "openai" and payload["summary"]["sentences"]["overall"]["n"] == 8


def test_baseline_comparison_prints_the_changes(tmp_path, capsys):
    register_verifier("fixed-answers", FixedAnswers)
    args = ["calibrate", "--golden", str(FIXTURE), "--verifier", "fixed-answers", "--bootstrap", "0"]
    assert groundwatch(args + ["--report", str(tmp_path / "before")]) == 0
    capsys.readouterr()
    baseline = tmp_path / "before" / "metrics.json"
    assert groundwatch(args + ["--baseline", str(baseline), "--report", str(tmp_path / "after")]) == 0
    out = capsys.readouterr().out
    assert "vs baseline fixed-answers test" in out and "0.625 (+0.000)" in out
    assert "| overall | 0.625 (+0.000) |" in (tmp_path / "after" / "report.md").read_text()
    (tmp_path / "bad.json").write_text("{}")
    assert groundwatch(args + ["--baseline", str(tmp_path / "bad.json")]) == 2
