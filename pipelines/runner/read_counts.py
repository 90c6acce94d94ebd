"""How far a Beam run has read, while it runs, for its progress bar: counts written by the workers, summed here.

    with counted_run(Progress("audit", total=4500)) as folder:
        messages | "CountProgress" >> CountMessages(folder)     # a branch of the graph, outputs nothing
        ...run the pipeline...

A run's workers may be other processes (the multi-process FnApiRunner, Prism's workers), so the count cannot
be a variable: each worker writes its count to a small file of a folder (replaced whole, at most twice a
second and at the end of each bundle), and a thread of the command sums the files. On a runner whose workers
cannot write to this machine's folder (a remote cluster) the bar stays at its start; the final counts still
come from Beam's metrics.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import apache_beam as beam

from pipelines.runner.progress import Progress

__all__ = ["CountMessages", "counted_run"]


class CountMessages(beam.PTransform):
    """A branch that counts the elements it sees into `folder` (one small file per worker), for `watch_counts`.
    It outputs nothing; the elements go on along the main branch untouched."""

    def __init__(self, folder: str):
        super().__init__()
        self._folder = folder

    def expand(self, messages):
        return messages | "CountToFile" >> beam.ParDo(_CountToFile(self._folder))


class _CountToFile(beam.DoFn):
    WRITE_EVERY_SECONDS = 0.5

    def __init__(self, folder: str):
        self._folder = folder

    def setup(self) -> None:
        self._path = os.path.join(self._folder, uuid.uuid4().hex)
        self._count, self._written_at = 0, 0.0

    def process(self, element: Any) -> Iterator[Any]:
        self._count += 1
        if time.monotonic() - self._written_at >= self.WRITE_EVERY_SECONDS:
            self._write()
        return iter(())

    def finish_bundle(self) -> None:
        self._write()

    def _write(self) -> None:
        self._written_at = time.monotonic()
        temporary = f"{self._path}.tmp"
        with open(temporary, "w") as f:
            f.write(str(self._count))
        os.replace(temporary, self._path)  # the watcher never reads half a number


def _counted(folder: str) -> int:
    total = 0
    for name in os.listdir(folder):
        if not name.endswith(".tmp"):
            with contextlib.suppress(OSError, ValueError):  # a file being replaced: counted on the next look
                with open(os.path.join(folder, name)) as f:
                    total += int(f.read() or 0)
    return total


@contextlib.contextmanager
def counted_run(progress: Progress, *, poll_seconds: float = 0.5) -> Iterator[str]:
    """A folder for `CountMessages`, watched while the block runs: its sum moves `progress` on. At the end the
    count is taken once more, and the progress closed."""
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="groundwatch-progress-") as folder:

        def watch() -> None:
            while not stop.wait(poll_seconds):
                progress.update_to(_counted(folder))

        watcher = threading.Thread(target=watch, name="groundwatch-progress", daemon=True)
        watcher.start()
        try:
            yield folder
        finally:
            stop.set()
            watcher.join()
            progress.update_to(_counted(folder))
            progress.close()
