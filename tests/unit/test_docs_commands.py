"""Every `groundwatch` command in the README and docs/ runs as written, against the sample traffic.

The fenced shell blocks of README.md and docs/*.md are read; a line starting with `groundwatch` is a
command (continuation lines joined, `&&` chains split, `# comments` and `[optional parts]` dropped). The
commands of one page run in its order, in a folder of their own where the files the docs name
(`traffic.jsonl`, `answers.jsonl`, `logs/*.jsonl`) are the first lines of the shipped sample traffic, the
labelled files (`labeled.jsonl`) are our own hand-labelled answers, and
`dashboards/` is the package's query library. A command must not be refused (exit 2) or crash: exit 0, or 1
for a check the docs mean to fail (`gate`'s policy, `--fail-on-alert`).

Commands that need a service (Kafka, Flink, S3, a judge or a model, a server of their own, the demo's
scenario lake) are named by `NEEDS` and not run here; `test_every_documented_command_is_run_or_named`
keeps a new one from slipping by unseen. Some of them run as written with their service: docs/kafka.md's
`produce` and `monitor` (tests/integration/kafka/test_kafka_docs_commands.py), the `serve`, `review` and
`ui` servers (tests/unit/pipelines/test_docs_server_commands.py), the model page's audits
(tests/unit/pipelines/test_docs_model_commands.py), docs/flink.md's walk from a fresh machine to a stream into a
bucket, Flink and S3 (tests/integration/flink/test_flink_pools.py) and the README's `groundwatch demo` (the
`demo_lake` fixture runs the demo).
"""

from __future__ import annotations

import itertools
import os
import shlex

import pytest

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from tests.support.documented import ROOT, commands

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LABELLED = ROOT / "tests" / "data" / "paraphrase" / "answers.jsonl"
"""Hand-labelled answers in the golden file's format: the documented `calibrate --golden` commands read them."""
SAMPLE_LINES = 40
"""Lines of the sample traffic the documented files hold: enough for every command, quick to audit."""

NEEDS = {
    "kafka": ("monitor", "produce", "--bootstrap-servers", "--publish-kafka-topic"),
    "flink": ("FlinkRunner", "$FLINK"),
    "s3": ("s3://",),
    "server": ("serve", "ui", "review", "--judge-base-url"),
    "model": ("--model-path",),
    "scenario": ("demo",),
}
"""What a command needs besides the sample traffic, by a word it contains; such commands are not run here."""


def _needs(command: list[str]) -> str | None:
    """The service a command needs (`NEEDS`): a command name or flag as a word, anything else within it."""
    words, text = {command[1], *(part for w in command for part in w.split("=", 1))}, " ".join(command)
    for service, marks in NEEDS.items():
        if any(mark in words if mark.isidentifier() or mark.startswith("--") else mark in text for mark in marks):
            return service
    return None


def _lakes_read_first(page_commands: list[list[str]]) -> list[str]:
    """The lakes a page's commands read before any of its commands writes them: the page assumes one exists
    (as after `groundwatch demo`), so the test audits the sample traffic into each first."""
    written, assumed = set(), []
    for command in (c for c in page_commands if "--lake" in c):
        lake = command[command.index("--lake") + 1]
        if command[1] == "audit":
            written.add(lake)
        elif lake not in written and lake not in assumed:
            assumed.append(lake)
    return assumed


def _runnable() -> list[pytest.param]:
    params = []
    for page in PAGES:
        runnable = [c for c in commands(page) if _needs(c) is None]
        if runnable:
            params.append(pytest.param(runnable, id=str(page.relative_to(ROOT))))
    return params


def test_every_documented_command_is_run_or_named():
    every = [c for page in PAGES for c in commands(page)]
    assert len(every) >= 20  # the extraction finds the docs' commands
    run = [c for c in every if _needs(c) is None]
    assert {c[1] for c in run} >= {"audit", "query", "drift", "report", "gate"}
    assert ["groundwatch", "gate", "--input", "answers.jsonl"] in run  # a comment and an [option] are dropped
    assert not [c for c in every if "]" in c or "[" in c]  # nested [options [within options]] too


@pytest.mark.scenario  # a Beam audit or two per page: not fast, so it runs with the integration tier
@pytest.mark.parametrize("page_commands", _runnable())
def test_the_documented_commands_run_as_written(page_commands, tmp_path, monkeypatch):
    with open(sample_traffic_path(), encoding="utf-8") as sample:
        traffic = "".join(itertools.islice(sample, SAMPLE_LINES))
    for name in ("traffic.jsonl", "answers.jsonl", "logs/traffic.jsonl"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(traffic)
    for name in ("labeled.jsonl", "labelled.jsonl"):  # the labelled file the calibration pages name
        (tmp_path / name).write_bytes(LABELLED.read_bytes())
    os.symlink(ROOT / "dashboards", tmp_path / "dashboards")
    monkeypatch.chdir(tmp_path)
    for lake in _lakes_read_first(page_commands):
        assert groundwatch(["audit", "--input", "traffic.jsonl", "--lake", lake]) == 0
    for command in page_commands:
        code = groundwatch(command[1:])
        allowed = (0, 1) if command[1] == "gate" or "--fail-on-alert" in command else (0,)
        assert code in allowed, f"{shlex.join(command)} exited {code}"
