"""The `groundwatch` command: one sub-command per module in `pipelines/`.

Each command module exposes `add_arguments(parser)` and `main(args) -> int`;
it is imported only when its command runs, so `groundwatch query` does not pay
for Beam and `groundwatch --help` is instant. Exit codes: 0 success, 1 a check
failed (a drift test or an alert fired, when asked to fail on it), 2 bad usage
or bad input. Arguments a command does not declare pass to Beam if the command runs a pipeline
(`ACCEPTS_PIPELINE_ARGS`) and Beam knows them as pipeline options; any other is refused, with the closest
flag named (`--windw-seconds`: did you mean --window-seconds?). Every usage error is one line naming the
problem, and exit 2; `groundwatch --version` prints the package's version and each verifier's. A command
that runs a pipeline sets Beam's own log lines aside (`pipelines.runner.runner_logs`) unless `--verbose`.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import importlib
import os
import sys
import threading
import traceback
from collections.abc import Sequence

from pipelines.runner.runner_logs import runner_logs_aside

__all__ = ["COMMANDS", "console", "main", "version_text"]

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
    "review": ("pipelines.review", "the review workbench: a web app over the lake; label, import and export labels"),
    "gate": ("pipelines.gate", "audit a JSONL file for CI: exit 1 when a threshold is breached; JUnit and Markdown"),
    "verify-lake": ("pipelines.verify_lake", "prove the lake's files unaltered against its hash-chained manifest"),
}


class _ParseFailure(Exception):
    """argparse's complaint, raised instead of printing the usage and exiting, so it can be said in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise _ParseFailure(message)


class _Version(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="Print the version and each verifier's, then exit.")

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def version_text() -> str:
    """`groundwatch 0.1.0` and a line per verifier with the version its verdicts carry in the lake."""
    from importlib.metadata import PackageNotFoundError, version

    # kept lazy: start-up (only --version pays for the verifiers)
    from transforms.verify.registry import verifier_versions

    try:
        package = version("groundwatch")
    except PackageNotFoundError:  # run from a checkout that was never installed
        package = "unknown (not installed)"
    lines = [f"groundwatch {package}"]
    lines += [f"  verifier {name} {v}" for name, v in verifier_versions().items()]
    return "\n".join(lines)


def _parser(command: str | None, argv: Sequence[str] = ()) -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser, and the flags of `command` (its parser is the only one with flags) and of its sub-command."""
    parser = _Parser(prog="groundwatch", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    flags: list[str] = []
    for name, (module_name, help_text) in COMMANDS.items():
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == command:
            module = importlib.import_module(module_name)
            module.add_arguments(command_parser)
            if getattr(module, "ACCEPTS_PIPELINE_ARGS", False):
                command_parser.add_argument(
                    "--verbose", action="store_true", help="Show the log lines of Beam's runner and workers."
                )
            flags = _flags(command_parser, argv)
    return parser, flags


def _flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """The flags of `parser` and of the sub-command `argv` names (`review label --response-id ...`)."""
    flags = [s for action in parser._actions for s in action.option_strings]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = next((action.choices[a] for a in argv if a in action.choices), None)
            if chosen is not None:
                flags += _flags(chosen, argv)
    return flags


def _own_flag(name: str, flags: list[str]) -> bool:
    """Whether `name` is one of the command's flags, or an abbreviation of some that argparse accepts."""
    return name == "--" or any(f.startswith(name) for f in flags if f.startswith("--"))


def _misspelled(argv: list[str], flags: list[str]) -> str | None:
    """`unrecognized argument --inptu; did you mean --input?` for the first flag the command does not know."""
    own = [f for f in flags if f.startswith("--")]
    for token in argv:
        name = token.split("=", 1)[0]
        if not name.startswith("--") or _own_flag(name, flags):
            continue
        close = difflib.get_close_matches(name, own, n=1)
        return f"unrecognized argument {name}" + (f"; did you mean {close[0]}?" if close else "")
    return None


def _refusal(module, extra: list[str], flags: list[str]) -> str | None:
    """Why the arguments the command did not declare cannot stand, or None (Beam options of a pipeline)."""
    if not getattr(module, "ACCEPTS_PIPELINE_ARGS", False):
        return _misspelled(extra, flags) or f"unrecognized arguments: {' '.join(extra)}"
    # kept lazy: start-up (Beam's options, read only when needed)
    from pipelines.options.flags import refuse_unknown_args

    return refuse_unknown_args(extra, flags)


def main(argv: list[str] | None = None) -> int:
    from pipelines.options.common import UsageError  # kept lazy: start-up

    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    known = command if command in COMMANDS else None
    parser, flags = _parser(known, argv)
    who = f"groundwatch {known}" if known else "groundwatch"
    try:
        args, extra = parser.parse_known_args(argv)
    except _ParseFailure as e:
        # A misspelled flag first: argparse would only say that the flag it stands for is missing.
        module = importlib.import_module(COMMANDS[known][0]) if known else None
        unknown = [a for a in argv if a.startswith("--") and not _own_flag(a.split("=", 1)[0], flags)]
        typo = _refusal(module, unknown, flags) if module and unknown else None
        if command and not known and (close := difflib.get_close_matches(command, COMMANDS, n=1)):
            typo = f"unknown command {command!r}; did you mean {close[0]}?"
        print(f"{who}: {typo} ({e})" if typo else f"{who}: {e}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[args.command][0])
    args.extra_args = extra  # Beam runner options pass through to the pipelines that take them
    _name_run(args.command)
    if extra and (reason := _refusal(module, extra, flags)):
        print(f"{who}: {reason}", file=sys.stderr)
        return 2
    try:
        if not getattr(args, "verbose", True):  # a pipeline command, not asked for Beam's log lines
            with runner_logs_aside(args.command) as aside:
                aside.keep = (code := module.main(args)) != 0
            return code
        return module.main(args)
    except UsageError as e:
        print(f"{who}: {e}", file=sys.stderr)
        return 2


def _name_run(command: str) -> None:
    """The run's id and command, for the lake manifest's entries (in the environment, so Beam's worker
    processes, which inherit it, record them too)."""
    import uuid

    from transforms.io.lake.manifest import COMMAND_VARIABLE, RUN_ID_VARIABLE  # kept lazy: start-up

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
