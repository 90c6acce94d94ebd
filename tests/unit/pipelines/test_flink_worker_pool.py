"""The worker pool beside each local TaskManager (`scripts/flink_worker_pool.py`), served for real on 127.0.0.1 and
asked for workers by a real Beam runner (the FnApiRunner with an EXTERNAL environment, as a TaskManager asks):
its workers are forks of its warm fork server, see the pool's environment, and stop with their jobs and with the
pool; a worker whose control stream is dropped (as Flink does at many jobs' ends; here a real gRPC control
server that hangs up) ends with one line and exit code 0, no traceback; one whose runner dies mid-bundle warns
and exits 1; one still connected stops on StopWorker; a module the fork server could not import is named in its
log. On a Flink cluster it runs in `tests/integration/flink/test_flink_pools.py`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path

import apache_beam as beam
import grpc
import pytest
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc, endpoints_pb2
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import ExternalEnvironment

from tests.support.kafka_fixtures import wait_for
from tests.support.scripts import ROOT, load_script

pytestmark = pytest.mark.server

maven_libs = load_script("maven_libs")


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.fixture
def pool(tmp_path):
    """The pool script on a free 127.0.0.1 port, its environment holding a secret: (address, process, log path)."""
    with _served_pool(tmp_path, pythonpath=[ROOT]) as served:
        yield served


@contextlib.contextmanager
def _served_pool(tmp_path, pythonpath):
    """The pool script serving on a free port, with `pythonpath` as its PYTHONPATH, until the block ends."""
    address, log = f"127.0.0.1:{maven_libs.listen_port()}", tmp_path / "pool.log"
    path = os.pathsep.join(map(str, pythonpath))
    env = {**os.environ, "PYTHONPATH": path, "GROUNDWATCH_LAKE_HMAC_KEY": "pool-only-key"}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "flink_worker_pool.py"), f"--address={address}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            cwd=tmp_path,  # not the checkout: the fork server's `python -c` has its folder first on the path
        )  # fmt: skip
    try:
        wait_for(
            lambda: "listening on" in log.read_text(errors="replace") or process.poll() is not None,
            timeout_s=60,
            every_s=0.1,
            what="the pool listening",
            explain=lambda: log.read_text(errors="replace"),
        )
        assert process.poll() is None, log.read_text(errors="replace")
        yield address, process, log
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _line_with(log: Path, text: str, what: str, timeout_s: float = 60) -> str:
    """The first line of the pool's log holding `text`, once there is one."""
    return wait_for(
        lambda: next((x for x in log.read_text(errors="replace").splitlines() if text in x), None),
        timeout_s=timeout_s,
        every_s=0.1,
        what=what,
        explain=lambda: log.read_text(errors="replace"),
    )


def _worker_pid(log: Path, worker_id: str) -> int:
    (pid,) = re.findall(rf"Starting worker {worker_id} \(process (\d+)\)", log.read_text(errors="replace"))
    return int(pid)


def _report(path: str) -> None:
    """Write what the worker running it says of itself to `path`: its pid, its parent's, whether
    `pipelines.monitor` was imported before the job ran anything, the HMAC key in its environment."""
    facts = [os.getpid(), os.getppid(), "pipelines.monitor" in sys.modules, os.environ.get("GROUNDWATCH_LAKE_HMAC_KEY")]
    Path(path).write_text(json.dumps(facts))


def _run_on(address: str, report: Path) -> list:
    """Run a one-element job whose worker the pool at `address` starts; what that worker said of itself."""
    with beam.Pipeline(runner=FnApiRunner(default_environment=ExternalEnvironment(address))) as p:
        _ = p | beam.Create([str(report)]) | beam.Map(_report)
    return json.loads(report.read_text())


def test_a_job_runs_in_a_warm_fork_that_stops_with_the_job_and_the_pool(pool, tmp_path):
    address, process, log = pool
    pid, parent, preloaded, key = _run_on(address, tmp_path / "first.json")
    assert pid != process.pid and _parent(parent) == process.pid  # a fork of the pool's fork server
    _line_with(log, "fork server ready", "the pool's word that its fork server imported PRELOAD", 30)
    assert preloaded  # the fork server had imported groundwatch's modules before the job asked for a worker
    assert key == "pool-only-key"  # the pool's environment reaches its workers
    assert log.read_text(errors="replace").count("Starting worker") == 1
    assert "apitools" not in log.read_text(errors="replace")  # Beam's import notice, filtered in pool and fork server
    # The FnApiRunner sends no StopWorker: the worker ends when the job's control stream closes. Waited for until
    # the fork server has reaped it (as `_exit_code` does): only then does the pool know it ended.
    wait_for(lambda: _reaped(pid), timeout_s=30, every_s=0.1, what="the worker's exit at its job's end, reaped")

    second, second_parent, *_ = _run_on(address, tmp_path / "second.json")
    assert second != pid and second_parent == parent  # each job a fresh fork of the same server
    # The first worker was never stopped: the second start finds it gone, forgets it and says how it ended.
    assert log.read_text(errors="replace").count("had exited (exit code 0)") == 1
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    wait_for(
        lambda: not maven_libs.pid_alive(parent), timeout_s=30, every_s=0.1, what="the fork server's exit with the pool"
    )


def test_a_module_the_fork_server_cannot_import_is_named_in_the_log(tmp_path):
    """A groundwatch that fails to import (here a `pipelines` package ahead of ours on the path that raises
    ImportError) leaves the workers cold: the fork server skips such a module quietly, the pool says so."""
    broken = tmp_path / "broken" / "pipelines"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("broken on purpose")\n')
    with _served_pool(tmp_path, pythonpath=[broken.parent, ROOT]) as (_, process, log):
        line = _line_with(log, "could not import", "the pool's word on what its fork server could not import")
        assert "pipelines.runner.bounded, pipelines.monitor:" in line
        assert "sdk_worker" not in line and "fork server ready" not in log.read_text(errors="replace")
        assert process.poll() is None  # the pool still serves: a cold worker is slower, not refused


class _ControlThatHangsUp(beam_fn_api_pb2_grpc.BeamFnControlServicer):
    """The runner's side of a worker's control stream, on a free 127.0.0.1 port: it sends nothing, and is dropped
    when its server stops, as a TaskManager drops its workers' streams when a job ends."""

    def __init__(self):
        self.connected, self._released = threading.Event(), threading.Event()
        self._executor = futures.ThreadPoolExecutor(4)
        self._server = grpc.server(self._executor)
        beam_fn_api_pb2_grpc.add_BeamFnControlServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = endpoints_pb2.ApiServiceDescriptor(url=f"127.0.0.1:{port}")
        self._server.start()

    def Control(self, request_iterator, context):  # noqa: N802 (the gRPC method name)
        self.connected.set()
        self._released.wait(60)
        yield from ()

    def hang_up(self) -> None:
        self._server.stop(grace=None).wait()  # the connection goes first: the worker sees its stream cut, not ended
        self._released.set()
        self._executor.shutdown()


@pytest.fixture
def control_servers():
    """Makes `_ControlThatHangsUp` servers, each hung up at the test's end."""
    with contextlib.ExitStack() as stack:

        def make() -> _ControlThatHangsUp:
            server = _ControlThatHangsUp()
            stack.callback(server.hang_up)
            return server

        yield make


def _start(channel, worker_id: str, control: _ControlThatHangsUp) -> None:
    """StartWorker on the pool behind `channel`, for a worker whose runner is `control`; once it is connected."""
    start = beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel).StartWorker
    answer = start(beam_fn_api_pb2.StartWorkerRequest(worker_id=worker_id, control_endpoint=control.endpoint))
    assert not answer.error, answer.error
    assert control.connected.wait(60)


def _reaped(pid: int) -> bool:
    """Whether the fork server has reaped worker `pid` (its /proc entry is gone). Not `pid_alive`, which reads a
    zombie as ended: the pool learns a worker's exit code only when the fork server reaps it, and a StartWorker
    sent while the worker was a zombie found it still running (seen under load)."""
    return maven_libs.process_state(pid) is None


def _exit_code(channel, log: Path, worker_id: str, following: _ControlThatHangsUp) -> str:
    """How worker `worker_id` exited, by the pool's word at the next StartWorker (for a worker called "following"),
    once the fork server has reaped it (until then the pool would still count it as running)."""
    pid = _worker_pid(log, worker_id)
    wait_for(lambda: _reaped(pid), timeout_s=30, every_s=0.1, what=f"the fork server's reaping of worker {worker_id}")
    _start(channel, "following", following)
    (code,) = re.findall(rf"Worker {worker_id} had exited \(exit code (-?\d+)\)", log.read_text(errors="replace"))
    return code


def test_a_worker_whose_stream_is_dropped_ends_with_one_line_and_no_traceback(pool, control_servers):
    address, _, log = pool
    dropped, following = control_servers(), control_servers()
    with grpc.insecure_channel(address) as channel:
        _start(channel, "dropped", dropped)
        dropped.hang_up()
        line = _line_with(log, "control stream was dropped", "the worker's word that its stream was dropped", 30)
        assert " INFO Worker dropped: its control stream was dropped (" in line, line
        assert "(UNAVAILABLE: " in line or "(CANCELLED: " in line, line
        # It exited as a worker whose stream ended does.
        assert _exit_code(channel, log, "dropped", following) == "0", log.read_text(errors="replace")
        # A StopWorker (Flink sends one per worker at a job's end) stops a worker still connected.
        pid = _worker_pid(log, "following")
        beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(channel).StopWorker(
            beam_fn_api_pb2.StopWorkerRequest(worker_id="following")
        )
        assert not maven_libs.pid_alive(pid)  # StopWorker answers once the worker has exited
    text = log.read_text(errors="replace")
    assert "Stopping worker following" in text, text
    assert "Traceback" not in text and "ERROR" not in text and "WARNING Worker" not in text, text


def _hold(marker: str) -> None:
    """A bundle that says it started, then runs until its worker ends."""
    Path(marker).write_text("started")
    time.sleep(300)


def test_a_worker_whose_runner_dies_mid_bundle_says_so_and_exits_1(pool, control_servers, tmp_path):
    """A runner SIGKILLed while a bundle runs: the worker's warning names the bundle in flight, it exits 1."""
    address, _, log = pool
    marker = tmp_path / "bundle-started"
    job = f"""
import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import ExternalEnvironment
from tests.unit.pipelines.test_flink_worker_pool import _hold
with beam.Pipeline(runner=FnApiRunner(default_environment=ExternalEnvironment({address!r}))) as p:
    _ = p | beam.Create([{str(marker)!r}]) | beam.Map(_hold)
"""
    runner = subprocess.Popen([sys.executable, "-c", job], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: marker.exists() or runner.poll() is not None, timeout_s=120, every_s=0.1,
                 what="the bundle's start", explain=lambda: log.read_text(errors="replace"))  # fmt: skip
        assert runner.poll() is None, runner.communicate()[1][-3000:]
    finally:
        runner.kill()
        runner.wait()
    line = _line_with(log, "with bundles in flight", "the worker's warning that its runner left mid-bundle", 30)
    assert " WARNING Worker " in line and "control stream was dropped (" in line, line
    worker_id = line.split(" WARNING Worker ", 1)[1].split(":", 1)[0]
    with grpc.insecure_channel(address) as channel:
        assert _exit_code(channel, log, worker_id, control_servers()) == "1", log.read_text(errors="replace")
    assert "Traceback" not in log.read_text(errors="replace")
