"""`groundwatch replay` re-runs failed judge verifications from the judge_calls log of a real lake."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from schemas import grounded_probability
from tests.support.audit_messages import message, raw
from tests.support.openai_server import OpenAIServer, Scripted
from tests.support.ports import free_port

ANSWER = "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024. Potassium was 4.2 mmol/L."


def judge_flags(server: OpenAIServer) -> list[str]:
    return ["--judge-base-url", server.base_url, "--judge-model", "scripted-judge"]


@pytest.mark.server
def test_replay_settles_what_failed_validation_and_leaves_the_rest(tmp_path):
    traffic, lake = tmp_path / "traffic.jsonl", tmp_path / "lake"
    lines = [raw(message(f"r-{i}", answer=ANSWER, timestamp=f"2026-11-29T09:0{i}:10Z")) for i in range(3)]
    traffic.write_bytes(b"\n".join(lines) + b"\n")
    with OpenAIServer() as server:
        server.script(*[Scripted(content='{"answers": []}')] * 3)  # the first call's answer fails three times
        audit = ["audit", "--input", str(traffic), "--lake", str(lake), "--verifier", "openai"]
        audit += [*judge_flags(server), "--judge-answers-per-call", "1", "--judge-max-concurrency", "1"]
        assert groundwatch(audit) == 0
    con = connect_lake(str(lake))
    failed = [
        r
        for (r,) in con.execute(
            "SELECT DISTINCT response_id FROM judge_calls WHERE status = 'judge_validation_failed'"
        ).fetchall()
    ]
    assert len(failed) == 1
    assert con.execute(
        "SELECT list_distinct(list(decided_by)) FROM sentences WHERE response_id = ?", failed
    ).fetchone()[0] == ["heuristic"]

    with OpenAIServer() as server:
        assert groundwatch(["replay", "--lake", str(lake), "--since", "2999-01-01", *judge_flags(server)]) == 0
        assert server.requests == []  # nothing that recent
        assert groundwatch(["replay", "--lake", str(lake), *judge_flags(server)]) == 0
        assert len(server.requests) == 1
        asked = server.requests[0]["messages"][1]["content"]
    assert failed[0] in asked and all(f"r-{i}" not in asked for i in range(3) if f"r-{i}" != failed[0])

    con = connect_lake(str(lake))
    latest = con.execute(
        "SELECT status, attempt FROM judge_calls WHERE response_id = ? ORDER BY called_at DESC LIMIT 1", failed
    ).fetchone()
    assert latest == ("judged", 1)
    assert con.execute(
        "SELECT list_distinct(list(decided_by)) FROM sentences WHERE response_id = ?", failed
    ).fetchone()[0] == ["openai"]
    assert con.execute("SELECT count(*) FROM sentences WHERE response_id = ?", failed).fetchone()[0] == 2
    (written,) = (lake / "sentences").rglob("replay-*.parquet")  # the settled verdicts store their probability
    for row in pq.read_table(written).to_pylist():
        assert row["grounded_probability"] == grounded_probability(row["attribution_verdict"], row["confidence"])
    with OpenAIServer() as server:  # settled: a second replay has nothing to do
        assert groundwatch(["replay", "--lake", str(lake), *judge_flags(server)]) == 0
        assert server.requests == []


def _lake_with_a_failed_validation(tmp_path) -> Path:
    """A lake of one response whose judge answered 'no' three times (judge_validation_failed)."""
    traffic, lake = tmp_path / "traffic.jsonl", tmp_path / "lake"
    traffic.write_bytes(raw(message("r-0", answer=ANSWER)) + b"\n")
    with OpenAIServer() as server:
        server.script(*[Scripted(content="no")] * 3)
        audit = ["audit", "--input", str(traffic), "--lake", str(lake), "--verifier", "openai", *judge_flags(server)]
        assert groundwatch(audit) == 0
    return lake


@pytest.mark.server
def test_replay_reports_items_that_still_fail(tmp_path, capsys):
    lake = _lake_with_a_failed_validation(tmp_path)
    with OpenAIServer() as server:
        server.script(*[Scripted(content="still no")] * 3)
        assert groundwatch(["replay", "--lake", str(lake), *judge_flags(server)]) == 1
    assert "still failing validation 1" in capsys.readouterr().out
    statuses = connect_lake(str(lake)).execute("SELECT status, count(*) FROM judge_calls GROUP BY 1").fetchall()
    assert statuses == [("judge_validation_failed", 6)]


@pytest.mark.server
def test_calibrate_runs_the_judge_and_the_cascade_given_an_endpoint(tmp_path, monkeypatch):
    """`groundwatch calibrate --verifier openai|cascade` against the local server, endpoint from the environment."""
    fixture = Path(__file__).resolve().parents[2] / "data" / "calibration_golden.jsonl"
    with OpenAIServer() as server:
        monkeypatch.setenv("GROUNDWATCH_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("GROUNDWATCH_JUDGE_MODEL", "scripted-judge")
        for verifier in ("openai", "cascade"):
            before = len(server.requests)
            report = tmp_path / verifier
            args = ["calibrate", "--golden", str(fixture), "--verifier", verifier, "--no-citations"]
            assert groundwatch([*args, "--report", str(report), "--bootstrap", "0"]) == 0
            metrics = json.loads((report / "metrics.json").read_text())
            assert sum(map(sum, metrics["summary"]["sentences"]["overall"]["confusion_matrix"])) == 8
            calls = len(server.requests) - before
            assert (calls == 8) if verifier == "openai" else (calls < 8)


@pytest.mark.server
def test_replay_with_the_judge_away_says_so_without_retrying(tmp_path, capsys, caplog):
    """A refused connection is not waited out with retries, and no retry logs a traceback."""
    lake = _lake_with_a_failed_validation(tmp_path)
    away = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    caplog.set_level(logging.WARNING)
    assert groundwatch(["replay", "--lake", str(lake), "--judge-base-url", away, "--judge-model", "m"]) == 1
    assert "still failing" in capsys.readouterr().out
    refused = f"the judge at {away} refused the connection (nothing listens there?)"
    errors = connect_lake(str(lake)).execute("SELECT DISTINCT error FROM judge_calls WHERE error IS NOT NULL")
    assert refused in {row[0] for row in errors.fetchall()}
    assert "retrying" not in caplog.text and "Traceback" not in caplog.text
