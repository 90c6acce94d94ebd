"""groundwatch on a local Flink cluster of two TaskManagers of one slot, each with a Beam Python worker pool beside
it (marker `flink`; what `scripts/flink.sh start --cluster --taskmanagers 2` starts), run with the flags it prints
(`--environment_type=EXTERNAL`, parallelism 2):

- the sample traffic audited there leaves, table by table, the rows the FnApiRunner leaves (floats within 1e-9;
  the wall-clock stamps excluded), the audit stage read records on both TaskManagers (Flink's counts per
  subtask), both pools started workers for it (their logs), both TaskManagers read as many of the input's line
  ranges in the stage that audits them, the job staged no jars (its options name `NothingToStage`), and its
  workers ended with no traceback or error in the pools' logs (Flink drops their streams at many jobs' ends);
- a Kafka topic of two partitions caught up there (`--until-caught-up`) leaves the rows the FnApiRunner leaves for
  the same topic, every offset once, the group's offsets committed to the end, with both TaskManagers auditing
  (and, as after the audit, no traceback or error in the pools' logs);
- `scripts/flink.sh status --json` lists both TaskManagers' pools, alive, with their logs, and says nothing on
  stderr;
- docs/flink.md's walk from a fresh machine to a stream writing a bucket runs as written: its bucket, its
  `groundwatch` commands with `$FLINK` the flags `scripts/flink.sh flags` prints for this cluster (the page's
  broker replaced by the session's). The audit into `s3://audits/groundwatch` leaves the FnApiRunner's rows and
  nothing but Parquet objects and manifest entries; the page's query prints what it prints over the FnApiRunner's
  lake; the stream's query shows every produced response once (polled where the page sleeps 120 s); SIGTERM ends
  the monitor (130) and its job CANCELED; the secret key is in no log and no object. The pools hold the
  credentials because the fixture exports them before starting the cluster, as the page does.

Each TaskManager asks its own pool for workers (`scripts/flink_pools.py`), so work on both TaskManagers is work
in processes of both pools. Waiting is bounded, never a speed assertion.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipelines.produce import generated_messages, produce_messages
from schemas import TABLES
from tests.support.documented import ROOT, as_written, commands, groundwatch_bin
from tests.support.flink_fixtures import (
    FLINK_PAGE,
    RUN_TIMEOUT_S,
    finished,
    flink_jobs,
    log_tail,
    monitor_process,
    pool_logs,
    stage_records,
    started_workers,
    workers_ended_quietly,
)
from tests.support.kafka_fixtures import (
    committed_offsets,
    lake_accounting,
    remove_topic,
    wait_for,
)
from tests.support.lake_compare import assert_same_tables
from tests.support.s3_fixtures import S3_SECRET, bucket_keys, get_object
from tests.support.scripts import load_script
from transforms.io.lake.manifest import ENTRY_NAME

pytestmark = [pytest.mark.flink]

WALKTHROUGH = "From a fresh machine to a stream on Flink writing a bucket"
DOCUMENTED_BROKER = "127.0.0.1:39092"


def _new_job(flink, before: set[str]) -> str:
    (job,) = set(flink_jobs(flink)) - before
    return job


def _both_did_work(flink, job: str, workers_before: list[int]) -> dict[str, int]:
    """The records each TaskManager's audit stage read, once both have read some and both pools started workers."""
    records = stage_records(flink, job)
    assert len(records) == 2 and min(records.values()) > 0, records  # both TaskManagers audited
    started = [after - before for after, before in zip(started_workers(flink), workers_before, strict=True)]
    assert len(started) == 2 and min(started) > 0, started  # in workers of both pools
    return records


def _read_side_by_side(flink, job: str, records: dict[str, int]) -> None:
    """Both TaskManagers read the input, as many line ranges each (Flink deals them round-robin), and audit what
    they read in the same stage: a line leaves the worker that read it only as lake rows. Reading each file
    whole, as a URL is read, gives one TaskManager every file; a side input read by the parse step (Beam's Java
    fuser starts a stage at each) sent every line through Flink between the read and the audit."""
    names = [vertex["name"] for vertex in flink.rest(f"/jobs/{job}")["vertices"]]
    assert any("ReadJsonl" in name and "VerifySentences" in name for name in names), names
    # What that stage reads (`records`, by TaskManager) are the line ranges.
    assert len(records) == 2 and min(records.values()) > 0 and len(set(records.values())) == 1, records


def _staged_nothing(flink, job: str) -> None:
    """The job chose the detector that stages no jars (`scripts/flink_staging.py`): its options say so."""
    options = flink.rest(f"/jobs/{job}/config")["execution-config"]["user-config"]
    assert options.get("pipelineResourcesDetectorFactoryClass") == "dev.groundwatch.flink.NothingToStage", options


def test_audit_on_worker_pools_gives_the_rows_of_the_fnapirunner(pooled_flink, sample_lake_fnapi, tmp_path):
    # The page's audit on the pools, as written, from the checkout (its input's path is the sample traffic's, so
    # the rows' origin is the reference's); only the lake is the test's own folder.
    (audit,) = commands(FLINK_PAGE, "LOOPBACK or EXTERNAL workers")
    lake = tmp_path / "lake"
    command = [
        groundwatch_bin(),
        *as_written(audit, {"./groundwatch-lake": str(lake)}, {"$FLINK": _flags(pooled_flink)}),
    ]
    jobs, workers = set(flink_jobs(pooled_flink)), started_workers(pooled_flink)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    # responses, sentences, citations, claims, window metrics and dead letters: not empty
    assert assert_same_tables(sample_lake_fnapi, str(lake), TABLES) > 3000
    job = _new_job(pooled_flink, jobs)
    _read_side_by_side(pooled_flink, job, _both_did_work(pooled_flink, job, workers))
    _staged_nothing(pooled_flink, job)
    workers_ended_quietly(pooled_flink)


def test_the_cluster_jvms_run_with_the_client_compiler_and_the_serial_collector(pooled_flink):
    """The JobManager, both TaskManagers and the job server before them get `CLUSTER_JVM_FLAGS` (a job's JVM CPU
    halved), ahead of the main class so the JVM reads them."""
    flags = list(load_script("flink_cluster").CLUSTER_JVM_FLAGS)
    assert flags
    for role in ("job_manager", "task_manager", "task_manager_1", "job_server"):
        pid = pooled_flink.pid(role)
        assert pid is not None, role
        argv = [arg.decode() for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
        main = next(i for i, arg in enumerate(argv) if arg.startswith("org.apache."))
        assert all(flag in argv[:main] for flag in flags), (role, argv[:main])


def test_status_json_lists_both_pools_and_says_nothing_else(pooled_flink):
    """`scripts/flink.sh status --json` on the running cluster: exit 0, the job service answering, each
    TaskManager's pool with its address, live pid and log; stderr empty (Beam's import notice, printed by the
    status check's import of Beam before groundwatch's filter was loaded first, is gone)."""
    env = {**os.environ, "GROUNDWATCH_FLINK_HOME": str(pooled_flink.home)}
    done = subprocess.run(
        [str(ROOT / "scripts" / "flink.sh"), "status", "--json"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    state = json.loads(done.stdout)
    assert state["answers"] is True and state["task_managers"] == 2
    listed = [(p["task_manager"], p["address"], p["alive"]) for p in state["pools"]]
    assert listed == [(p["task_manager"], p["address"], True) for p in pooled_flink.pools()], listed
    assert all(load_script("maven_libs").pid_alive(p["pid"]) and Path(p["log"]).is_file() for p in state["pools"])


def test_a_topic_caught_up_on_worker_pools_gives_the_rows_of_the_fnapirunner(
    pooled_flink, kafka_bootstrap, new_topic, tmp_path
):
    topic, count = new_topic(partitions=2), 120
    messages = generated_messages(count, seed=43, malformed_fraction=0.05, start=datetime.now(UTC))
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == count
    caught_up = ["--until-caught-up", "--drift-every-seconds", "0"]
    reference, lake, log = tmp_path / "fnapi", tmp_path / "flink", tmp_path / "monitor.log"
    # The reference reads the topic in a group of its own, so the run on Flink still finds it unread.
    on_fnapi = monitor_process(kafka_bootstrap, topic, reference, [*caught_up, "--group-id", f"ref-{topic}"], log)
    assert finished(on_fnapi, log) == 0, log_tail(log)

    jobs, workers = set(flink_jobs(pooled_flink)), started_workers(pooled_flink)
    on_flink = monitor_process(kafka_bootstrap, topic, lake, [*caught_up, *pooled_flink.runner_flags()], log)
    assert finished(on_flink, log) == 0, log_tail(log)

    found = lake_accounting(str(lake), topic)
    offsets = found["responses"] + found["dead_letters"]
    assert len(offsets) == len(set(offsets)) == count and found["dead_letters"]
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, partitions=2)
    assert committed == ends
    assert assert_same_tables(str(reference), str(lake), TABLES) > count
    _both_did_work(pooled_flink, _new_job(pooled_flink, jobs), workers)
    workers_ended_quietly(pooled_flink)


def _flags(flink) -> list[str]:
    """`FLINK=$(scripts/flink.sh flags)`, as the page sets it, for the cluster of `flink`."""
    env = {**os.environ, "GROUNDWATCH_FLINK_HOME": str(flink.home)}
    done = subprocess.run([str(ROOT / "scripts" / "flink.sh"), "flags"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "--environment_type=EXTERNAL" in done.stdout, done.stderr
    return done.stdout.split()


def _run_as(command: list[str], flags: list[str], bootstrap: str = DOCUMENTED_BROKER) -> list[str]:
    """The page's command as the installed `groundwatch` runs it, `$FLINK` set, the session's broker in it."""
    return [groundwatch_bin(), *as_written(command, {DOCUMENTED_BROKER: bootstrap}, {"$FLINK": flags})]


def test_the_walk_from_a_fresh_machine_to_a_stream_into_a_bucket_runs_as_written(
    pooled_flink, s3_env, kafka_bootstrap, sample_lake_fnapi, tmp_path
):
    audit, query, produce, monitor, stream_query = commands(FLINK_PAGE, WALKTHROUGH)
    assert [c[1] for c in (audit, query, produce, monitor, stream_query)] == [
        "audit", "query", "produce", "monitor", "query"]  # fmt: skip
    flags = _flags(pooled_flink)
    run = {"capture_output": True, "text": True, "timeout": 600, "cwd": ROOT, "check": False}
    (create,) = re.findall(r"^python -c (\".*create_bucket.*\")$", FLINK_PAGE.read_text(), re.M)
    made = subprocess.run([sys.executable, "-c", *shlex.split(create)], **run)
    assert made.returncode == 0, made.stderr

    audited = subprocess.run(_run_as(audit, flags, kafka_bootstrap), **run)
    assert audited.returncode == 0, audited.stderr[-3000:]
    lake = audit[audit.index("--lake") + 1]
    keys = bucket_keys("audits")
    entries = [k for k in keys if k.startswith("groundwatch/_manifest/")]
    assert entries and all(ENTRY_NAME.match(k.rsplit("/", 1)[1]) for k in entries), entries
    assert all(k.endswith(".parquet") for k in set(keys) - set(entries)), keys
    assert assert_same_tables(sample_lake_fnapi, lake, TABLES) > 3000
    in_bucket = subprocess.run(_run_as(query, flags, kafka_bootstrap), **run)
    over_folder = [sample_lake_fnapi if w == lake else w for w in _run_as(query, flags, kafka_bootstrap)]
    assert in_bucket.returncode == 0 and in_bucket.stdout.count("\n") > 8, in_bucket.stderr
    assert in_bucket.stdout == subprocess.run(over_folder, **run).stdout

    topic = monitor[monitor.index("--topic") + 1]
    count = int(produce[produce.index("--generate") + 1])
    # From a fresh machine: the topic an earlier run left on a kept broker holds the same generated ids, unread
    # where its monitor was stopped before committing, and this stream would audit them again.
    remove_topic(kafka_bootstrap, topic)
    expected = count
    produced = subprocess.run(_run_as(produce, flags, kafka_bootstrap), **run)
    assert produced.returncode == 0, produced.stderr[-2000:]
    jobs, log = set(flink_jobs(pooled_flink)), tmp_path / "monitor.log"
    with open(log, "wb") as out:
        streaming = subprocess.Popen(_run_as(monitor, flags, kafka_bootstrap), stdout=out, stderr=out, cwd=ROOT)
    try:

        def counted() -> list[int] | None:
            assert streaming.poll() is None, log_tail(log)
            done = subprocess.run(_run_as(stream_query, flags, kafka_bootstrap), **run)
            rows = re.findall(r"^(\d+)\s+(\d+)\s*$", done.stdout, re.M)  # none while the lake is not there yet
            numbers = [int(n) for n in rows[0]] if rows else []
            return numbers if numbers and numbers[0] >= expected else None

        found = wait_for(counted, timeout_s=300, every_s=5, what=f"{expected} responses in the page's stream query")
        assert found == [expected, expected]  # every produced response, each once
        streaming.send_signal(signal.SIGTERM)
        assert streaming.wait(timeout=180) == 130, log_tail(log)
    finally:
        if streaming.poll() is None:
            streaming.kill()
    (job,) = set(flink_jobs(pooled_flink)) - jobs
    wait_for(lambda: flink_jobs(pooled_flink)[job] == "CANCELED", timeout_s=120, what=f"job {job} CANCELED")
    logs = [log.read_text(errors="replace"), audited.stderr, audited.stdout]
    logs += pool_logs(pooled_flink)
    assert not any(S3_SECRET in text for text in logs)
    assert not any(S3_SECRET.encode() in get_object("audits", key) for key in bucket_keys("audits"))
