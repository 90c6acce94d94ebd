"""groundwatch on Apache Flink (marker `flink`): a local standalone cluster (JobManager, one TaskManager with 2
slots) behind Beam's Flink job server, started once for the session (`tests.support.flink_fixtures`).

- the sample traffic audited on Flink at parallelism 2 leaves, table by table, the rows the FnApiRunner leaves
  (floats within 1e-9; the wall-clock stamps excluded);
- the streaming monitor on Flink audits every produced response into the lake, commits the group's offsets to
  the end, and stopped by SIGTERM cancels its job, which ends CANCELED (not FAILED);
- a SIGKILL of the TaskManager during a bounded audit fails the job; a re-run into the same lake leaves each
  response counted once by the lake views.

Waiting is bounded (a test fails when its condition is not reached within minutes), never a speed assertion.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import pytest

from dashboards.views import connect_lake
from pipelines.demo import sample_traffic_path
from pipelines.traffic.synthetic import generate_jsonl, write_jsonl
from schemas import TABLES
from tests.support.flink_fixtures import flink_argv, flink_jobs
from tests.support.kafka_fixtures import committed_offsets, lake_accounting, wait_for

pytestmark = [pytest.mark.flink]

RUN_TIMEOUT_S = 300
WALL_CLOCK_COLUMNS = {spec.version_column for spec in TABLES.values()}
"""When a row was audited, received, computed, checked, updated: each table's version column is a wall-clock
stamp of the run that wrote it (schemas.lake.register_table), so two runs differ there and only there."""


def _audit(lake, *beam_options: str, log_path=None, input_path: str | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "pipelines.cli", "audit", "--input", input_path or sample_traffic_path(),
               "--lake", str(lake), *beam_options]  # fmt: skip
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _finished(process: subprocess.Popen, log_path, timeout_s: float = RUN_TIMEOUT_S) -> int:
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the run did not end within {timeout_s}s:\n{_tail(log_path)}")


def _tail(log_path, chars: int = 4000) -> str:
    return open(log_path, errors="replace").read()[-chars:] if log_path and os.path.exists(log_path) else ""


def _rows(lake, table: str) -> tuple[list[str], list[tuple]]:
    con = connect_lake(str(lake))
    columns = [c for (c,) in con.execute(f"SELECT column_name FROM (DESCRIBE {table})").fetchall()]
    kept = [c for c in columns if c not in WALL_CLOCK_COLUMNS]
    quoted = ", ".join(f'"{c}"' for c in kept)  # some column names are SQL keywords (check)
    rows = con.execute(f"SELECT {quoted} FROM {table} ORDER BY ALL").fetchall()
    return kept, rows


def _same(a, b) -> bool:
    """Equal values, floats within 1e-9 (summation order differs between runners), compared inside lists too."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_audit_on_flink_gives_the_rows_of_the_fnapirunner(flink_cluster, tmp_path):
    local, on_flink, log = tmp_path / "local", tmp_path / "flink", tmp_path / "audit.log"
    assert _finished(_audit(local, log_path=log), log) == 0, _tail(log)
    assert _finished(_audit(on_flink, *flink_argv(flink_cluster, parallelism=2), log_path=log), log) == 0, _tail(log)

    compared = 0
    for table in TABLES:
        columns, expected = _rows(local, table)
        got_columns, got = _rows(on_flink, table)
        assert got_columns == columns, table
        assert len(got) == len(expected), f"{table}: {len(got)} rows on Flink, {len(expected)} on the FnApiRunner"
        for want, row in zip(expected, got, strict=True):
            assert _same(want, row), f"{table}: {dict(zip(columns, row, strict=True))} != {want}"
        compared += len(expected)
    assert compared > 3000  # responses, sentences, citations, claims, window metrics and dead letters, not empty


def _monitor(bootstrap: str, topic: str, lake, flink, log_path) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
        "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5", *flink_argv(flink, parallelism=2),
    ]  # fmt: skip
    with open(log_path, "ab") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _all_in_lake(bootstrap: str, topic: str, lake, count: int, monitor: subprocess.Popen, log_path):
    if monitor.poll() is not None:
        pytest.fail(f"the monitor exited with {monitor.returncode}:\n{_tail(log_path)}")
    if not os.path.isdir(lake):
        return None
    found = lake_accounting(str(lake), topic)
    offsets = set(found["responses"]) | set(found["dead_letters"])
    committed, ends = committed_offsets(bootstrap, f"g-{topic}", topic, partitions=2)
    return len(offsets) == count and all((committed[p] or 0) == ends[p] for p in ends) and found


def test_monitor_on_flink_audits_the_stream_and_sigterm_cancels_its_job(
    flink_cluster, kafka_bootstrap, new_topic, tmp_path
):
    from datetime import UTC, datetime

    from pipelines.produce import generated_messages, produce_messages

    topic, lake, log, count = new_topic(partitions=2), tmp_path / "lake", tmp_path / "monitor.log", 80
    before = set(flink_jobs(flink_cluster))
    monitor = _monitor(kafka_bootstrap, topic, lake, flink_cluster, log)
    try:
        messages = generated_messages(count, seed=20, malformed_fraction=0.05, start=datetime.now(UTC))
        assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages, rate=100) == count
        found = wait_for(
            lambda: _all_in_lake(kafka_bootstrap, topic, lake, count, monitor, log),
            timeout_s=RUN_TIMEOUT_S,
            what=f"{count} responses in the lake, offsets committed",
        )
        assert len(found["responses"]) == len(set(found["responses"])) and found["dead_letters"]
        (job,) = [jid for jid, state in flink_jobs(flink_cluster).items() if jid not in before and state == "RUNNING"]
        monitor.send_signal(signal.SIGTERM)
        monitor.wait(timeout=180)
    finally:
        if monitor.poll() is None:
            os.killpg(monitor.pid, signal.SIGKILL)
    state = wait_for(
        lambda: (s := flink_jobs(flink_cluster)[job]) in ("CANCELED", "FAILED", "FINISHED") and s,
        timeout_s=60,
        what="the monitor's job ended",
    )
    assert state == "CANCELED", _tail(log)


def _job_running(flink, before: set[str], audit: subprocess.Popen, log_path) -> str | None:
    """The new job's id once all its tasks run."""
    if audit.poll() is not None:
        pytest.fail(f"the audit ended before the TaskManager was killed:\n{_tail(log_path)}")
    for jid, state in flink_jobs(flink).items():
        if jid not in before and state == "RUNNING":
            vertices = flink.rest(f"/jobs/{jid}")["vertices"]
            if vertices and all(v["status"] in ("RUNNING", "FINISHED") for v in vertices):
                return jid
    return None


def test_a_killed_taskmanager_fails_the_audit_and_a_rerun_counts_each_response_once(flink_cluster, tmp_path):
    # Enough responses that the audit is still running a second after its tasks start, on an idle machine too
    # (the 308 lines of the sample were done within two seconds there).
    traffic, count = tmp_path / "traffic.jsonl", 3000
    write_jsonl(generate_jsonl(count, seed=31, malformed=False), str(traffic))
    lake, log = tmp_path / "lake", tmp_path / "audit.log"
    before = set(flink_jobs(flink_cluster))
    audit = _audit(lake, *flink_argv(flink_cluster, parallelism=2), log_path=log, input_path=str(traffic))
    try:
        job = wait_for(lambda: _job_running(flink_cluster, before, audit, log), timeout_s=RUN_TIMEOUT_S, every_s=0.2,
                       what="the audit's tasks running")  # fmt: skip
        time.sleep(1)  # into the audit, past the read
        flink_cluster.kill("task_manager")
        first = _finished(audit, log)
    finally:
        flink_cluster.start(cluster=True)  # a TaskManager again, for this test's re-run and the tests after it
    # No checkpoints, so no restart strategy: the job fails, and so does the command that waited for it.
    assert (first, flink_jobs(flink_cluster)[job]) == (1, "FAILED"), _tail(log)

    rerun = _audit(lake, *flink_argv(flink_cluster, parallelism=2), log_path=log, input_path=str(traffic))
    assert _finished(rerun, log) == 0, _tail(log)
    con = connect_lake(str(lake))
    responses, distinct = con.execute("SELECT count(*), count(DISTINCT response_id) FROM responses").fetchone()
    sentences, sentence_keys = con.execute(
        "SELECT count(*), count(DISTINCT (response_id, sentence_index)) FROM sentences"
    ).fetchone()
    assert responses == distinct == count
    assert sentences == sentence_keys > responses
    assert con.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == 0
