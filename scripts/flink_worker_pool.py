"""A Beam Python worker pool on one loopback address: the EXTERNAL environment beside a local TaskManager.

    python scripts/flink_worker_pool.py --address 127.0.0.2:38096

`scripts/flink_cluster.py start --cluster` starts one per TaskManager, with the interpreter that runs it. It serves
Beam's pool protocol (`apache_beam.runners.worker.worker_pool_main`): for each StartWorker request of a
TaskManager's SDK harness client it starts one process running `SdkHarness`, and stops it on StopWorker. Unlike
Beam's `worker_pool_main`, which binds all interfaces (`[::]:PORT`, so anyone who reaches that port can make it
start processes), it binds the one address it is given; on SIGTERM it stops its workers before it exits, where
`worker_pool_main` would leave them running; and its workers start already warm.

Warm workers: Beam's pool starts each worker as a fresh `python`, which spends 1.3 s importing Beam and, at the
first bundle, 0.4 s more importing groundwatch, on every job. Here a fork server (`multiprocessing`'s
"forkserver", a single-threaded process started with the pool) imports those modules once (`PRELOAD`), and each
worker is a fork of it: a new process, as isolated as Beam's (a worker that crashes takes no other job with it),
that starts with them imported. The fork server holds no gRPC channel or thread: each worker makes its own after
the fork.

The log shows whether the fork server imported `PRELOAD` ("fork server ready", what it could not import, or that
it could not be asked), which workers this pool ran ("Starting worker ...", as Beam's pool says it), the exit code
of any that ended without being stopped (found at the next start), and the workers' own log records (warnings
and errors, in the pool's format) and tracebacks. A worker whose streams were dropped says so in one line.
"""

from __future__ import annotations  # noqa: I001 (transforms.beam_quiet goes before Beam's first import)

# Here and in the fork server (first in PRELOAD): no "apitools not found" line. The checkout is on the pool's
# PYTHONPATH (scripts/flink_pools.py).
import transforms.beam_quiet  # noqa: F401

import argparse
import logging
import multiprocessing
import signal
import sys
import threading
from multiprocessing import forkserver

import grpc
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc
from apache_beam.utils import thread_pool_executor

__all__ = ["PRELOAD", "PreforkedWorkerPool", "serve"]

PRELOAD = [
    "transforms.beam_quiet",
    "apache_beam.runners.worker.sdk_worker",
    "pipelines.runner.bounded",
    "pipelines.monitor",
]
"""Modules every worker starts with: the filter of Beam's import notices (first, before Beam's import), Beam's SDK
harness, and what the audit's and the monitor's transforms import when the runner hands them to a worker. One
that raises ImportError is skipped by the fork server, quietly (the worker imports it, or fails to, as a cold one
would): the pool asks a first fork which ones it has and logs any missing; any other error stops the fork server,
and StartWorker then answers with that error."""

STOP_TIMEOUT_S = 10
"""How long a stopped worker has to exit after SIGTERM before it is killed (Beam's pool waits as long)."""

_LOGGER = logging.getLogger("groundwatch.worker_pool")


LOG_FORMAT = "%(asctime)s %(levelname)s %(message)s"

_DROPPED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
"""How a worker's streams end when they are dropped rather than finished: Flink's TaskManager drops them at many
jobs' ends, racing the StopWorker that follows ("Stream removed (Socket closed)", "Multiplexer hanging up"). A
runner that crashed, or a reset connection, ends them the same way."""

_STREAM_READERS = ("read_grpc_client_inputs", "read_state")
"""The harness's threads that read the data and state streams (Beam's names): each dies on a dropped stream."""

_DATA_PLANE_FAILURE = "Failed to read inputs in the data plane."
"""What Beam's data plane logs, with the traceback, when its stream ends other than by the worker's own close."""


def _dropped(error: BaseException | None) -> bool:
    return isinstance(error, grpc.RpcError) and error.code() in _DROPPED


class _QuietDroppedDataStream(logging.Filter):
    """Drops the data plane's `_DATA_PLANE_FAILURE` record for a dropped stream; keeps every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == _DATA_PLANE_FAILURE and record.exc_info and _dropped(record.exc_info[1]))


def _thread_exception(args: threading.ExceptHookArgs) -> None:
    """A stream reader (`_STREAM_READERS`) that dies on a dropped stream ends quietly; any other thread's error,
    a DoFn's own threads' included, prints as it would."""
    if not (args.thread is not None and args.thread.name in _STREAM_READERS and _dropped(args.exc_value)):
        threading.__excepthook__(args)


def _run_harness(control: str, worker_id: str, state_cache_size: int, data_buffer_time_limit_ms: int) -> None:
    """A worker's body, in a fork of the fork server: what Beam's pool runs in a fresh `python -c`.

    When its streams are dropped (Flink does so at many jobs' ends) Beam's harness leaves three tracebacks, which
    bury a real failure. Here the worker logs one line instead and exits: with code 0 when it had no bundle in
    flight, else with a warning naming the bundles and code 1 (a runner gone mid-job: the job failed or was
    cancelled). Either way it exits at once, without the teardown a finished stream gets. A job's failure while
    the runner is there reaches the runner as before, which reports it; the worker logs its traceback too."""
    from apache_beam.runners.worker.sdk_worker import SdkHarness

    # The fork server's logging is Beam's default (warnings, no time): the pool's format, and this module's lines.
    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT, stream=sys.stderr, force=True)
    _LOGGER.setLevel(logging.INFO)
    logging.getLogger("apache_beam.runners.worker.data_plane").addFilter(_QuietDroppedDataStream())
    threading.excepthook = _thread_exception
    # The fork server has restored SIGINT's handler for its child, and never changed SIGTERM's.
    harness = SdkHarness(
        control,
        worker_id=worker_id,
        state_cache_size=state_cache_size,
        data_buffer_time_limit_ms=data_buffer_time_limit_ms,
    )
    try:
        harness.run()
    except grpc.RpcError as e:
        if not _dropped(e):
            raise
        how = f"{e.code().name}: {e.details()}"
        cache = harness._bundle_processor_cache  # noqa: SLF001 (Beam keeps its bundles in flight there only)
        in_flight = sorted({*cache.active_bundle_processors, *cache.processors_being_created})
        if not in_flight:
            _LOGGER.info("Worker %s: its control stream was dropped (%s)", worker_id, how)
            return
        _LOGGER.warning(
            "Worker %s: its control stream was dropped (%s) with bundles in flight (%s): the runner is gone, "
            "the job failed or was cancelled", worker_id, how, ", ".join(in_flight),
        )  # fmt: skip
        sys.exit(1)


def _not_preloaded() -> list[str]:
    """In a fork of the fork server: the `PRELOAD` modules it does not have (it could not import them)."""
    return [name for name in PRELOAD if name not in sys.modules]


def _stop(worker: multiprocessing.Process, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL if `worker` has not exited within `timeout` seconds. A worker that has already exited
    is not signalled: the fork server reaps it at once, so its pid may name another process by now."""
    if not worker.is_alive():
        return
    worker.terminate()
    worker.join(timeout)
    if worker.is_alive():
        _LOGGER.warning("worker %s did not stop on SIGTERM; killing it", worker.name)
        worker.kill()
        worker.join()


class PreforkedWorkerPool(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
    """Beam's worker pool service whose workers are forks of a fork server that has imported `PRELOAD`."""

    def __init__(self, state_cache_size: int = 0, data_buffer_time_limit_ms: int = 0):
        self._state_cache_size, self._data_buffer_time_limit_ms = state_cache_size, data_buffer_time_limit_ms
        self._context = multiprocessing.get_context("forkserver")
        self._workers: dict[str, multiprocessing.Process] = {}
        self._lock = threading.Lock()
        forkserver.set_forkserver_preload(PRELOAD)
        forkserver.ensure_running()  # now: its imports run while the pool waits for its first job
        threading.Thread(target=self._check_preloaded, name="preload-check", daemon=True).start()

    def _check_preloaded(self) -> None:
        """Log what the fork server imported, once it has, from a first fork: a module it skipped on ImportError
        makes every worker start cold, or fail, and the fork server says nothing of it."""
        try:
            with self._context.Pool(1) as probe:
                missing = probe.apply(_not_preloaded)
        except Exception as e:  # noqa: BLE001 (the fork server died: StartWorker will answer with the reason)
            _LOGGER.error("could not ask the fork server what it imported: %r", e)
            return
        if missing:
            _LOGGER.warning(
                "the fork server could not import %s: workers import it at their start, or fail to (python -c "
                "'import %s' in the pool's environment says why)", ", ".join(missing), missing[0],
            )  # fmt: skip
        else:
            _LOGGER.info("fork server ready, workers start with %s imported", ", ".join(PRELOAD))

    def StartWorker(self, request, unused_context):  # noqa: N802 (the gRPC method name)
        worker = self._context.Process(
            target=_run_harness,
            args=(request.control_endpoint.url, request.worker_id, self._state_cache_size,
                  self._data_buffer_time_limit_ms),
            name=f"sdk-worker-{request.worker_id}",
        )  # fmt: skip
        # Under the lock: `start` polls every finished child, as `_forget_exited` does, and of two threads that poll
        # one exited fork at once, one reads its exit code and the other reads end-of-file (exit code 255). `_stop`,
        # which may wait STOP_TIMEOUT_S, polls outside it: a worker it stops is no longer in `_workers`, and its
        # exit code is not logged.
        with self._lock:
            try:
                worker.start()
            except Exception as e:  # noqa: BLE001 (the TaskManager gets the reason, as from Beam's pool)
                return beam_fn_api_pb2.StartWorkerResponse(error=f"cannot start an SDK worker: {e!r}")
            self._forget_exited()
            self._workers[request.worker_id] = worker
        _LOGGER.info("Starting worker %s (process %s)", request.worker_id, worker.pid)
        return beam_fn_api_pb2.StartWorkerResponse()

    def _forget_exited(self) -> None:
        """Drop the workers that exited without a StopWorker (a runner that sends none, or a crash), saying how
        each ended. Called with the lock held, at each StartWorker: the table holds at most the workers alive then
        and the one starting."""
        for worker_id, worker in list(self._workers.items()):
            if not worker.is_alive():
                del self._workers[worker_id]
                _LOGGER.info("Worker %s had exited (exit code %s)", worker_id, worker.exitcode)

    def StopWorker(self, request, unused_context):  # noqa: N802 (the gRPC method name)
        with self._lock:
            worker = self._workers.pop(request.worker_id, None)
        if worker is not None:
            _LOGGER.info("Stopping worker %s", request.worker_id)
            _stop(worker)
        return beam_fn_api_pb2.StopWorkerResponse()

    def stop_all(self) -> None:
        """Stop every worker still running (the pool is stopping)."""
        with self._lock:
            workers, self._workers = dict(self._workers), {}
        for worker_id, worker in workers.items():
            _LOGGER.info("Stopping worker %s", worker_id)
            _stop(worker)


def serve(address: str) -> None:
    """Serve the worker pool on `address` (`HOST:PORT`) until SIGTERM or SIGINT, then stop its workers."""
    pool = PreforkedWorkerPool()
    # The options Beam's pool sets: a harness client that pings without data is not cut off.
    options = [("grpc.http2.max_pings_without_data", 0), ("grpc.http2.max_ping_strikes", 0)]
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(), options=options)
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    if server.add_insecure_port(address) == 0:
        raise SystemExit(f"worker pool: cannot listen on {address}")
    server.start()
    _LOGGER.info("worker pool listening on %s", address)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    stopping.wait()
    server.stop(grace=None)
    pool.stop_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True, help="HOST:PORT to listen on, a loopback address")
    args = parser.parse_args(argv)
    # force: importing Beam has already configured the root logger (its warnings at import).
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr, force=True)
    serve(args.address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
