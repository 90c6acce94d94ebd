"""Bad usage of `groundwatch audit` and `monitor`: one line on stderr naming the problem, exit 2, no traceback,
and no `apitools not found` noise from Beam's imports.

One case runs the real command in a process of its own (the installed `groundwatch`, as a user types it: exit
status, stderr without Beam's noise); the others call the same `main` in this process (`groundwatch_in_process`),
which saves the few seconds each new process spends importing Beam, and sees the same exit status and stderr.
A usage error in a process of its own is also `test_audit_cli`'s truncated input."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.traffic.synthetic import generate_jsonl
from transforms.io.lake.manifest import COMMAND_VARIABLE, RUN_ID_VARIABLE

ROOT = Path(__file__).resolve().parents[3]
JSON_ARRAY = "input looks like a JSON array; JSONL (one JSON object per line) is expected"


def _command() -> list[str]:
    beside = Path(sys.executable).with_name("groundwatch")
    found = str(beside) if beside.exists() else shutil.which("groundwatch")
    return [found] if found else [sys.executable, "-m", "pipelines.cli"]


def run_groundwatch(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*_command(), *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd, check=False
    )


def assert_usage_error(result: subprocess.CompletedProcess, command: str, *phrases: str) -> None:
    """Exit 2 and exactly one line on stderr, `groundwatch <command>: <reason>`, with every phrase in it."""
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith(f"groundwatch {command}: ")
    for phrase in phrases:
        assert phrase in lines[0]


def _responses(traffic: Path) -> list[dict]:
    """The traffic's valid JSON objects (the generator mixes in malformed lines)."""
    responses = []
    for line in traffic.read_bytes().splitlines():
        try:
            responses.append(json.loads(line))
        except ValueError:
            continue
    return [r for r in responses if isinstance(r, dict)]


@pytest.fixture()
def groundwatch_in_process(capsys, monkeypatch):
    """`run_groundwatch`, but calling `pipelines.cli.main` here: the exit status and what it printed."""

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        for name in (RUN_ID_VARIABLE, COMMAND_VARIABLE):  # a command names its run here: undone afterwards
            monkeypatch.setenv(name, "")
        code = groundwatch(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run


@pytest.fixture()
def traffic(tmp_path) -> Path:
    path = tmp_path / "traffic.jsonl"
    path.write_bytes(b"\n".join(generate_jsonl(12, seed=5)) + b"\n")
    return path


def test_an_input_directory_is_refused(groundwatch_in_process, tmp_path):
    (tmp_path / "logs").mkdir()
    result = groundwatch_in_process("audit", "--input", "logs", "--lake", "lake", cwd=tmp_path)
    assert_usage_error(result, "audit", "--input 'logs' is a directory", "logs/*.jsonl")
    assert not (tmp_path / "lake").exists()


def test_a_glob_that_matches_a_directory_is_refused(groundwatch_in_process, tmp_path, traffic):
    (tmp_path / "traffic.jsonl.d").mkdir()
    result = groundwatch_in_process("audit", "--input", "traffic.jsonl*", "--lake", "lake", cwd=tmp_path)
    assert_usage_error(result, "audit", "matches a directory", "traffic.jsonl.d")


@pytest.mark.parametrize("lake", ["a-file", "a-file/lake"])
def test_a_lake_that_is_a_file_is_refused(groundwatch_in_process, tmp_path, traffic, lake):
    (tmp_path / "a-file").write_text("not a folder\n")
    result = groundwatch_in_process("audit", "--input", str(traffic), "--lake", lake, cwd=tmp_path)
    assert_usage_error(result, "audit", f"--lake {lake!r}", "is a file")
    assert (tmp_path / "a-file").read_text() == "not a folder\n"


def test_a_misspelled_flag_is_refused_with_the_closest_one_named(groundwatch_in_process, tmp_path, traffic):
    result = groundwatch_in_process(
        "audit", "--input", str(traffic), "--lake", "lake", "--windw-seconds", "5", cwd=tmp_path
    )
    assert_usage_error(result, "audit", "--windw-seconds", "did you mean --window-seconds?")
    assert not (tmp_path / "lake").exists()


def test_a_misspelled_beam_option_is_refused_with_beams_name(groundwatch_in_process, tmp_path, traffic):
    result = groundwatch_in_process(
        "audit", "--input", str(traffic), "--lake", "lake", "--direct-num-workers=2", cwd=tmp_path
    )
    assert_usage_error(result, "audit", "--direct-num-workers", "did you mean --direct_num_workers?")


@pytest.mark.parametrize("indent", [None, 2], ids=["one line", "several lines"])
def test_a_json_array_given_as_jsonl_is_refused(groundwatch_in_process, tmp_path, traffic, indent):
    responses = _responses(traffic)[:3]
    array = tmp_path / "array.jsonl"
    array.write_text("\n" + json.dumps(responses, indent=indent) + "\n")
    result = groundwatch_in_process("audit", "--input", "array.jsonl", "--lake", "lake", cwd=tmp_path)
    assert_usage_error(result, "audit", "array.jsonl", JSON_ARRAY)
    assert not (tmp_path / "lake").exists()


def test_monitor_refuses_a_lake_file_and_a_misspelled_flag(groundwatch_in_process, tmp_path):
    (tmp_path / "a-file").write_text("x\n")
    kafka = ["monitor", "--bootstrap-servers", "127.0.0.1:1", "--until-caught-up"]
    assert_usage_error(groundwatch_in_process(*kafka, "--lake", "a-file", cwd=tmp_path), "monitor", "is a file")
    result = groundwatch_in_process(*kafka, "--lake", "lake", "--windw-seconds", "5", cwd=tmp_path)
    assert_usage_error(result, "monitor", "did you mean --window-seconds?")


def test_both_spellings_of_a_flag_and_beam_options_pass_without_noise(tmp_path, traffic):
    """`--sample_rate` works as `--sample-rate` does, Beam's options still pass through, and stderr carries no
    `apitools not found` line (nor does it for a command that does not import Beam)."""
    result = run_groundwatch(
        "audit",
        "--input",
        str(traffic),
        "--lake",
        "lake",
        "--sample_rate",
        "0.5",
        "--window_seconds=120",
        "--confidence-threshold",
        "0.6",
        "--runner=FnApiRunner",
        "--direct_num_workers",
        "1",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "apitools" not in result.stderr and "Unparseable" not in result.stderr
    con = connect_lake(str(tmp_path / "lake"))
    windows = con.execute("SELECT DISTINCT epoch(window_end) - epoch(window_start) FROM responses").fetchall()
    assert windows == [(120.0,)]
    audited = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    assert 0 < audited < 12  # half sampled out, by --sample_rate

    (tmp_path / "empty").mkdir()
    query = run_groundwatch("query", "SELECT 1", "--lake", "empty", cwd=tmp_path)
    assert query.returncode == 0 and "apitools" not in query.stderr


def test_a_compressed_json_array_and_a_byte_order_mark(tmp_path, traffic, capsys):
    """In process (faster): the first byte is looked at after decompressing; a BOM and blank lines before a JSON
    object are fine."""
    responses = _responses(traffic)
    packed = tmp_path / "array.jsonl.gz"
    packed.write_bytes(gzip.compress(json.dumps(responses).encode()))
    assert groundwatch(["audit", "--input", str(packed), "--lake", str(tmp_path / "lake")]) == 2
    assert JSON_ARRAY in capsys.readouterr().err

    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf\n \n" + traffic.read_bytes())
    assert groundwatch(["audit", "--input", str(marked), "--lake", str(tmp_path / "lake")]) == 0
    assert "JSON array" not in capsys.readouterr().err
