"""Labels come back: `calibrate --from-lake` reports agreement per verifier version and tenant, and fits a
calibration file from the reviews, cross-validated with every response's sentences in one fold."""

from __future__ import annotations

import json

import pytest

from pipelines.cli import main
from pipelines.reviewing.agreement import agreement
from tests.support.audit_messages import message
from tests.support.review_lake import EVIDENCE, build_lake
from transforms.verify.calibration import Calibration

GROUNDED = "Metoprolol 50 mg twice daily was prescribed on March 3, 2024 [kb-1]."
WRONG = "Metoprolol 80 mg twice daily was prescribed on March 3, 2024 [kb-1]."


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """Twelve responses of two tenants, each sentence labelled by a simulated reviewer who agrees with the
    verifier except on two sentences."""
    folder = tmp_path_factory.mktemp("from-lake")
    messages = [
        message(f"r-{i}", answer=GROUNDED if i % 2 else WRONG, evidence=EVIDENCE,
                metadata={"tenant": "clinic" if i < 6 else "legal", "risk_level": "low"})
        for i in range(12)
    ]  # fmt: skip
    lake = build_lake(str(folder / "lake"), messages)
    labels = folder / "labels.jsonl"
    lines = []
    for i in range(12):
        verdict = "fully_grounded" if i % 2 else "contradicted"
        if i in (3, 8):  # the reviewer disagrees here
            verdict = "partially_grounded"
        lines.append(json.dumps({"response_id": f"r-{i}", "sentence_index": 0, "label": verdict, "reviewer": "sim"}))
    labels.write_text("\n".join(lines) + "\n")
    assert main(["review", "import", "--lake", lake, str(labels)]) == 0
    return lake


def test_agreement_is_kappa_and_binary_balanced_accuracy():
    rows = [
        {"label": "fully_grounded", "verifier_verdict": "fully_grounded"},
        {"label": "contradicted", "verifier_verdict": "contradicted"},
        {"label": "partially_grounded", "verifier_verdict": "fully_grounded"},
        {"label": "ungrounded", "verifier_verdict": "ungrounded"},
    ]
    figures = agreement(rows)
    assert figures["n"] == 4 and figures["agreement"] == 0.75
    assert figures["balanced_accuracy"] == pytest.approx((1.0 + 2 / 3) / 2)
    assert 0.0 < figures["kappa"] < 1.0


def test_from_lake_reports_agreement_per_version_and_tenant(reviewed, capsys):
    assert main(["calibrate", "--from-lake", reviewed]) == 0
    out = capsys.readouterr().out
    assert "12 reviewed sentences" in out
    assert "tenant=clinic" in out and "tenant=legal" in out and "verifier_version=" in out
    [line] = [line for line in out.splitlines() if line.startswith("all reviews")]
    assert line.split()[2:] == [
        "12",
        "0.714",
        "0.929",
        "0.833",
    ]  # n, kappa (10/12 vs 60/144 by chance), bal. acc., agreement


def test_from_lake_for_one_tenant_and_with_a_fit(reviewed, tmp_path, capsys):
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--from-lake", reviewed, "--fit", str(out), "--folds", "3"]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--from-lake", reviewed, "--tenant", "legal", "--fit", str(out), "--folds", "3"]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "6 reviewed sentences" in text and "tenant=clinic" not in text
    # Six sentences are too few: held out, the fit is further from the labels than the raw confidence, and
    # the command says so beside the figures it printed.
    [figures] = [line for line in text.splitlines() if line.startswith("heuristic: ")]
    raw, calibrated = (float(x) for x in figures.split("ECE ")[1].split(",")[0].split(" -> "))
    assert calibrated > raw
    assert captured.err.startswith("groundwatch calibrate: warning: on responses it was not fitted on, this ")
    assert f"(ECE {raw:.3f} -> {calibrated:.3f}, 6 reviewed sentences)" in captured.err
    assert "grouped by response" in text and "tenant 'legal'" in text
    _, legal = Calibration.load(str(out)).section("legal")
    assert legal.fitted_on["tenant"] == "legal" and legal.stage("heuristic") is not None


def test_from_lake_without_reviews_or_with_both_sources_is_exit_2(tmp_path, capsys):
    lake = build_lake(str(tmp_path / "lake"))
    assert main(["calibrate", "--from-lake", lake]) == 2
    assert "no reviews" in capsys.readouterr().err
    assert main(["calibrate", "--from-lake", lake, "--golden", "x.jsonl"]) == 2
    assert "give one of" in capsys.readouterr().err
