"""One name per concept across commands, read from every command's `--help`.

Before: the Kafka servers flag had three names (`--bootstrap-servers`, drift's `--kafka-bootstrap`, serve's
`--kafka-bootstrap-servers`); `--lake` was required in two commands and defaulted to two spellings elsewhere;
`--calibration` showed "Default ."; serve's `--judge-retries` spoke of Beam, which serve does not run.
"""

from __future__ import annotations

import re

import pytest

from pipelines.cli import COMMANDS, main


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.fixture(scope="module")
def helps():
    """Every command's `--help`, once (`capsys` is per test, so this captures by hand)."""
    import contextlib
    import io

    texts = {}
    for command in COMMANDS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            main([command, "--help"])
        texts[command] = " ".join(out.getvalue().split())
    return texts


def test_kafka_servers_have_one_name_in_every_command(helps):
    takes_kafka = {c for c, text in helps.items() if "Kafka" in text and "-bootstrap" in text}
    assert takes_kafka >= {"monitor", "produce", "drift", "serve"}
    for command in takes_kafka:
        assert "--bootstrap-servers" in helps[command], command
        assert "--kafka-bootstrap" not in helps[command], command


def test_the_lake_flag_has_one_default_everywhere(helps):
    with_lake = {c for c, text in helps.items() if "--lake LAKE" in text}
    assert with_lake >= {"audit", "monitor", "query", "metrics", "drift", "report", "compact", "replay", "ui", "demo"}
    for command in with_lake:
        assert "a folder or a URI (s3://bucket/lake)" in helps[command], command
        assert "Default ./groundwatch-lake." in helps[command], command
        assert "[--lake LAKE]" in helps[command].split("options:")[0], command  # optional: it has a default


def test_no_help_says_default_of_an_empty_value_and_serve_does_not_speak_of_beam(helps):
    for command, text in helps.items():
        assert not re.search(r"Default \.( |$)", text), command
    assert "Default none." in helps["gate"]  # --calibration
    retries = helps["serve"].split("--judge-retries JUDGE_RETRIES ")[1][:120]
    assert "Beam" not in retries and "backoff" in retries


@pytest.mark.parametrize(
    ("argv", "old", "new"),
    [
        (["drift", "--kafka-bootstrap", "127.0.0.1:1", "--lake", "nolake"], "--kafka-bootstrap", "--bootstrap-servers"),
        (
            ["serve", "--kafka-bootstrap-servers", "127.0.0.1:1", "--workers", "0"],
            "--kafka-bootstrap-servers",
            "--bootstrap-servers",
        ),
    ],
)
def test_an_old_name_still_works_and_prints_one_deprecation_line(argv, old, new, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2  # then stopped by the usage error that follows (no lake; no worker)
    first, second = capsys.readouterr().err.splitlines()
    assert first == f"groundwatch: {old} is deprecated; use {new}"
    assert second.startswith(f"groundwatch {argv[0]}: ")
