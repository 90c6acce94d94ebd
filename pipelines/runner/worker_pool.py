"""SDK worker processes for local Prism runs, so a streaming monitor uses more than one core.

Prism starts one SDK worker per environment of the pipeline, and a Python worker runs on one core (the
GIL). By default Beam runs that worker as a thread of the launching process (LOOPBACK). The monitor
instead splits the audit stages into lanes by response id, gives each lane an environment of its own
(`separate_environment(transform, lane)`; `local_audit_lanes()` lanes, one per core), and serves every
environment from this pool, which starts each worker as a process of its own:

    address, stop = start_worker_pool(options)
    # --environment_type=EXTERNAL --environment_config=<address>; then stop() when the run ends

Beam makes one environment per distinct set of resource hints. Every lane asks for a core (`cpu_count`),
and the lanes differ by one hint of ours, `audit_lane`, which says only which lane a transform is in.

Why not Beam's own `use_loopback_process_worker`: every worker process numbers its metric "short ids"
from 1, while Prism keeps one short-id table per job. Two processes then give one id two meanings, and
Prism panics decoding a counter as a progress metric ("error decoding metrics ...
ptransform_progress:completed"). Each worker started here numbers its ids from its own offset.

This is local plumbing only: on Flink or Dataflow the runner starts its own workers and nothing here runs.
"""

from __future__ import annotations

import argparse
import atexit
import itertools
import os
import subprocess
import sys
from collections.abc import Callable

import apache_beam as beam
import grpc
from apache_beam.options.pipeline_options import DebugOptions, PipelineOptions
from apache_beam.portability.api import beam_fn_api_pb2, beam_fn_api_pb2_grpc
from apache_beam.runners.worker import sdk_worker, sdk_worker_main
from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer, kill_process_gracefully
from apache_beam.transforms.resources import ResourceHint
from apache_beam.utils import thread_pool_executor

__all__ = [
    "AUDIT_RESOURCE_HINTS",
    "MAX_AUDIT_LANES",
    "SHORT_ID_STRIDE",
    "WorkerProcessPool",
    "local_audit_lanes",
    "separate_environment",
    "start_worker_pool",
]


SHORT_ID_STRIDE = 1 << 24
"""Metric short ids each worker process may use before it would reach the next worker's (16 million)."""

AUDIT_RESOURCE_HINTS = {"cpu_count": "1"}
"""The hint that puts the audit stages in an environment of their own: they want a core to themselves."""

MAX_AUDIT_LANES = 4
"""Audit lanes at most, whatever the cores: each lane is one more SDK worker process (350-400 MB measured)."""


class AuditLaneHint(ResourceHint):
    """Which audit lane a transform is in (`audit_lane="1"`): lanes differ by it alone, so each gets an
    environment, hence a worker, of its own. It asks nothing of the runner: lanes are only used on local
    Prism, which ignores it."""

    urn = "groundwatch:resources:audit_lane:v1"


ResourceHint.register_resource_hint("audit_lane", AuditLaneHint)


def separate_environment(transform: beam.PTransform, lane: int = 0) -> beam.PTransform:
    """`transform` in the environment of audit lane `lane`, apart from the pipeline's default one."""
    return transform.with_resource_hints(**AUDIT_RESOURCE_HINTS, audit_lane=str(lane))


def local_audit_lanes(cores: int | None = None) -> int:
    """How many audit lanes a local stream uses: one per core, at most `MAX_AUDIT_LANES`.

    Measured on 2 cores (`scripts/bench_kafka.py --mode streaming --count 6000 --rate 400`): one lane audited
    151-194 responses/s under a backlog, holding one core while the machine used 1.2 of its 2; two lanes
    audited 283-300/s with the machine at 1.7-1.9.
    """
    return max(1, min(MAX_AUDIT_LANES, cores if cores is not None else os.cpu_count() or 1))


class WorkerProcessPool(BeamFnExternalWorkerPoolServicer):
    """A Beam external worker pool whose workers are processes with disjoint metric short ids."""

    def __init__(self, state_cache_size: int = 0, data_buffer_time_limit_ms: int = 0):
        super().__init__(
            use_process=True, state_cache_size=state_cache_size, data_buffer_time_limit_ms=data_buffer_time_limit_ms
        )
        self._offsets = itertools.count(1)

    def StartWorker(self, start_worker_request, unused_context):  # noqa: N802 (the gRPC method name)
        command = [
            sys.executable,
            "-m",
            "pipelines.runner.worker_pool",
            f"--control-endpoint={start_worker_request.control_endpoint.url}",
            f"--worker-id={start_worker_request.worker_id}",
            f"--short-id-offset={next(self._offsets) * SHORT_ID_STRIDE}",
            f"--state-cache-size={self._state_cache_size}",
            f"--data-buffer-time-limit-ms={self._data_buffer_time_limit_ms}",
        ]
        try:
            self._worker_processes[start_worker_request.worker_id] = subprocess.Popen(command, close_fds=True)
        except OSError as e:
            return beam_fn_api_pb2.StartWorkerResponse(error=f"cannot start an SDK worker process: {e}")
        return beam_fn_api_pb2.StartWorkerResponse()


def start_worker_pool(options: PipelineOptions) -> tuple[str, Callable[[], None]]:
    """Serve a `WorkerProcessPool` on 127.0.0.1; returns its address and a function that stops it and its workers."""
    experiments = options.view_as(DebugOptions).experiments or []
    pool = WorkerProcessPool(
        state_cache_size=sdk_worker_main._get_state_cache_size_bytes(options=options),
        data_buffer_time_limit_ms=sdk_worker_main._get_data_buffer_time_limit_ms(experiments),
    )
    # As Beam's own pool does: no ping limits, or an idle control stream is cut during long bundles.
    server = grpc.server(
        thread_pool_executor.shared_unbounded_instance(),
        options=[("grpc.http2.max_pings_without_data", 0), ("grpc.http2.max_ping_strikes", 0)],
    )
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    server.start()

    def stop() -> None:
        server.stop(1)
        for process in pool._worker_processes.values():  # noqa: SLF001 (the base class keeps them there)
            kill_process_gracefully(process)

    atexit.register(stop)  # also when the run fails: no worker outlives the monitor
    return address, stop


def _run_worker(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="One SDK worker process of a WorkerProcessPool.")
    parser.add_argument("--control-endpoint", required=True)
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--short-id-offset", type=int, required=True)
    parser.add_argument("--state-cache-size", type=int, default=0)
    parser.add_argument("--data-buffer-time-limit-ms", type=int, default=0)
    args = parser.parse_args(argv)
    # Ids are handed out by incrementing this counter; starting it at the offset keeps them apart.
    sdk_worker.SHORT_ID_CACHE._last_short_id = args.short_id_offset  # noqa: SLF001
    sdk_worker.SdkHarness(
        args.control_endpoint,
        worker_id=args.worker_id,
        state_cache_size=args.state_cache_size,
        data_buffer_time_limit_ms=args.data_buffer_time_limit_ms,
    ).run()


if __name__ == "__main__":
    _run_worker()
