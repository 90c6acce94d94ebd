"""Progress of long work on the command line: a bar on a terminal, a one-line count every few seconds otherwise.

    with Progress("drift", total=len(windows), unit="windows") as progress:
        for window in windows:
            check(window)
            progress.advance()

On a terminal the bar is tqdm's, on stderr. Anywhere else (a CI log, a pipe, a file) a bar would write
hundreds of carriage returns, so a line such as `groundwatch drift: 120 of 532 windows (23%)` is printed
at most every `LINE_EVERY_SECONDS`, and once more at the end with the final count.
A Beam run's progress comes from its workers (`pipelines.runner.read_counts`). This module imports neither
Beam nor pandas: commands that do not run a pipeline show progress without paying for them.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO

from tqdm import tqdm

__all__ = ["LINE_EVERY_SECONDS", "Progress"]

LINE_EVERY_SECONDS = 5.0
"""How often, at most, the line form prints a count: often enough to show life, rare enough for a log."""


class Progress:
    """A count of `unit` towards `total` (None: unknown), shown as a bar on a terminal, else as a line at most
    every `every` seconds and at the end. `clock` is injectable for tests."""

    def __init__(
        self,
        command: str,
        *,
        total: int | None = None,
        unit: str = "messages",
        stream: IO[str] | None = None,
        every: float = LINE_EVERY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._stream = stream if stream is not None else sys.stderr
        self._command, self._total, self._unit, self._every, self._clock = command, total, unit, every, clock
        self._done = 0
        self._lock = threading.Lock()
        self._said_at = clock()
        self._bar = None
        if _is_terminal(self._stream):
            self._bar = tqdm(total=total, unit=f" {unit}", desc=f"groundwatch {command}", file=self._stream)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def done(self) -> int:
        return self._done

    def advance(self, count: int = 1) -> None:
        self.update_to(self._done + count)

    def update_to(self, done: int) -> None:
        """Set the count (it never goes back), and show it if it is time."""
        with self._lock:
            if done <= self._done:
                return
            if self._bar is not None:
                self._bar.update(done - self._done)
            self._done = done
            if self._bar is None and self._clock() - self._said_at >= self._every:
                self._say()

    def close(self) -> None:
        """The final count: the bar closed, or one last line."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
            else:
                self._say()

    def _say(self) -> None:
        self._said_at = self._clock()
        if self._total:
            share = f" of {self._total} {self._unit} ({self._done / self._total:.0%})"
        else:
            share = f" {self._unit}"
        print(f"groundwatch {self._command}: {self._done}{share}", file=self._stream, flush=True)


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
