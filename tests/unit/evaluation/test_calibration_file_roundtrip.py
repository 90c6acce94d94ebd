"""A calibration file from `groundwatch calibrate --fit` to `groundwatch audit --calibration` and the lake."""

import json
from pathlib import Path

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from schemas import AttributionVerdict, SentenceVerdict
from tests.support.audit_messages import message
from transforms.evaluation.golden import load_golden
from transforms.verify.calibration import CalibratedVerifier, Calibration, StageCalibration
from transforms.verify.registry import make_verifier

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "calibration_golden.jsonl"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("cal") / "cal.json"
    code = groundwatch(["calibrate", "--golden", str(FIXTURE), "--fit", str(out), "--bootstrap", "0"])
    assert code == 0
    return out, Calibration.load(str(out))


def test_calibrate_fit_writes_a_file_that_loads(fitted):
    path, calibration = fitted
    assert calibration.digest and set(calibration.stages) == {"heuristic"} and calibration.target_accuracy == 0.9
    info = calibration.fitted_on
    assert info["records"] == 8 and info["sources"] == {"A": 4, "B": 4} and info["verifier"] == "heuristic"
    assert info["folds"] >= 2 and "ece_calibrated" in info["cross_validated"]["heuristic"]
    assert json.loads(path.read_text())["format"] == "groundwatch-calibration/1"


def test_calibrate_fit_by_source_holds_out_one_source_per_fold(tmp_path):
    out = tmp_path / "by-source.json"
    args = ["calibrate", "--golden", str(FIXTURE), "--fit", str(out), "--bootstrap", "0", "--group-by", "source"]
    assert groundwatch(args) == 0
    info = Calibration.load(str(out)).fitted_on
    assert info["document_groups"] == 2 and info["folds"] == 2  # sources A and B, one fold each
    assert "leave-one-source-out" in info["grouping"]
    assert groundwatch([*args[:-1], "continent"]) == 2


def _traffic(path: Path) -> None:
    records, _ = load_golden(FIXTURE)
    lines = [
        json.dumps(
            message(
                f"g-{i}",
                answer=r.answer,
                evidence=[{"doc_id": p.doc_id, "content": p.content} for p in r.evidence],
                timestamp=f"2026-11-29T09:0{i}:10Z",
            )
        )
        for i, r in enumerate(records)
    ]
    path.write_text("\n".join(lines) + "\n")


def _lake_rows(lake: Path):
    con = connect_lake(str(lake))
    sentences = con.execute(
        "SELECT response_id, sentence_index, attribution_verdict, confidence FROM sentences ORDER BY 1, 2"
    ).fetchall()
    digests = {r[0] for r in con.execute("SELECT calibration_sha256 FROM responses").fetchall()}
    return sentences, digests


def test_audit_with_calibration_writes_its_digest_and_calibrated_confidence(fitted, tmp_path):
    path, calibration = fitted
    traffic = tmp_path / "traffic.jsonl"
    _traffic(traffic)
    base = ["audit", "--input", str(traffic)]
    assert groundwatch([*base, "--lake", str(tmp_path / "plain")]) == 0
    assert groundwatch([*base, "--lake", str(tmp_path / "calibrated"), "--calibration", str(path)]) == 0

    plain, plain_digests = _lake_rows(tmp_path / "plain")
    calibrated, digests = _lake_rows(tmp_path / "calibrated")
    assert plain_digests == {None} and digests == {calibration.digest}
    assert len(plain) == len(calibrated) >= 8
    stage = calibration.stage("heuristic")
    assert stage.model is not None  # the default map: the verdict's score and class
    changed = 0
    for (rid, idx, verdict, raw_conf), (rid2, idx2, verdict2, conf) in zip(plain, calibrated, strict=True):
        assert (rid, idx, verdict) == (rid2, idx2, verdict2)  # the map changes confidence, never the verdict
        raw = SentenceVerdict.model_construct(attribution_verdict=AttributionVerdict(verdict), confidence=raw_conf)
        p = stage.verdict_probability(raw)
        assert conf == pytest.approx(p if verdict == "fully_grounded" else 1.0 - p, abs=1e-6)
        changed += abs(conf - raw_conf) > 1e-6
    assert changed > 0


def test_the_registry_calibrates_the_heuristic_only(fitted):
    _, calibration = fitted
    verifier = make_verifier("heuristic", calibration=calibration)
    assert isinstance(verifier, CalibratedVerifier) and verifier.calibration_sha256 == calibration.digest
    assert verifier.name == "heuristic" and verifier.version == make_verifier("heuristic").version
    no_heuristic = Calibration({"model": StageCalibration((0.0, 1.0), (0.2, 0.8))}, 0.9)
    with pytest.raises(ValueError, match="cannot use this calibration file"):
        make_verifier("heuristic", calibration=no_heuristic)


def test_audit_rejects_an_unusable_calibration_naming_the_flag(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    traffic = tmp_path / "traffic.jsonl"
    _traffic(traffic)
    assert groundwatch(["audit", "--input", str(traffic), "--lake", str(tmp_path), "--calibration", str(bad)]) == 2
    assert "--calibration" in capsys.readouterr().err
