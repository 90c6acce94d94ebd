"""groundwatch on Apache Flink (marker `flink`): a local standalone cluster (JobManager, one TaskManager with 2
slots) behind Beam's Flink job server, started once for the session (`tests.support.flink_fixtures`).

- the sample traffic audited on Flink with docs/flink.md's flags (parallelism 2) leaves, table by table, the
  rows the FnApiRunner leaves (floats within 1e-9; the wall-clock stamps excluded);
- the streaming monitor on Flink, with the page's flags, audits every produced response into the lake, commits
  the group's offsets to the end, and stopped by SIGTERM cancels its job, which ends CANCELED (not FAILED);
- a SIGKILL of the TaskManager during a bounded audit fails the job; a re-run into the same lake leaves each
  response counted once by the lake views.

Waiting is bounded (a test fails when its condition is not reached within minutes), never a speed assertion.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from dashboards.views import connect_lake
from pipelines.traffic.synthetic import generate_jsonl, write_jsonl
from schemas import TABLES
from tests.support.flink_fixtures import (
    RUN_TIMEOUT_S,
    audit_process,
    documented_flags,
    finished,
    flink_argv,
    flink_jobs,
    log_tail,
    monitor_process,
    produce_into_stream,
    working_dirs,
)
from tests.support.kafka_fixtures import wait_for
from tests.support.lake_compare import assert_same_tables

pytestmark = [pytest.mark.flink]


def test_audit_on_flink_gives_the_rows_of_the_fnapirunner(flink_cluster, sample_lake_fnapi, tmp_path):
    # docs/flink.md's audit as written (its job endpoint this cluster's), of the sample traffic.
    on_flink, log = tmp_path / "flink", tmp_path / "audit.log"
    beam_argv = documented_flags(flink_cluster, "Options", "audit")
    assert finished(audit_process(on_flink, *beam_argv, log_path=log), log) == 0, log_tail(log)
    # responses, sentences, citations, claims, window metrics and dead letters: not empty
    assert assert_same_tables(sample_lake_fnapi, str(on_flink), TABLES) > 3000


def test_monitor_on_flink_audits_the_stream_and_sigterm_cancels_its_job(
    flink_cluster, kafka_bootstrap, new_topic, tmp_path
):
    topic, lake, log, count = new_topic(partitions=2), tmp_path / "lake", tmp_path / "monitor.log", 80
    before = set(flink_jobs(flink_cluster))
    drift = ["--drift-every-seconds", "2"]  # the drift stage beside the stream: it must work on Flink too
    beam_argv = documented_flags(flink_cluster, "Options", "monitor")  # the page's, with this cluster's ports
    monitor = monitor_process(kafka_bootstrap, topic, lake, [*beam_argv, *drift], log)
    try:
        produce_into_stream(kafka_bootstrap, topic, lake, count, 20, monitor, log)
        wait_for(
            lambda: list((lake / "drift_checks").rglob("*.parquet")) if (lake / "drift_checks").is_dir() else None,
            timeout_s=60,
            what="drift_checks written by the monitor's drift stage",
        )
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
    assert state == "CANCELED", log_tail(log)


def _job_running(flink, before: set[str], audit: subprocess.Popen, log_path) -> str | None:
    """The new job's id once all its tasks run."""
    if audit.poll() is not None:
        pytest.fail(f"the audit ended before the TaskManager was killed:\n{log_tail(log_path)}")
    try:
        for jid, state in flink_jobs(flink).items():
            if jid not in before and state == "RUNNING":
                vertices = flink.rest(f"/jobs/{jid}")["vertices"]
                if vertices and all(v["status"] in ("RUNNING", "FINISHED") for v in vertices):
                    return jid
    except OSError:
        # The JobManager, busy taking the job on two loaded cores, let one REST call pass its 5 s (seen in CI):
        # not yet, ask again; `wait_for`'s own deadline still bounds the wait.
        return None
    return None


def test_a_killed_taskmanager_fails_the_audit_and_a_rerun_counts_each_response_once(flink_cluster, tmp_path):
    # Enough responses that the audit is still running a second after its tasks start, on an idle machine too
    # (the 308 lines of the sample were done within two seconds there).
    traffic, count = tmp_path / "traffic.jsonl", 3000
    write_jsonl(generate_jsonl(count, seed=31, malformed=False), str(traffic))
    lake, log = tmp_path / "lake", tmp_path / "audit.log"
    before = set(flink_jobs(flink_cluster))
    audit = audit_process(lake, *flink_argv(flink_cluster, parallelism=2), log_path=log, input_path=str(traffic))
    try:
        job = wait_for(lambda: _job_running(flink_cluster, before, audit, log), timeout_s=RUN_TIMEOUT_S, every_s=0.2,
                       what="the audit's tasks running")  # fmt: skip
        time.sleep(1)  # into the audit, past the read
        killed_working_dirs = working_dirs(flink_cluster, "task_manager")
        flink_cluster.kill("task_manager")
        first = finished(audit, log)
    finally:
        flink_cluster.start(cluster=True)  # a TaskManager again, for this test's re-run and the tests after it
    # No checkpoints, so no restart strategy: the job fails, and so does the command that waited for it.
    assert (first, flink_jobs(flink_cluster)[job]) == (1, "FAILED"), log_tail(log)
    # What the killed TaskManager left (its working directory, with the job's jars) went when it started again.
    left = killed_working_dirs & working_dirs(flink_cluster, "task_manager")
    assert killed_working_dirs and not left, f"working directories {killed_working_dirs}, {left} left"

    rerun = audit_process(lake, *flink_argv(flink_cluster, parallelism=2), log_path=log, input_path=str(traffic))
    assert finished(rerun, log) == 0, log_tail(log)
    con = connect_lake(str(lake))
    responses, distinct = con.execute("SELECT count(*), count(DISTINCT response_id) FROM responses").fetchone()
    sentences, sentence_keys = con.execute(
        "SELECT count(*), count(DISTINCT (response_id, sentence_index)) FROM sentences"
    ).fetchone()
    assert responses == distinct == count
    assert sentences == sentence_keys > responses
    assert con.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == 0
