"""What every command shares on its command line: the lake flag, times, usage errors, a port check, old names.

    add_lake_argument(parser)               # --lake, one name, one default, one help
    lake = existing_lake(args.lake)         # the one check of a lake a command reads: UsageError if none is there
    check_port_free("127.0.0.1", 8000)      # UsageError before a server prints a URL it cannot serve
    add_deprecated_alias(parser, "--kafka-bootstrap", "--bootstrap-servers")

A `UsageError` raised by a command's `main` becomes one line on stderr (`groundwatch <command>: <why>`) and
exit 2 (`exits_2_on_usage_error` on the `main`; the dispatcher `pipelines.cli` for any other). Old flag names
stay as hidden aliases: they still work, print one deprecation line and do not show in `--help`.
"""

from __future__ import annotations

import argparse
import errno
import functools
import os
import socket
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from transforms.io.lake import filesystem as lakefs

__all__ = [
    "DEFAULT_LAKE",
    "LAKE_HELP",
    "LAKE_WHAT",
    "UsageError",
    "add_deprecated_alias",
    "exits_2_on_usage_error",
    "add_lake_argument",
    "check_port_free",
    "existing_lake",
    "iso_time",
]

DEFAULT_LAKE = "./groundwatch-lake"
LAKE_WHAT = "Audit lake: a folder or a URI (s3://bucket/lake)."
LAKE_HELP = f"{LAKE_WHAT} Default {DEFAULT_LAKE}."


class UsageError(ValueError):
    """Bad usage a user can fix: the dispatcher prints it on one line and exits 2."""


def exits_2_on_usage_error(command: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """A command's `main` that says a `UsageError` in one line and returns 2, also when called directly."""

    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(args: argparse.Namespace) -> int:
            try:
                return main(args)
            except UsageError as e:
                print(f"groundwatch {command}: {e}", file=sys.stderr)
                return 2

        return run

    return wrap


def add_lake_argument(parser: argparse.ArgumentParser) -> None:
    """The `--lake` flag: the same name, default and help in every command."""
    parser.add_argument("--lake", default=DEFAULT_LAKE, help=LAKE_HELP)


def existing_lake(location: str) -> str:
    """`location` when an audit lake is there (a folder, or a prefix some object lies under); else UsageError."""
    try:
        lakefs.check_location(location)
        found = lakefs.is_dir(lakefs.normalize(location))
    except (ValueError, OSError) as e:
        raise UsageError(f"--lake {location}: {e}") from None
    if found:
        return location
    if lakefs.is_remote(location):
        raise UsageError(f"--lake {location}: no audit lake there (no object under that prefix)")
    if os.path.exists(location):
        raise UsageError(f"--lake {location} is not a folder")
    raise UsageError(f"--lake {location} does not exist: no audit lake there (run groundwatch audit or demo first)")


def check_port_free(host: str, port: int) -> None:
    """UsageError when another process holds `host:port`, so a server says so before it prints its URL.

    The test bind sets SO_REUSEADDR as uvicorn does, so a port left in TIME_WAIT still counts as free."""
    if port == 0:
        return  # the system picks a free one
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"--port {port}: {host}:{port} is already in use; stop what holds it or choose another --port"
                ) from None
            raise UsageError(f"--host {host} --port {port}: cannot listen there ({e.strerror})") from None


def iso_time(text: str) -> datetime:
    """An ISO 8601 time given on the command line (`2026-11-29T09:00Z`); one without a zone is UTC."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class _DeprecatedAlias(argparse.Action):
    """Stores into the new flag's destination, with one line saying the new name."""

    def __init__(self, option_strings, dest, *, new_flag: str, **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self._new_flag = new_flag

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"groundwatch: {option_string} is deprecated; use {self._new_flag}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept `old` as a hidden alias of the already declared flag `new` (same destination and type)."""
    action = next(a for a in parser._actions if new in a.option_strings)
    typed: dict[str, Any] = {} if action.type is None else {"type": action.type}
    parser.add_argument(
        old, dest=action.dest, new_flag=new, action=_DeprecatedAlias, help=argparse.SUPPRESS,
        default=argparse.SUPPRESS, **typed,
    )  # fmt: skip
