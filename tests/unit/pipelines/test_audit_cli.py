"""`groundwatch audit` from the shell on real-looking logs and on broken compressed files.

The real command runs in a subprocess (with this checkout first on PYTHONPATH): what a user sees, counts
that account for every line, the unknown fields in the lake's `extra` column read back with DuckDB's JSON
functions, and exit 2 with the file named, no traceback and no lake, for a `.gz` that is not gzip or is cut.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from tests.support.audit_messages import message, raw

ROOT = Path(__file__).resolve().parents[3]


def _audit(input_path: Path, lake: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "audit", "--input", str(input_path), "--lake", str(lake)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(input_path.parent),
    )


def _count(out: str, name: str) -> int:
    return int(re.search(rf"^{name}\s+(\d+)", out, re.MULTILINE).group(1))


REAL_LOGS = [
    raw(message("latency", latency_ms=12, trace_id="t-1", metadata={"tenant": "acme", "risk_level": "HIGH"})),
    b"",
    raw(message("region", metadata={"tenant": "acme", "region": "eu"})),
    b" ",
    b"\t",
    b"\x0b",
    b"\x0c",
    b"\r",
    b"\xef\xbb\xbf" + raw(message("bom")),
    raw(message("null-metadata", metadata=None)),
    raw(message("digits", timestamp="1764432000000")),
    raw(message("naive", timestamp="2026-11-29T09:00:00")),
    raw({k: v for k, v in message("no-answer", latency_ms=5).items() if k != "answer"}),
    b"",
]


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real-logs")
    path = folder / "logs.jsonl"
    path.write_bytes(b"\n".join(REAL_LOGS) + b"\n")
    result = _audit(path, folder / "lake")
    return result, folder / "lake"


def test_real_logs_are_audited_and_every_line_is_counted(audited):
    result, _ = audited
    assert result.returncode == 0, result.stderr
    out = result.stdout
    read, blank = _count(out, "read"), _count(out, "skipped blank")
    assert (read, blank) == (7, 7) and read + blank == len(REAL_LOGS)
    assert (_count(out, "audited"), _count(out, "sampled out"), _count(out, "dead-lettered")) == (5, 0, 2)
    assert "missing_field: 1, timestamp_without_zone: 1" in out
    assert _count(out, "unknown fields") == 2  # latency, region (no-answer has one too, but is not valid)


def test_unknown_fields_are_queryable_in_the_lake_with_duckdb_json_functions(audited):
    _, lake = audited
    con = connect_lake(str(lake))
    rows = con.execute(
        "SELECT response_id, json_extract(extra, '$.latency_ms')::INTEGER, json_extract_string(extra, '$.trace_id'),"
        " json_extract_string(extra, '$.metadata.region'), risk_level FROM responses ORDER BY response_id"
    ).fetchall()
    assert rows == [
        ("bom", None, None, None, "medium"),
        ("digits", None, None, None, "medium"),
        ("latency", 12, "t-1", None, "high"),
        ("null-metadata", None, None, None, "medium"),
        ("region", None, None, "eu", "medium"),
    ]
    assert con.execute("SELECT count(*) FROM responses WHERE extra IS NULL").fetchone()[0] == 3
    digits = con.execute("SELECT event_time FROM responses WHERE response_id = 'digits'").fetchone()[0]
    assert digits.isoformat() == "2025-11-29T16:00:00+00:00"  # epoch milliseconds, as the number would be


def test_dead_letters_keep_their_reason_and_original_bytes(audited):
    _, lake = audited
    rows = (
        connect_lake(str(lake))
        .execute("SELECT origin_offset, split_part(error, ':', 1), error, raw_payload FROM dead_letters ORDER BY 1")
        .fetchall()
    )
    assert [(offset, reason) for offset, reason, _, _ in rows] == [
        (12, "timestamp_without_zone"),
        (13, "missing_field"),
    ]
    assert "'2026-11-29T09:00:00' has no time zone; expected a zone (Z or +hh:mm) or epoch milliseconds" in rows[0][2]
    assert [payload for *_, payload in rows] == [REAL_LOGS[11], REAL_LOGS[12]]


def _refused(result: subprocess.CompletedProcess, lake: Path, name: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and name in result.stderr
    assert not lake.exists()


def test_a_gz_input_that_is_not_gzip_is_refused_with_exit_2(tmp_path, capsys):
    """Refused while the flags are checked, before a pipeline is built (so in this process: the truncated case
    below runs the real command)."""
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(raw(message()) + b"\n")
    code = groundwatch(["audit", "--input", str(path), "--lake", str(tmp_path / "lake")])
    result = subprocess.CompletedProcess([], code, "", capsys.readouterr().err)
    _refused(result, tmp_path / "lake", "plain.jsonl.gz")
    assert "not readable as gzip" in result.stderr


def test_a_truncated_gzip_input_fails_instead_of_auditing_part_of_it(tmp_path):
    data = gzip.compress(b"".join(raw(message(f"r-{i}")) + b"\n" for i in range(2000)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    result = _audit(path, tmp_path / "lake")
    _refused(result, tmp_path / "lake", "cut.jsonl.gz")
    assert "truncated" in result.stderr


def test_counts_add_up_with_blank_lines_over_several_passes(tmp_path):
    from pipelines.runner.bounded import run_audit as run

    path = tmp_path / "logs.jsonl"
    path.write_bytes(b"\n".join(REAL_LOGS) + b"\n")
    printed: list[str] = []
    counts = run(
        [f"--input={path}", f"--lake={tmp_path / 'lake'}", "--max_records_per_run=3", "--runner=FnApiRunner"],
        out=printed.append,
    )
    assert "passes         3 for 7 messages (at most 3 each)" in printed
    assert (counts.read, counts.skipped_blank) == (7, 7) and counts.read + counts.skipped_blank == len(REAL_LOGS)
    assert counts.adds_up and (counts.audited, counts.dead_lettered, counts.with_unknown_fields) == (5, 2, 2)
    assert re.search(r"^skipped blank\s+7\b", "\n".join(printed), re.MULTILINE)
