"""Long commands show progress (a bar on a terminal, a count line elsewhere) and keep Beam's own log lines
aside unless `--verbose`."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys

import apache_beam as beam
import pytest

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from pipelines.runner.progress import Progress
from pipelines.runner.read_counts import CountMessages, counted_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_count_line_at_most_every_few_seconds_and_one_at_the_end():
    now = [0.0]
    out = io.StringIO()
    with Progress("drift", total=10, unit="windows", stream=out, every=5, clock=lambda: now[0]) as shown:
        for second in (1, 2, 6, 7, 8, 12):  # a window checked at each of these seconds
            now[0] = second
            shown.advance()
    assert out.getvalue().splitlines() == [
        "groundwatch drift: 3 of 10 windows (30%)",  # 6 s after the start
        "groundwatch drift: 6 of 10 windows (60%)",  # 12 s: 6 s after the last line
        "groundwatch drift: 6 of 10 windows (60%)",  # the end
    ]


def test_without_a_total_the_line_is_a_plain_count():
    out = io.StringIO()
    with Progress("compact", unit="partitions", stream=out) as shown:
        shown.advance(4)
    assert out.getvalue() == "groundwatch compact: 4 partitions\n"


def test_on_a_terminal_a_bar():
    terminal = _Terminal()
    with Progress("audit", total=3, stream=terminal) as shown:
        shown.update_to(3)
    assert "\r" in terminal.getvalue() and "3/3" in terminal.getvalue() and "groundwatch audit" in terminal.getvalue()


def test_a_run_counts_what_its_workers_read():
    out = io.StringIO()
    shown = Progress("audit", total=25, stream=out)
    with counted_run(shown, poll_seconds=0.05) as folder:
        with beam.Pipeline(runner="FnApiRunner") as p:
            numbers = p | beam.Create(range(25))
            numbers | "CountProgress" >> CountMessages(folder)
    assert shown.done == 25
    assert out.getvalue().splitlines()[-1] == "groundwatch audit: 25 of 25 messages (100%)"


@pytest.fixture(scope="module")
def small_traffic(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("traffic") / "small.jsonl"
    with open(sample_traffic_path(), encoding="utf-8") as lines:
        path.write_text("".join(itertools.islice(lines, 40)))
    return str(path)


def test_audit_drift_report_and_compact_say_how_far_they_got(small_traffic, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    assert groundwatch(["audit", "--input", small_traffic, "--lake", lake]) == 0
    assert "groundwatch audit: 40 of 40 messages (100%)" in capsys.readouterr().err.splitlines()
    assert groundwatch(["drift", "--lake", lake, "--no-workspace"]) == 0
    windows = capsys.readouterr().err.splitlines()[-1]
    assert windows.startswith("groundwatch drift: ") and windows.endswith(" windows (100%)"), windows
    assert groundwatch(["report", "--lake", lake, "--out", str(tmp_path / "report.html")]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == "groundwatch report: 3 of 3 steps (100%)"
    assert groundwatch(["compact", "--lake", lake]) == 0
    partitions = capsys.readouterr().err.splitlines()[-1]
    assert partitions.startswith("groundwatch compact: ") and partitions.endswith(" partitions"), partitions


def _audit(traffic: str, lake: str, *flags: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pipelines.cli", "audit", "--input", traffic, "--lake", lake, *flags]
    command += ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)


@pytest.mark.server  # the multi-process FnApiRunner serves its workers over gRPC on 127.0.0.1
def test_beams_log_lines_show_only_with_verbose(small_traffic, tmp_path):
    quiet = _audit(small_traffic, str(tmp_path / "quiet"))
    assert quiet.returncode == 0, quiet.stderr
    lines = quiet.stderr.splitlines()
    assert all(line.startswith("groundwatch audit: ") for line in lines), quiet.stderr  # progress, nothing else
    assert lines[-1] == "groundwatch audit: 40 of 40 messages (100%)"
    assert "audited" in quiet.stdout
    verbose = _audit(small_traffic, str(tmp_path / "verbose"), "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert "apache_beam.runners.worker.sdk_worker" in verbose.stderr  # the lines set aside are Beam's
