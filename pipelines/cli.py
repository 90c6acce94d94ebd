"""The `groundwatch` command: one sub-command per module in `pipelines/`.

Each command module exposes `add_arguments(parser)` and `main(args) -> int`;
it is imported only when its command runs, so `groundwatch query` does not pay
for Beam and `groundwatch --help` is instant. Exit codes: 0 success, 1 a check
failed (a drift test or an alert fired, when asked to fail on it), 2 bad usage
or bad input. Arguments a command does not declare pass to Beam if the command runs a pipeline
(`ACCEPTS_PIPELINE_ARGS`) and Beam knows them as pipeline options; any other is refused, with the closest
flag named (`--windw-seconds`: did you mean --window-seconds?).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import sys
import threading
import traceback
from datetime import UTC, datetime

__all__ = ["COMMANDS", "console", "iso_time", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("pipelines.demo", "run the whole audit on shipped sample traffic and print a summary"),
    "audit": ("pipelines.audit", "audit a JSONL file (or glob) of logged responses into the lake"),
    "query": ("pipelines.query", "run read-only SQL over the audit lake with DuckDB"),
    "compact": ("pipelines.compact", "rewrite lake partitions holding duplicates as one file of one row per key"),
    "monitor": ("pipelines.monitor", "audit a Kafka topic continuously (streaming)"),
    "produce": ("pipelines.produce", "publish sample, generated or file traffic to Kafka"),
    "calibrate": ("pipelines.calibrate", "measure a verifier against a labeled golden set"),
    "replay": ("pipelines.replay", "re-run judge verifications that failed validation"),
    "metrics": ("pipelines.metrics", "compute window metrics again from the lake (late data, restarts)"),
    "drift": ("pipelines.drift", "compare windows with a reference using Evidently and raise alerts"),
    "report": ("pipelines.report", "write a standalone HTML report of the lake"),
    "ui": ("pipelines.ui", "start the Evidently UI on the lake's workspace"),
    "serve": ("pipelines.serve", "verify responses over HTTP (JSON API on uvicorn), optionally publishing them"),
    "gate": ("pipelines.gate", "audit a JSONL file for CI: exit 1 when a threshold is breached; JUnit and Markdown"),
    "verify-lake": ("pipelines.verify_lake", "prove the lake's files unaltered against its hash-chained manifest"),
}


def iso_time(text: str) -> datetime:
    """An ISO 8601 time given on the command line (`2026-11-29T09:00Z`); one without a zone is UTC."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _parser(command: str | None) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser, and the flags of `command` (its parser is the only one with flags)."""
    parser = argparse.ArgumentParser(prog="groundwatch", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    flags: list[str] = []
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            importlib.import_module(module_name).add_arguments(command_parser)
            flags = [s for action in command_parser._actions for s in action.option_strings]
    return parser, flags


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser, flags = _parser(command if command in COMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    args.extra_args = extra  # Beam runner options pass through to the pipelines that take them
    _name_run(args.command)
    if extra and not getattr(module, "ACCEPTS_PIPELINE_ARGS", False):
        print(f"groundwatch {args.command}: unrecognized arguments: {' '.join(extra)}", file=sys.stderr)
        return 2
    if extra:
        from pipelines.options.flags import refuse_unknown_args

        if reason := refuse_unknown_args(extra, flags):
            print(f"groundwatch {args.command}: {reason}", file=sys.stderr)
            return 2
    return module.main(args)


def _name_run(command: str) -> None:
    """The run's id and command, for the lake manifest's entries (in the environment, so Beam's worker
    processes, which inherit it, record them too)."""
    import uuid

    from transforms.io.lake.manifest import COMMAND_VARIABLE, RUN_ID_VARIABLE

    os.environ[RUN_ID_VARIABLE] = uuid.uuid4().hex
    os.environ[COMMAND_VARIABLE] = command


def console() -> None:
    """The `groundwatch` program: `main`, then an exit with its status that no leftover worker thread can crash.

    A run with `--environment_type=LOOPBACK` serves the runner's SDK worker from threads of this process. If
    the runner goes away mid-run (a Flink TaskManager lost), nothing stops them: the command prints its error
    while some still audit bundles, write lake files or wait in gRPC calls (seen after a killed TaskManager).
    The interpreter's finalization ends such daemon threads where they stand, and inside C++ code (gRPC, Arrow)
    that can abort the process (SIGABRT, exit -6 instead of 1). So a command that failed, with nothing but
    daemon threads left, ends without that finalization: the exit handlers (`atexit`) run, the output is
    flushed, and the process exits with the command's status. A lake file the threads left half-written is a
    temporary one (`transforms.io.lake.cleanup`). A command that succeeded, or left a non-daemon thread, exits
    the plain way.
    """
    code = _status_of_main()
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]  # the live ones
    if code != 0 and others and all(t.daemon for t in others):
        # The exit handlers, but not threading's own exit hooks: those join every `concurrent.futures` worker,
        # which a thread that never ends (a gRPC stream to a runner that is gone) would keep waiting.
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more to say
                stream.flush()
        os._exit(code)
    sys.exit(code)


def _status_of_main() -> int:
    """`main`'s exit status, also when it raised: 130 for Ctrl-C, 1 (after the traceback) for an error."""
    try:
        return main()
    except SystemExit as e:  # argparse's --help and usage errors
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    console()
