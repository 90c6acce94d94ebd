"""Usage errors a user can act on: one line naming the problem, exit 2; and `groundwatch --version`.

Each case was reproduced on the code before this change: a busy port printed the URL, then uvicorn's error,
exit 3; `query --fromat csv` took `csv` as the SQL; no SQL said "not both"; a missing `--file` printed a raw
`[Errno 2]`; `--inptu` printed 20 lines of usage without naming it. The busy port is a socket bound here and
never listening (the fast tier starts no server).
"""

from __future__ import annotations

import socket

import pytest

from pipelines.cli import main
from transforms.verify.registry import available_verifiers


def _one_line(capsys, command: str) -> str:
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith(f"groundwatch {command}: ") and err.count("\n") == 1, err
    assert "usage:" not in err and "Traceback" not in err and "http://" not in captured.out + err
    return err.removeprefix(f"groundwatch {command}: ").strip()


@pytest.fixture
def busy_port():
    """A port some other socket holds (bound, not listening)."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield holder.getsockname()[1]


def test_serve_on_a_busy_port_says_so_before_printing_its_url(busy_port, capsys):
    assert main(["serve", "--port", str(busy_port)]) == 2
    assert _one_line(capsys, "serve") == (
        f"--port {busy_port}: 127.0.0.1:{busy_port} is already in use; stop what holds it or choose another --port"
    )


def test_ui_on_a_busy_port_says_so_before_printing_its_url(busy_port, tmp_path, capsys):
    assert main(["ui", "--lake", str(tmp_path), "--port", str(busy_port)]) == 2
    assert "is already in use" in _one_line(capsys, "ui")


def test_review_on_a_busy_port_says_so_before_printing_its_url(busy_port, tmp_path, capsys):
    assert main(["review", "--lake", str(tmp_path), "--port", str(busy_port)]) == 2
    assert "is already in use" in _one_line(capsys, "review")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["query", "--fromat", "csv", "SELECT 1"], "unrecognized argument --fromat; did you mean --format?"),
        (["query"], 'no SQL: give it as an argument (groundwatch query "SELECT ...") or with --file FILE'),
        (["query", "--file", "missing.sql"], "--file missing.sql: no such file"),
        (["query", "--file", "missing.sql", "SELECT 1"], "give the SQL as an argument or with --file, not both"),
        (
            ["audit", "--inptu", "answers.jsonl"],
            "unrecognized argument --inptu; did you mean --input? (the following arguments are required: --input)",
        ),
        (["gate", "--inptu", "answers.jsonl"], "unrecognized argument --inptu; did you mean --input?"),
        (
            ["review", "label", "--response-id", "r1", "--sentence", "0", "--label", "contradicted", "--reviewr", "a"],
            "unrecognized argument --reviewr; did you mean --reviewer? (the following arguments are required: "
            "--reviewer)",
        ),
        (
            ["review", "label", "--response-id", "r1", "--sentence", "0", "--label", "contradicted"],
            "the following arguments are required: --reviewer",
        ),
        (["report", "--lake", "nolake"], "--lake nolake does not exist: no audit lake there"),
        (["compact", "--lake", "nolake"], "--lake nolake does not exist: no audit lake there"),
        (["drift", "--lake", "nolake"], "--lake nolake does not exist: no audit lake there"),
    ],
)
def test_a_usage_error_is_one_line_naming_the_problem(argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert _one_line(capsys, argv[0]).startswith(said)


def test_a_misspelled_command_is_named_with_the_closest(capsys):
    assert main(["audti", "--input", "x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundwatch: unknown command 'audti'; did you mean audit?") and err.count("\n") == 1


def test_version_names_the_package_and_every_verifier(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("groundwatch ") and lines[0] != "groundwatch unknown"
    assert [line.split()[1] for line in lines[1:]] == available_verifiers()
    assert dict(line.split()[1:] for line in lines[1:])["heuristic"].isdigit()
