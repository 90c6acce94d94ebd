"""Stop a running job cleanly on Ctrl-C or SIGTERM: cancel it on its runner and wait until the runner says so.

    result = pipeline.run()
    wait_or_cancel(result, flink_rest=flink_rest_urls(options))  # on Ctrl-C/SIGTERM: cancel, wait, re-raise

A stream never ends by itself, so stopping it is how it ends. Left to the defaults, SIGTERM kills the launching
process at once; with `--environment_type=LOOPBACK` that process is the SDK worker, so Flink loses its SDK harness
and the job ends FAILED. Here both signals cancel the job first and the process stays (serving its worker) until
the runner reports a terminal state: on Flink the job then ends CANCELED.

On Flink the job is cancelled through the JobManager's REST API: Beam's Flink job server 2.62 marks its
invocation CANCELLED without cancelling the Flink job it submitted, which then fails once the LOOPBACK worker goes
(seen: RUNNING -> FAILING, "SDK Harness connection lost"). The monitor's `--flink-rest HOST:PORT` names that API,
else `--flink_master=HOST:PORT` does. The job server's embedded mini-cluster (`--flink-master=[local]`) is one
Flink cluster per job, whose REST server takes the first free port of `rest.bind-port` in the job server's
`--flink-conf-dir` (`scripts/flink.sh start` sets a range and prints it): `--flink-rest HOST:LOW-HIGH` names such
a range and the job is found by name on the ports that answer. `--flink_master` cannot name it: a job's
`--flink_master` other than `[auto]` overrides the job server's own (Beam's `FlinkJobInvoker`), so the job would
be sent to a cluster that does not exist yet.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import threading
import time
import urllib.request
from collections.abc import Iterator

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineState

__all__ = [
    "CANCEL_TIMEOUT_S",
    "FlinkStopOptions",
    "StopRequested",
    "cancel_and_wait",
    "cancel_flink_job",
    "flink_rest_urls",
    "sigterm_interrupts",
    "wait_or_cancel",
]

CANCEL_TIMEOUT_S = 120.0
"""How long a cancelled job may take to reach a terminal state before the process gives up waiting."""
MAX_REST_PORTS = 100
"""The widest `--flink-rest` port range searched for a job (each port is one HTTP request to its host)."""

TERMINAL_STATES = frozenset(
    {PipelineState.DONE, PipelineState.FAILED, PipelineState.CANCELLED, PipelineState.UPDATED, PipelineState.DRAINED}
)


class FlinkStopOptions(PipelineOptions):
    """Where a stopped job is cancelled on Flink (the monitor's `--flink-rest` flag sets it)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--flink_rest",
            default=None,
            help="HOST:PORT (or HOST:LOW-HIGH, a port range) of the Flink REST API running the job, where a "
            "stopped stream cancels it; default: --flink_master when it names HOST:PORT.",
        )


class StopRequested(KeyboardInterrupt):
    """SIGTERM arrived: handled as Ctrl-C is (a KeyboardInterrupt), so the command exits as interrupted."""


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises `StopRequested` in the main thread instead of killing the process."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set signal handlers
        return

    def interrupt(signum, _frame):
        raise StopRequested(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """A second Ctrl-C or SIGTERM while cancelling must not cut the wait short (the worker would die with it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def flink_rest_urls(options) -> list[str]:
    """The JobManager REST APIs (`http://HOST:PORT`) where a Flink job of these options may run: the monitor's
    `--flink-rest` (`HOST:PORT` or a port range `HOST:LOW-HIGH`), else `--flink_master` when it names `HOST:PORT`
    (not `[local]`/`[auto]`); empty when neither names one."""
    from apache_beam.options.pipeline_options import FlinkRunnerOptions

    named = options.view_as(FlinkStopOptions).flink_rest
    master = named or options.view_as(FlinkRunnerOptions).flink_master or ""
    match = re.fullmatch(r"(https?://)?([\w.\-]+):(\d+)(?:-(\d+))?", master)
    if not match:
        if named:
            raise ValueError(f"--flink-rest must be HOST:PORT or HOST:LOW-HIGH, got {named!r}")
        return []
    scheme, host, low, high = match.group(1) or "http://", match.group(2), int(match.group(3)), match.group(4)
    ports = range(low, int(high) + 1) if high and named else [low]
    if len(ports) > MAX_REST_PORTS or not ports:
        raise ValueError(f"--flink-rest names {len(ports)} ports; at most {MAX_REST_PORTS}, LOW <= HIGH")
    return [f"{scheme}{host}:{port}" for port in ports]


def _rest(url: str, method: str = "GET") -> dict:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as reply:
            body = reply.read()
    except http.client.HTTPException as e:  # a port that answers, but not in HTTP: another server of the range
        raise OSError(f"{url}: not an HTTP reply ({type(e).__name__})") from None
    return json.loads(body) if body else {}


def _jobs_named(rest_url: str, name: str) -> list[str]:
    """The ids of the live jobs called `name` at `rest_url`; none when nothing answers there."""
    try:
        jobs = _rest(f"{rest_url}/jobs/overview")["jobs"]
    except (OSError, ValueError, KeyError):  # a port of the range where no mini-cluster runs
        return []
    live = ("CREATED", "INITIALIZING", "RUNNING", "RESTARTING")
    return [job["jid"] for job in jobs if job["name"] == name and job["state"] in live]


def cancel_flink_job(rest_urls: list[str], beam_job_id: str, timeout_s: float = CANCEL_TIMEOUT_S) -> str | None:
    """Cancel the running Flink job a Beam job id names, at whichever of `rest_urls` runs it, and wait until Flink
    ends it; return its final state (`CANCELED`), or None when no such job runs or it did not end in `timeout_s`."""
    name = beam_job_id.rsplit("_", 1)[0]  # the job server names the Flink job after the invocation, less its uuid
    jobs = [(url, jid) for url in rest_urls for jid in _jobs_named(url, name)]
    if not jobs:
        return None
    for url, jid in jobs:
        _rest(f"{url}/jobs/{jid}?mode=cancel", method="PATCH")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            states = {_rest(f"{url}/jobs/{jid}")["state"] for url, jid in jobs}
        except OSError:  # a per-job mini-cluster closes its REST server once its job has ended: state unknown
            return None
        if states <= {"CANCELED", "FAILED", "FINISHED"}:
            return "CANCELED" if states == {"CANCELED"} else ",".join(sorted(states))
        time.sleep(0.2)
    return None


def cancel_and_wait(result, timeout_s: float = CANCEL_TIMEOUT_S, *, flink_rest: list[str] | None = None) -> str | None:
    """Cancel the job of `result` and wait until its runner reports a terminal state; return that state (None when
    it did not come within `timeout_s`). `flink_rest`: the JobManager's REST API, to cancel a Flink job there."""
    job_service, job_id = getattr(result, "_job_service", None), getattr(result, "_job_id", None)
    with _signals_ignored():
        if job_service is not None and job_id is not None:
            # A portable result's cancel() also stops its LOOPBACK worker pool at once, in this process, while the
            # runner still cancels the tasks that worker serves: they fail on the lost harness and so does the job.
            # Cancel through the runner, wait, and clean up only once the job has ended.
            from apache_beam.portability.api import beam_job_api_pb2

            try:
                state = cancel_flink_job(flink_rest, job_id, timeout_s) if flink_rest else None
                job_service.Cancel(beam_job_api_pb2.CancelJobRequest(job_id=job_id))
                return state or _wait_terminal(result, timeout_s)
            finally:
                with contextlib.suppress(Exception):  # best effort: the process is ending anyway
                    result._cleanup()
        result.cancel()
        return _wait_terminal(result, timeout_s)


def _wait_terminal(result, timeout_s: float) -> str | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            state = result.state
        except Exception:  # noqa: BLE001 - a runner that went away with its job has nothing more to say
            return None
        if state in TERMINAL_STATES:
            return state
        time.sleep(0.5)
    return None


def wait_or_cancel(result, timeout_s: float = CANCEL_TIMEOUT_S, *, flink_rest: list[str] | None = None) -> str:
    """Wait for the job to finish; on Ctrl-C or SIGTERM cancel it, wait for the runner to confirm, and re-raise."""
    try:
        with sigterm_interrupts():
            return result.wait_until_finish()
    except KeyboardInterrupt:
        cancel_and_wait(result, timeout_s, flink_rest=flink_rest)
        raise
