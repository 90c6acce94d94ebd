"""Beam's own log lines set aside during a run, so that a command's output is the command's.

    with runner_logs_aside("audit") as aside:
        code = run()
    aside.keep = code != 0        # a failed run says where its runner's lines are; a good one deletes them

Beam's runner and its SDK worker processes log to stderr at INFO: about 40 lines for a two-worker audit
(control channels, state caches, "No semi_persistent_directory found"), some of them before the workers have
read any option that could lower the level. Those processes inherit our stderr, so the only place to catch
them all is the file descriptor: for the run, descriptor 2 points at a log file, `sys.stderr` (what our
commands print to) at a copy of the original, and the `apache_beam` logger of this process is raised to
ERROR. `--verbose` runs without this. Errors still reach the user: ours directly, the runner's in the file
named when the command fails.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["RunnerLogs", "runner_logs_aside"]


@dataclass
class RunnerLogs:
    """Where the runner's lines went, and whether to keep the file after the run."""

    path: str
    keep: bool = False


@contextlib.contextmanager
def runner_logs_aside(command: str) -> Iterator[RunnerLogs]:
    fd, path = tempfile.mkstemp(prefix=f"groundwatch-{command}-", suffix=".log")
    aside = RunnerLogs(path)
    beam_logger = logging.getLogger("apache_beam")
    level = beam_logger.level
    beam_logger.setLevel(logging.ERROR)
    ours = _real_stderr()
    saved = os.dup(2)
    if ours is not None:
        ours.flush()
        sys.stderr = os.fdopen(os.dup(saved), "w", buffering=1, encoding=ours.encoding, errors=ours.errors)
    os.dup2(fd, 2)
    try:
        yield aside
    finally:
        if ours is not None:
            sys.stderr.flush()
            sys.stderr.close()
            sys.stderr = ours
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)
        beam_logger.setLevel(level)
        if aside.keep and os.path.getsize(path):
            print(
                f"groundwatch {command}: the runner's log lines are in {path} (--verbose shows them)", file=sys.stderr
            )
        else:
            os.unlink(path)


def _real_stderr():
    """`sys.stderr` when it writes to descriptor 2 (not a test's capture): it must be moved off descriptor 2."""
    try:
        return sys.stderr if sys.stderr.fileno() == 2 else None
    except (AttributeError, OSError, ValueError):
        return None
