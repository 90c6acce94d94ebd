"""`groundwatch ui`: the Evidently UI on the lake's workspace, on 127.0.0.1, telemetry off.

    groundwatch ui [--lake ./groundwatch-lake | --lake s3://bucket/lake] [--port 8000]

Serves `<lake>/evidently` (created by `groundwatch drift`, or `groundwatch demo`): open
http://127.0.0.1:PORT and the `groundwatch` project. It runs Evidently's own server
(`python -m evidently ui`) with DO_NOT_TRACK=1 and stops it on Ctrl-C. A lake in object storage keeps its
workspace under `<lake>/evidently/` too (`dashboards.workspace_sync`); Evidently serves a local folder, so the
workspace is fetched into a temporary copy when the command starts (restart it to see snapshots added since),
removed when it stops. Exit code 2 when the lake has no workspace yet or cannot be reached.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys

from dashboards.workspace import workspace_path
from pipelines.options.common import DEFAULT_LAKE, add_lake_argument, check_port_free, exits_2_on_usage_error
from transforms.io.lake import filesystem as lakefs

__all__ = ["DEFAULT_LAKE", "DEFAULT_PORT", "add_arguments", "main", "ui_command", "ui_environment"]

DEFAULT_PORT = 8000


def ui_command(lake_dir: str, port: int, *, workspace: str | None = None) -> list[str]:
    """The command that serves the lake's workspace (or the local folder `workspace`) on 127.0.0.1:port."""
    return [
        sys.executable, "-m", "evidently.cli", "ui",
        "--workspace", workspace or workspace_path(lake_dir), "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip


def ui_environment() -> dict[str, str]:
    """The environment of the UI server: telemetry off."""
    return {**os.environ, "DO_NOT_TRACK": "1", "EVIDENTLY_DISABLE_TELEMETRY": "1"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Port on 127.0.0.1. Default {DEFAULT_PORT}.")


@exits_2_on_usage_error("ui")
def main(args: argparse.Namespace) -> int:
    check_port_free("127.0.0.1", args.port)  # before the URL is printed as if the server had started
    with contextlib.ExitStack() as stack:
        if lakefs.is_remote(args.lake):
            from dashboards.workspace_sync import local_copy  # kept lazy: start-up (boto3, only for object storage)

            try:
                lakefs.check_location(args.lake)
                copy = stack.enter_context(local_copy(args.lake))
            except (ValueError, OSError) as error:
                print(f"groundwatch ui: --lake: {error}", file=sys.stderr)
                return 2
            folder, shown = (copy.folder if copy.fetched else None), workspace_path(args.lake)
        else:
            folder = shown = workspace_path(args.lake)
        if folder is None or not os.path.isdir(folder):
            print(
                f"groundwatch ui: no Evidently workspace in {args.lake!r}; run groundwatch drift (or demo) on it first",
                file=sys.stderr,
            )
            return 2
        print(f"groundwatch ui: http://127.0.0.1:{args.port}  (workspace {shown}; Ctrl-C stops)")
        # The server's own status (a crash, a signal) is a failure, 1: exit codes mean 0, 1 or 2 only.
        return 0 if _serve(ui_command(args.lake, args.port, workspace=folder)) == 0 else 1


def _serve(command: list[str]) -> int:
    process = subprocess.Popen(command, env=ui_environment())
    # Stopped by a signal, stop the server too rather than leave it serving alone.
    signal.signal(signal.SIGTERM, lambda *_: process.terminate())
    # Ctrl-C stops it even when it was started with SIGINT ignored (a script's background job, a CI runner), where
    # Python installs no KeyboardInterrupt of its own: as `serve` and `review`, whose uvicorn sets its handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait(timeout=15)
        return 0
