"""Per-tenant calibration: one file with a default section and a section per tenant; `calibrate --from-lake
--tenant` writes a tenant's section; `audit`, `gate` and the in-process auditor (`serve`) calibrate each
tenant's verdicts by its section, and the lake's `responses.calibration_section` says which one decided."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines.cli import main
from pipelines.runner.inline import InlineAuditor
from tests.support.audit_messages import message
from tests.unit.review.test_labels_come_back import reviewed  # noqa: F401 - the module's reviewed lake
from transforms.io.lake.rows import to_lake_rows
from transforms.verify.calibration import DEFAULT_SECTION, Calibration, StageCalibration

IDENTITY = Calibration({"heuristic": StageCalibration((0.0, 1.0), (0.0, 1.0))}, 0.9, {"fitted_on": "default"})
DOUBTFUL = Calibration({"heuristic": StageCalibration((0.0, 1.0), (0.0, 0.6), escalate=(0.3, 0.7))}, 0.9)
"""A tenant whose reviewers find the verifier far less right: P(fully grounded) never above 0.6."""


@pytest.fixture
def sectioned(tmp_path) -> str:
    path = str(tmp_path / "cal.json")
    IDENTITY.with_section("legal", DOUBTFUL).save(path)
    return path


def test_a_file_without_sections_keeps_its_bytes_and_a_tenant_falls_back_to_the_default(tmp_path, sectioned):
    plain = tmp_path / "plain.json"
    IDENTITY.save(str(plain))
    assert "tenants" not in json.loads(plain.read_text())  # files written before sections keep their digest
    calibration = Calibration.load(sectioned)
    name, legal = calibration.section("legal")
    assert name == "legal" and legal.stage("heuristic").escalate == (0.3, 0.7)
    assert legal.digest == calibration.digest  # the lake records the whole file's digest
    assert calibration.section("acme")[0] == DEFAULT_SECTION
    assert calibration.section("acme")[1].stage("heuristic").escalate is None
    with pytest.raises(ValueError, match="cannot be called 'default'"):
        IDENTITY.with_section(DEFAULT_SECTION, DOUBTFUL)


def _audit(tenant: str, calibration: str):
    auditor = InlineAuditor(verifier_config={"calibration": Calibration.load(calibration)})
    m = message(f"r-{tenant}", metadata={"tenant": tenant, "risk_level": "low"})
    return auditor.audit(auditor.parse(json.dumps(m).encode()))


def test_each_tenant_is_calibrated_by_its_own_section(sectioned):
    legal, acme = _audit("legal", sectioned), _audit("acme", sectioned)
    assert (legal.calibration_section, acme.calibration_section) == ("legal", DEFAULT_SECTION)
    assert legal.calibration_sha256 == acme.calibration_sha256 == Calibration.load(sectioned).digest
    # The same grounded sentence: sure for the default section, doubtful (so reviewed) for legal's.
    assert acme.report.sentences[0].confidence > 0.9 and not acme.review.needs_review
    assert legal.report.sentences[0].confidence <= 0.6 and legal.review.needs_review
    [row] = [row for table, row in to_lake_rows(legal) if table == "responses"]
    assert row["calibration_section"] == "legal"


def test_audit_and_gate_take_a_sectioned_file_and_the_lake_records_the_section(tmp_path, sectioned):
    files = {}
    for tenant in ("legal", "acme"):
        files[tenant] = tmp_path / f"{tenant}.jsonl"
        files[tenant].write_text(json.dumps(message(f"r-{tenant}", metadata={"tenant": tenant})) + "\n")
    traffic = tmp_path / "in.jsonl"
    traffic.write_text(files["legal"].read_text() + files["acme"].read_text())
    lake = str(tmp_path / "lake")
    assert main(["audit", "--input", str(traffic), "--lake", lake, "--calibration", sectioned]) == 0
    sections = duckdb.sql(
        f"SELECT tenant, calibration_section FROM read_parquet('{lake}/responses/**/*.parquet') ORDER BY 1"
    ).fetchall()
    assert sections == [("acme", "default"), ("legal", "legal")]
    # The gate fails the legal response, which its section leaves unsure, and passes acme's.
    assert (
        main(["gate", "--input", str(files["legal"]), "--calibration", sectioned, "--min-mean-confidence", "0.7"]) == 1
    )
    assert (
        main(["gate", "--input", str(files["acme"]), "--calibration", sectioned, "--min-mean-confidence", "0.7"]) == 0
    )


def test_from_lake_writes_a_tenants_section_and_keeps_the_others(reviewed, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "cal.json"
    assert main(["calibrate", "--from-lake", reviewed, "--tenant", "legal", "--fit", str(out), "--folds", "3"]) == 2
    assert "fit it first, without --tenant" in capsys.readouterr().err and not out.exists()
    IDENTITY.save(str(out))
    for tenant in ("legal", "clinic"):
        assert main(["calibrate", "--from-lake", reviewed, "--tenant", tenant, "--fit", str(out), "--folds", "3"]) == 0
    calibration = Calibration.load(str(out))
    assert sorted(calibration.tenants) == ["clinic", "legal"]
    assert calibration.fitted_on == IDENTITY.fitted_on  # the default section is untouched
    assert calibration.section("clinic")[1].fitted_on["tenant"] == "clinic"
    # Fitting the default again replaces it and keeps the tenants' sections.
    assert main(["calibrate", "--from-lake", reviewed, "--fit", str(out), "--folds", "3"]) == 0
    again = Calibration.load(str(out))
    assert again.fitted_on["tenant"] == "all" and sorted(again.tenants) == ["clinic", "legal"]
