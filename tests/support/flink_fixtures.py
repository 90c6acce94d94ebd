"""A local Flink session cluster for the tests marked `flink`: one JobManager, one TaskManager with 2 slots, and
Beam's Flink job server pointed at it (`scripts/flink_cluster.py`), started once per session on free ports in a
folder of the session's own, and stopped at its end. `pytest -m "not flink"` never starts it.
`tests/integration/flink/conftest.py` registers the fixtures for the tests there.

`pooled_flink` is a cluster of two TaskManagers of one slot, each with a Beam Python worker pool beside it (the
EXTERNAL environment; `LocalFlink.runner_flags()` are the options of a run there), once per module that asks for
it; `stage_records` and `started_workers` tell which TaskManagers and pools did a job's work, and
`workers_ended_quietly` that the pools' workers ended without a traceback.

`sample_lake_fnapi` is the sample traffic audited by the FnApiRunner into a local folder, once per session: the
reference the Flink runs are compared with. `audit_process` / `finished` run `groundwatch audit` as a process of
its own (so a test can kill what it started, and its LOOPBACK worker is that process). `monitor_process`
starts `groundwatch monitor`; `produce_into_stream` feeds it and waits until the lake holds every message.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.demo import sample_traffic_path
from tests.support.documented import ROOT, as_written, commands
from tests.support.kafka_fixtures import committed_offsets, lake_accounting, wait_for
from tests.support.s3_fixtures import export_s3_env
from tests.support.scripts import load_script

LocalFlink = load_script("flink_cluster").LocalFlink
maven_libs = load_script("maven_libs")
pools = load_script("flink_pools")

__all__ = [
    "LocalFlink",
    "RUN_TIMEOUT_S",
    "FLINK_PAGE",
    "audit_process",
    "documented_flags",
    "finished",
    "flink_argv",
    "flink_cluster",
    "flink_jobs",
    "pooled_flink",
    "stage_records",
    "started_workers",
    "pool_logs",
    "workers_ended_quietly",
    "log_tail",
    "monitor_process",
    "produce_into_stream",
    "stream_in_lake",
    "sample_lake_fnapi",
    "working_dirs",
]

FLINK_PAGE = ROOT / "docs" / "flink.md"
DOCUMENTED_PORTS = ("localhost:38099", "127.0.0.1:38081-38090", "127.0.0.1:38081")
"""The job endpoint, the mini-cluster's REST range and the JobManager's REST address docs/flink.md writes."""
RUN_TIMEOUT_S = 300
"""How long one run may take before a test gives up on it (a bound, not a speed assertion)."""


@pytest.fixture(scope="session")
def flink_cluster(tmp_path_factory):
    """The running `LocalFlink` (`.endpoint` for `--job_endpoint`, `.rest()` for the JobManager's REST API)."""
    flink = LocalFlink(tmp_path_factory.mktemp("flink"), job_port=0, rest_port=0, pool_port=0, slots=2)
    try:
        flink.start(cluster=True)
        yield flink
    finally:
        flink.stop()


POOLS_START = "scripts/flink.sh start --cluster --taskmanagers 2"
"""How docs/flink.md starts a cluster with worker pools (`pooled_flink` checks that the page still says so)."""


@pytest.fixture(scope="module")
def pooled_flink(tmp_path_factory, s3_server):
    """A running `LocalFlink` of two TaskManagers (one slot each), each with its worker pool, once per module.

    It is started as docs/flink.md starts it (`POOLS_START`), from the project's environment (its `python3` first
    on PATH, as activating it does) and with the test server's S3 credentials exported first: the workers that
    write a bucket take them from their pool. Its state, logs and (free) ports are the module's own
    (`GROUNDWATCH_FLINK_HOME`, the port variables at 0; the shell's other Flink variables unset), and
    `scripts/flink.sh stop` stops it."""
    assert POOLS_START in FLINK_PAGE.read_text(encoding="utf-8").splitlines(), f"{FLINK_PAGE} no longer says it"
    home = tmp_path_factory.mktemp("flink-pools")
    flink = LocalFlink(home, job_port=0, rest_port=0, pool_port=0, task_managers=2)
    command = shlex.split(POOLS_START)
    command[0] = str(ROOT / command[0])
    with pytest.MonkeyPatch.context() as env:
        for name in ("MASTER", "TASKMANAGERS", "SLOTS"):
            env.delenv(f"GROUNDWATCH_FLINK_{name}", raising=False)
        env.setenv("GROUNDWATCH_FLINK_HOME", str(home))
        for port in ("JOB", "REST", "POOL"):
            env.setenv(f"GROUNDWATCH_FLINK_{port}_PORT", "0")
        shim = pools.interpreter_shim(tmp_path_factory.mktemp("bin"), "python3")  # as activating the environment does
        env.setenv("PATH", os.pathsep.join([str(shim), os.environ["PATH"]]))
        export_s3_env(env, s3_server)
        try:
            started = subprocess.run(command, capture_output=True, text=True, timeout=600)
            assert started.returncode == 0, started.stderr[-3000:]
            assert started.stdout.strip() == flink.endpoint, started.stdout  # stdout is the job endpoint alone
        except BaseException:
            _stop_pooled(flink)
            raise
    try:
        yield flink
    finally:
        in_home = working_dirs(flink)
        _stop_pooled(flink)
    assert len(in_home) == 2, f"the TaskManagers' working directories were not in the home: {in_home}"


def working_dirs(flink, roles: str = "task_manager*") -> set[Path]:
    """The working directories (Flink's `tm_<resource id>`) of the TaskManagers `roles` names, in their temporary
    folders in the cluster's home."""
    return set((flink.home / "jvm-tmp").glob(f"{roles}/tm_*"))


def _stop_pooled(flink) -> None:
    """`scripts/flink.sh stop` for `flink`'s home, then a check that every process it had started has ended (and,
    should the script fail, the class's own stop)."""
    started = [pid for pid in flink._state().get("pids", {}).values() if maven_libs.pid_alive(pid)]
    env = {**os.environ, "GROUNDWATCH_FLINK_HOME": str(flink.home)}
    stop = [str(ROOT / "scripts" / "flink.sh"), "stop"]
    try:
        stopped = subprocess.run(stop, env=env, capture_output=True, text=True, timeout=300)
    finally:
        left = [pid for pid in started if maven_libs.pid_alive(pid)]
        if left:
            flink.stop()
    assert not left and stopped.returncode == 0, f"flink.sh stop left {left}: {stopped.stderr[-2000:]}"
    temp = flink.home / "jvm-tmp"  # the JVMs' temporary folders
    assert not temp.exists(), f"flink.sh stop left {sorted(temp.rglob('*'))[:20]}"


def stage_records(flink, job: str, stage: str = "VerifySentences") -> dict[str, int]:
    """The records each TaskManager's subtasks of the job's vertex running `stage` read, by TaskManager id."""
    (vertex,) = [v["id"] for v in flink.rest(f"/jobs/{job}")["vertices"] if stage in v["name"]]
    records: dict[str, int] = {}
    for subtask in flink.rest(f"/jobs/{job}/vertices/{vertex}")["subtasks"]:
        manager = subtask["taskmanager-id"]
        records[manager] = records.get(manager, 0) + subtask["metrics"]["read-records"]
    return records


def pool_logs(flink) -> list[str]:
    """What each worker pool of `flink` has logged so far."""
    return [open(pool["log"], errors="replace").read() for pool in flink.pools()]


def started_workers(flink) -> list[int]:
    """How many SDK workers each worker pool has started so far (its log has a line for each)."""
    return [text.count("Starting worker") for text in pool_logs(flink)]


def workers_ended_quietly(flink) -> None:
    """Wait until every worker the pools started has ended by the pools' word (stopped, dropped by its runner, or
    found exited), then check that no pool logged a traceback or an error: a job's end on Flink leaves a line or
    two per worker, so a failure stands out."""

    def ended(worker: str, text: str) -> bool:
        return any(
            line in text
            for line in (f"Stopping worker {worker}\n", f"Worker {worker}: its control stream", f"Worker {worker} had")
        )

    def running() -> list[str]:
        return [
            worker
            for text in pool_logs(flink)
            for worker in re.findall(r"Starting worker (\S+)", text)
            if not ended(worker, text)
        ]

    wait_for(lambda: not running(), timeout_s=120, every_s=1, what="the end of every pool's workers", explain=running)
    for text in pool_logs(flink):
        failure = next((text.index(m) for m in ("Traceback", " ERROR ") if m in text), None)
        assert failure is None, text[max(0, failure - 500) : failure + 5000]


@pytest.fixture(scope="session")
def sample_lake_fnapi(tmp_path_factory) -> str:
    """The sample traffic audited by the FnApiRunner (the default bounded runner) into a local folder."""
    folder = tmp_path_factory.mktemp("fnapi")
    lake, log = folder / "lake", folder / "audit.log"
    assert finished(audit_process(lake, log_path=log), log) == 0, log_tail(log)
    return str(lake)


def flink_argv(flink, parallelism: int = 2) -> list[str]:
    """The Beam options of a run on `flink`, its SDK worker in the launching process."""
    return [
        "--runner=FlinkRunner",
        f"--job_endpoint={flink.endpoint}",
        "--environment_type=LOOPBACK",
        f"--flink_master={flink.rest_url.removeprefix('http://')}",  # where a stopped monitor cancels its job
        f"--parallelism={parallelism}",
    ]


def documented_flags(flink, section: str, command: str) -> list[str]:
    """The runner flags (from `--runner=` on) of docs/flink.md's `groundwatch <command>` in its `## section`, as
    written, with the page's ports (`DOCUMENTED_PORTS`) those of `flink`."""
    (documented,) = [c for c in commands(FLINK_PAGE, section) if c[1] == command]
    # The REST address of a cluster, or the mini-cluster's range (the range is replaced first).
    ports = dict(zip(DOCUMENTED_PORTS, (flink.endpoint, flink.rest_address, flink.rest_address), strict=True))
    words = as_written(documented, ports)
    return words[next(i for i, w in enumerate(words) if w.startswith("--runner=")) :]


def flink_jobs(flink) -> dict[str, str]:
    """Every job the cluster knows, as job id -> state (`RUNNING`, `FINISHED`, `CANCELED`, `FAILED`, ...)."""
    return {job["jid"]: job["state"] for job in flink.rest("/jobs/overview")["jobs"]}


def _launch(command: list[str], log) -> subprocess.Popen:
    """`command` in a process group of its own, output to `log`; should it crash (SIGABRT, SIGSEGV), every
    thread's stack is in the log."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)


def audit_process(lake, *beam_options: str, log_path=None, input_path: str | None = None) -> subprocess.Popen:
    """`groundwatch audit` of `input_path` (the sample traffic by default) into `lake`, started, not awaited."""
    command = [sys.executable, "-m", "pipelines.cli", "audit", "--input", input_path or sample_traffic_path(),
               "--lake", str(lake), *beam_options]  # fmt: skip
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    return _launch(command, log)


def finished(process: subprocess.Popen, log_path, timeout_s: float = RUN_TIMEOUT_S) -> int:
    """The exit status of `process`; the test fails (and the process group is killed) past `timeout_s`."""
    try:
        return process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the run did not end within {timeout_s}s:\n{log_tail(log_path)}")


def log_tail(log_path, chars: int = 4000) -> str:
    """The end of a run's log, for a failure message."""
    return open(log_path, errors="replace").read()[-chars:] if log_path and os.path.exists(log_path) else ""


def monitor_process(bootstrap: str, topic: str, lake, beam_argv: list[str], log_path) -> subprocess.Popen:
    """`groundwatch monitor` of `topic` (group `g-<topic>`, 5 s windows) into `lake`, started, not awaited."""
    command = [
        sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
        "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5", *beam_argv,
    ]  # fmt: skip
    with open(log_path, "ab") as log:
        return _launch(command, log)


def stream_in_lake(bootstrap: str, topic: str, lake, count: int, monitor: subprocess.Popen, log_path):
    """The lake's accounting of `topic` once all `count` records are in it (a row or a dead letter each) and the
    group's offsets are committed to the end of both partitions; else None. Fails if the monitor exited."""
    if monitor.poll() is not None:
        pytest.fail(f"the monitor exited with {monitor.returncode}:\n{log_tail(log_path)}")
    found = lake_accounting(str(lake), topic)  # a lake not written yet has empty views
    offsets = set(found["responses"]) | set(found["dead_letters"])
    committed, ends = committed_offsets(bootstrap, f"g-{topic}", topic, partitions=2)
    return len(offsets) == count and all((committed[p] or 0) == ends[p] for p in ends) and found


def produce_into_stream(
    bootstrap: str, topic: str, lake, count: int, seed: int, monitor: subprocess.Popen, log_path
) -> dict:
    """Produce `count` generated messages (5 % malformed, stamped now, 100 a second) to `topic`, wait until the
    monitor has them all in `lake` with the offsets committed (`stream_in_lake`), and check each response is there
    once and the malformed ones are dead letters. Returns the lake's accounting."""
    from datetime import UTC, datetime

    from pipelines.produce import generated_messages, produce_messages  # the Kafka client only where it is used

    messages = generated_messages(count, seed=seed, malformed_fraction=0.05, start=datetime.now(UTC))
    assert produce_messages({"bootstrap_servers": bootstrap}, topic, messages, rate=100) == count
    found = wait_for(
        lambda: stream_in_lake(bootstrap, topic, lake, count, monitor, log_path),
        timeout_s=RUN_TIMEOUT_S,
        what=f"{count} responses in {lake}, offsets committed",
    )
    assert len(found["responses"]) == len(set(found["responses"])) and found["dead_letters"]
    return found
