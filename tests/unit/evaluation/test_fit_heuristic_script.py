"""scripts/fit_heuristic.py: its folds never split a source document, and it runs end to end on the fixture."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from schemas import EvidencePassage
from transforms.evaluation.fit_calibration import document_groups, grouped_folds, record_groups
from transforms.evaluation.golden import GoldenRecord
from transforms.verify.heuristic.config import HeuristicConfig

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "fit_heuristic.py"
FIXTURE = ROOT / "tests" / "data" / "calibration_golden.jsonl"


def _script():
    spec = importlib.util.spec_from_file_location("fit_heuristic", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while the module runs
    spec.loader.exec_module(module)
    return module


def _record(rid: str, label: str, *passages: str) -> GoldenRecord:
    evidence = tuple(EvidencePassage(doc_id=f"d{k}", content=p) for k, p in enumerate(passages))
    answer = "The tower was built in 1850." if label == "fully_grounded" else "The tower was painted red."
    return GoldenRecord(rid, "S", answer, evidence, label, (label,))


def test_cross_validation_never_trains_on_a_passage_of_the_held_out_fold():
    # a-b share one passage, b-c another (a and c share none: one document all the same), d and e stand alone.
    tower = "The tower was built in 1850 by the city."
    records = [
        _record("a", "fully_grounded", tower, "Page one of the guide."),
        _record("b", "ungrounded", "Page one of the guide.", "Page two  of the guide."),
        _record("c", "fully_grounded", "Page two of the guide."),  # the same passage up to whitespace
        _record("d", "ungrounded", "An unrelated note about the weather."),
        _record("e", "fully_grounded", tower + " It is tall."),
        _record("f", "ungrounded", "Another note, about trains."),
    ]
    groups = document_groups(records)
    assert groups[0] == groups[1] == groups[2]
    fit = _script()
    runner = fit.Runner(records)
    fold = grouped_folds(groups, 3)
    seen = []

    def choose(train):
        held_out = [i for i in range(len(records)) if i not in train]
        train_passages = {" ".join(p.content.split()) for i in train for p in records[i].evidence}
        for i in held_out:
            assert not train_passages & {" ".join(p.content.split()) for p in records[i].evidence}
        seen.append(sorted(held_out))
        return fit.DEFAULT_CONFIG

    pooled, chosen = fit.cross_validated(runner, fold, choose)
    assert len(chosen) == 3 and all(o is not None for o in pooled)
    assert sorted(i for part in seen for i in part) == list(range(len(records)))  # each record held out once
    assert any({0, 1, 2} <= set(part) for part in seen)


def test_floor_rule_switches_a_cue_that_is_wrong_too_often():
    fit = _script()
    evidence = "Lab results showed potassium at 4.2 mmol/L."
    records = [
        GoldenRecord(
            f"r{k}",
            "S",
            "Lab results showed potassium at 3.1 mmol/L.",
            (EvidencePassage(doc_id="e1", content=evidence),),
            label,
            (label,),
        )
        for k, label in enumerate(["partially_grounded", "partially_grounded", "contradicted"])
    ]
    runner = fit.Runner(records)
    start = fit.DEFAULT_CONFIG.with_cue_mode("quantity", "assert")
    floored = fit.floor_rule(runner, start, [0, 1, 2], 0.6)
    assert floored.cues.quantity == "doubt"  # 1 of 3 right
    assert fit.floor_rule(runner, start, [2], 0.6).cues.quantity == "assert"
    # Under the floor, the cue alone no longer makes the sentence contradicted; it only lowers the confidence.
    assert {o.label for o in runner.run(start)} == {"contradicted"}
    assert all(o.label != "contradicted" and "quantity" in o.fired for o in runner.run(floored))


def test_script_runs_on_the_fixture_and_writes_a_config(tmp_path):
    out = tmp_path / "cues.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--golden", str(FIXTURE), "--folds", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for heading in ("1. THE CONFIG GIVEN", "2. CUES", "floor, cross-validated", "3. PER SETTING", "4. COORDINATE"):
        assert heading in done.stdout
    assert "8 records (2 rejected lines)" in done.stdout
    HeuristicConfig.model_validate(json.loads(out.read_text()))


def test_source_grouping_holds_out_one_source_per_fold_and_sub_datasets_count_as_sources():
    tower = "The tower was built in 1850 by the city."
    records = [
        _record("a", "fully_grounded", tower),
        _record("b", "ungrounded", tower),  # same passage, other source: the source decides the group
        _record("c", "fully_grounded", "Page one of the guide."),
    ]
    records[1] = GoldenRecord("b", "T", records[1].answer, records[1].evidence, "ungrounded", ("ungrounded",))
    for rid, part in (("d", "LFQA"), ("e", "ExpertQA")):
        records.append(
            GoldenRecord(rid, "AB", records[0].answer, records[0].evidence, "fully_grounded", (), sub_dataset=part)
        )
    groups, folds = record_groups(records, "source")
    assert groups == ["S", "T", "S", "AB/LFQA", "AB/ExpertQA"]
    assert folds == 4
    fold = grouped_folds(groups, folds)
    assert len({fold[i] for i in (0, 2)}) == 1 and len(set(fold)) == 4  # one fold per source
    assert record_groups(records, "document") == (document_groups(records), None)


def test_script_groups_by_source_when_asked():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--golden", str(FIXTURE), "--group-by", "source", "--no-search"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "8 records (2 rejected lines), 2 source groups, 2 folds" in done.stdout  # sources A and B


def test_cues_only_prints_every_cue_that_fired_doubting_ones_too(capsys):
    fit = _script()
    assert fit.main(["--golden", str(FIXTURE), "--group-by", "source", "--cues-only"]) == 0
    out = capsys.readouterr().out
    assert "2. CUES" in out and "every cue that fired" in out and "never fired:" in out
    assert "3. PER SETTING" not in out


def test_a_doubting_cue_is_judged_as_if_it_asserted():
    fit = _script()
    records = [
        GoldenRecord(
            "r0",
            "S",
            "The API supports both JSON and XML.",
            (EvidencePassage(doc_id="e1", content=("The API supports JSON only; XML is not supported.")),),
            "contradicted",
            ("contradicted",),
        )
    ]
    outcome = fit.Runner(records).run(fit.DEFAULT_CONFIG)[0]
    assert outcome.label != "contradicted" and outcome.cue == ""  # the cue doubts: it cannot assert alone
    assert fit.cue_firings(records, [outcome], [0]) == {"denied_clause": (1, 1, 1)}
