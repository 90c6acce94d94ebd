"""A Beam Python worker pool on one loopback address: the EXTERNAL environment beside a local TaskManager.

    python scripts/flink_worker_pool.py --address 127.0.0.2:38096

`scripts/flink_cluster.py start --cluster` starts one per TaskManager, with the interpreter that runs it. It is
Beam's own pool (`apache_beam.runners.worker.worker_pool_main`): for each StartWorker request of a TaskManager's
SDK harness client it starts one `python` process running `SdkHarness`, and stops it on StopWorker. Beam's
`worker_pool_main` binds all interfaces (`[::]:PORT`), and anyone who reaches that port can make it start
processes, so this binds the one address it is given; and on SIGTERM it stops its workers before it exits,
where `worker_pool_main` would leave them running.

Beam's pool logs each request ("Starting worker with command ... worker_id=..."): the log shows which workers
this pool ran, and the workers' own stderr (a traceback) lands there too.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

__all__ = ["serve"]


def serve(address: str) -> None:
    """Serve the worker pool on `address` (`HOST:PORT`) until SIGTERM or SIGINT, then stop its workers."""
    import grpc
    from apache_beam.portability.api import beam_fn_api_pb2_grpc
    from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer, kill_process_gracefully
    from apache_beam.utils import thread_pool_executor

    pool = BeamFnExternalWorkerPoolServicer(use_process=True)
    # The options Beam's pool sets: a harness client that pings without data is not cut off.
    options = [("grpc.http2.max_pings_without_data", 0), ("grpc.http2.max_ping_strikes", 0)]
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(), options=options)
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    if server.add_insecure_port(address) == 0:
        raise SystemExit(f"worker pool: cannot listen on {address}")
    server.start()
    logging.info("worker pool listening on %s", address)
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    stopping.wait()
    server.stop(grace=None)
    for worker_id, process in list(pool._worker_processes.items()):
        logging.info("stopping worker %s", worker_id)
        kill_process_gracefully(process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True, help="HOST:PORT to listen on, a loopback address")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    serve(args.address)
    return 0


if __name__ == "__main__":
    sys.exit(main())
