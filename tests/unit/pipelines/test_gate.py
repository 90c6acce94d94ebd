"""`groundwatch gate`: pass and fail on fixture files, its JUnit report parsed back, its baselines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict

import pytest

from pipelines.cli import main
from pipelines.runner.inline import InlineAuditor
from tests.support.audit_messages import BAD_MESSAGES, EVIDENCE, message
from tests.support.serve_fixtures import ANSWERS, verdict_message
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import write_table


def _jsonl(path, *messages) -> str:
    with open(path, "wb") as out:
        for m in messages:
            out.write((m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n")
    return str(path)


def _gate(tmp_path, input_file, *flags):
    junit, summary = tmp_path / "gate.xml", tmp_path / "gate.md"
    code = main(["gate", "--input", input_file, "--junit", str(junit), "--summary", str(summary), *flags])
    return code, ET.parse(junit).getroot() if junit.exists() else None, summary.read_text() if summary.exists() else ""


def _grounded(n: int) -> list[dict]:
    return [verdict_message("fully_grounded", f"ok-{i}") for i in range(n)]


def _suite(root, name):
    return next(s for s in root.iter("testsuite") if s.get("name") == name)


def test_a_clean_file_passes_every_check(tmp_path, capsys):
    good = _jsonl(tmp_path / "good.jsonl", *_grounded(3))
    flags = [
        "--max-review-share",
        "0",
        "--fail-on-contradicted",
        "--fail-on-fabricated",
        "--min-mean-confidence",
        "0.9",
    ]
    code, root, summary = _gate(tmp_path, good, *flags)
    assert code == 0
    responses = _suite(root, "responses")
    assert [c.get("name") for c in responses.iter("testcase")] == ["ok-0", "ok-1", "ok-2"]
    assert responses.get("failures") == "0" and not list(root.iter("failure"))
    assert [c.get("name") for c in _suite(root, "thresholds").iter("testcase")] == [
        "every line audited",
        "share needing review",
        "responses with a contradicted sentence",
        "responses with a fabricated citation",
        "high-risk responses with a failed citation",
        "mean sentence confidence",
    ]
    assert summary.startswith("## groundwatch gate: passed")
    out = capsys.readouterr().out
    assert "share needing review" in out and "gate passed" in out


def test_contradicted_and_fabricated_responses_fail_the_gate_with_their_reasons(tmp_path):
    bad = _jsonl(tmp_path / "bad.jsonl", *_grounded(2), verdict_message("contradicted"), verdict_message("fabricated"))
    code, root, summary = _gate(tmp_path, bad, "--fail-on-contradicted", "--fail-on-fabricated")
    assert code == 1
    cases = {c.get("name"): c for c in _suite(root, "responses").iter("testcase")}
    assert cases["ok-0"].find("failure") is None
    failure = cases["resp-contradicted"].find("failure")
    # The sentence and the evidence excerpt it contradicts, not only their numbers.
    assert failure.get("message") == (
        f'sentence 0 "{ANSWERS["contradicted"]}" contradicted by evidence 1 "{EVIDENCE[0]["content"]}"'
    )
    assert "sentence 0 contradicted by evidence 1" in failure.text  # the review reasons follow
    assert "[7] names no passage" in cases["resp-fabricated"].find("failure").text
    thresholds = {c.get("name"): c for c in _suite(root, "thresholds").iter("testcase")}
    assert thresholds["responses with a contradicted sentence"].find("failure").get("message") == "1 (limit 0)"
    assert thresholds["responses with a fabricated citation"].find("failure") is not None
    assert summary.startswith("## groundwatch gate: FAILED") and "resp-contradicted" in summary


def test_review_share_and_mean_confidence_thresholds(tmp_path):
    mixed = _jsonl(tmp_path / "mixed.jsonl", *_grounded(3), verdict_message("ungrounded"))
    assert _gate(tmp_path, mixed, "--max-review-share", "0.25")[0] == 0
    assert _gate(tmp_path, mixed, "--max-review-share", "0.2")[0] == 1
    # Without a threshold the ungrounded response is still a failing test case, but the gate passes.
    code, root, _ = _gate(tmp_path, mixed)
    assert code == 0 and _suite(root, "responses").get("failures") == "1"
    contradicted = _jsonl(tmp_path / "c.jsonl", verdict_message("contradicted"))
    assert _gate(tmp_path, contradicted, "--min-mean-confidence", "0.99")[0] == 1


def test_a_line_that_cannot_be_audited_is_an_error_and_fails_the_gate(tmp_path):
    dirty = _jsonl(tmp_path / "dirty.jsonl", *_grounded(1), BAD_MESSAGES["malformed_json"], _grounded(1)[0])
    code, root, summary = _gate(tmp_path, dirty)
    assert code == 1
    errors = [
        (c.get("name"), c.find("error").get("message")) for c in root.iter("testcase") if c.find("error") is not None
    ]
    assert [name for name, _ in errors] == ["line 2", "line 3"]
    assert errors[0][1].startswith("malformed_json") and errors[1][1].startswith("duplicate_response_id")
    assert _suite(root, "responses").get("tests") == "3" and "line 2" in summary


def test_a_drop_against_a_baseline_file_fails(tmp_path):
    baseline = _jsonl(tmp_path / "baseline.jsonl", *_grounded(4))
    same = _jsonl(tmp_path / "same.jsonl", *_grounded(4))
    worse = _jsonl(
        tmp_path / "worse.jsonl", *_grounded(2), verdict_message("ungrounded"), verdict_message("contradicted")
    )
    assert _gate(tmp_path, same, "--baseline", baseline, "--max-drop", "0.01")[0] == 0
    code, root, _ = _gate(tmp_path, worse, "--baseline", baseline, "--max-drop", "0.05")
    assert code == 1
    [drop] = [c for c in root.iter("testcase") if c.get("name") == "drop in mean faithfulness vs baseline"]
    assert "baseline 1.000" in drop.find("failure").get("message")


def test_a_baseline_file_with_unreadable_lines_says_so(tmp_path, capsys):
    """Lines of the baseline that cannot be audited are named, not left out unseen; a baseline with none that
    can, or with no line at all, is a usage error instead of a comparison with nothing."""
    baseline = _jsonl(tmp_path / "baseline.jsonl", *_grounded(3), b"{not json", {"response_id": "half"})
    same = _jsonl(tmp_path / "same.jsonl", *_grounded(3))
    assert _gate(tmp_path, same, "--baseline", baseline, "--max-drop", "0.01")[0] == 0
    said = capsys.readouterr().err
    assert said.startswith(f"groundwatch gate: --baseline {baseline!r}: 2 of 5 lines could not be audited and are ")
    assert "(the first, line 4: malformed_json: " in said

    broken = _jsonl(tmp_path / "broken.jsonl", b"{not json", b"[]")
    empty = _jsonl(tmp_path / "empty.jsonl", b"", b"  ")
    assert _gate(tmp_path, same, "--baseline", broken, "--max-drop", "0.01")[0] == 2
    said = capsys.readouterr().err
    assert said.startswith(f"groundwatch gate: --baseline {broken!r}: none of its 2 lines could be audited (the first")
    assert _gate(tmp_path, same, "--baseline", empty, "--max-drop", "0.01")[0] == 2
    said = capsys.readouterr().err
    assert said == f"groundwatch gate: --baseline {empty!r} holds no responses (no line that is not blank)\n"


@pytest.mark.parametrize("lake_in", ["folder", pytest.param("bucket", marks=pytest.mark.s3)])
def test_a_drop_against_a_baseline_lake_fails(tmp_path, lake_in, request, capsys):
    """The baseline lake in a folder, or in a bucket of a real S3-protocol server (tests.support.s3_fixtures)."""
    auditor = InlineAuditor()
    tables = defaultdict(list)
    for m in _grounded(3):
        for table, row in to_lake_rows(auditor.audit(auditor.parse(json.dumps(m).encode()))):
            tables[table].append(row)
    lake = request.getfixturevalue("s3_lake") if lake_in == "bucket" else str(tmp_path / "lake")
    for table, rows in tables.items():
        write_table(lake, table, rows)
    worse = _jsonl(tmp_path / "worse.jsonl", verdict_message("ungrounded"), verdict_message("contradicted"))
    code, root, summary = _gate(tmp_path, worse, "--baseline", lake, "--max-drop", "0.05")
    assert code == 1 and f"baseline `{lake}`" in summary
    [drop] = [c for c in root.iter("testcase") if c.get("name") == "drop in mean faithfulness vs baseline"]
    assert "baseline 1.000" in drop.find("failure").get("message")  # the baseline's 3 grounded answers, read back
    assert (
        _gate(tmp_path, _jsonl(tmp_path / "ok.jsonl", *_grounded(2)), "--baseline", lake, "--max-drop", "0.05")[0] == 0
    )
    if lake_in == "bucket":  # a prefix holding no lake, and a bucket that does not exist: usage errors
        from tests.support.s3_fixtures import S3_SECRET

        capsys.readouterr()
        bucket = lake.removeprefix("s3://").split("/")[0]
        refused = ((f"s3://{bucket}/no-lake-here", "no audit lake there"), ("s3://gw-nope/lake", "does not exist"))
        for nowhere, why in refused:
            assert _gate(tmp_path, worse, "--baseline", nowhere, "--max-drop", "0.05")[0] == 2
            err = capsys.readouterr().err
            assert err.startswith("groundwatch gate: ") and nowhere in err and why in err, err
            assert S3_SECRET not in err


def test_bad_usage_exits_2(tmp_path):
    good = _jsonl(tmp_path / "good.jsonl", message())
    assert _gate(tmp_path, str(tmp_path / "missing.jsonl"))[0] == 2
    assert _gate(tmp_path, good, "--max-drop", "0.1")[0] == 2  # no baseline
    assert _gate(tmp_path, good, "--baseline", str(tmp_path / "nowhere"), "--max-drop", "0.1")[0] == 2
    assert _gate(tmp_path, good, "--verifier", "nope")[0] == 2
    assert main(["gate", "--input", good, "--junit", "/no/such/dir/x.xml", "--summary", str(tmp_path / "s.md")]) == 2


def _high_risk_misattributed() -> dict:
    """A grounded sentence citing the wrong passage, in high-risk traffic: no contradiction, no fabrication."""
    answer = ANSWERS["fully_grounded"].replace("[1]", "[2]")
    return message("resp-high-risk", answer=answer, metadata={"tenant": "acme", "risk_level": "high"})


@pytest.mark.parametrize(
    ("failing", "loosened_by"),
    [
        (verdict_message("contradicted"), "--no-fail-on-contradicted"),
        (verdict_message("fabricated"), "--no-fail-on-fabricated"),
        (_high_risk_misattributed(), "--no-fail-on-high-risk-citations"),
    ],
)
def test_input_alone_applies_the_default_policy_and_a_flag_loosens_it(tmp_path, capsys, failing, loosened_by):
    """`gate --input FILE` with no other flag: no output file is needed, the checks table goes to stdout."""
    path = _jsonl(tmp_path / "in.jsonl", *_grounded(2), failing)
    assert main(["gate", "--input", path]) == 1
    out = capsys.readouterr().out
    assert out.startswith("check ") and "FAIL" in out and "gate FAILED" in out
    assert not list(tmp_path.glob("*.xml")) and not list(tmp_path.glob("*.md"))
    others = ("--no-fail-on-contradicted", "--no-fail-on-fabricated", "--no-fail-on-high-risk-citations")
    assert main(["gate", "--input", path, *(f for f in others if f != loosened_by)]) == 1  # its own check stays on
    assert main(["gate", "--input", path, loosened_by]) == 0
    assert main(["gate", "--input", _jsonl(tmp_path / "ok.jsonl", *_grounded(2))]) == 0


def test_high_risk_citation_failure_names_the_sentence_and_the_passage(tmp_path):
    code, root, _ = _gate(tmp_path, _jsonl(tmp_path / "hr.jsonl", _high_risk_misattributed()))
    assert code == 1
    [case] = _suite(root, "responses").iter("testcase")
    message_ = case.find("failure").get("message")
    assert message_.startswith('citation [2] in "The patient was prescribed 50 mg')
    assert "supported by passage" in message_
    assert f'source 2 "{EVIDENCE[1]["content"]}"' in message_
    thresholds = {c.get("name"): c for c in _suite(root, "thresholds").iter("testcase")}
    assert thresholds["high-risk responses with a failed citation"].find("failure").get("message") == "1 (limit 0)"


def test_help_states_the_default_policy(capsys):
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Default policy: fail on any contradicted sentence" in out and "--no-fail-on-contradicted" in out


def test_the_readme_gate_example_runs_as_written(tmp_path, monkeypatch):
    """The README's gate command, copied as it is, on a file of answers named as in the example."""
    import re
    import shlex
    from pathlib import Path

    readme = " ".join((Path(__file__).parents[3] / "README.md").read_text().split())
    [command] = re.findall(r"`(groundwatch gate [^`]*)`", readme)
    monkeypatch.chdir(tmp_path)
    _jsonl(tmp_path / "answers.jsonl", *_grounded(2), verdict_message("contradicted"))
    argv = shlex.split(command)[1:]
    assert main(argv) == 1
    assert (tmp_path / "gate.xml").is_file()
    _jsonl(tmp_path / "answers.jsonl", *_grounded(2))
    assert main(argv) == 0
