"""Resident memory of a process group, for the benchmarks: a local run's workers are processes of their own.

with PeakMemory(os.getpgid(0)) as peak:
    run_something()
peak.bytes   # the largest sum of the group's resident memory seen, sampled every half second
"""

from __future__ import annotations

import os
import threading

__all__ = ["PeakMemory", "group_rss"]


def group_rss(pgid: int) -> int:
    """The resident memory, in bytes, of every process in process group `pgid` now."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except (OSError, ProcessLookupError):
            continue  # the process ended while we looked
    return total


class PeakMemory:
    """Samples a process group's resident memory every `interval` seconds while the `with` block runs."""

    def __init__(self, pgid: int, interval: float = 0.5):
        self._pgid, self._interval = pgid, interval
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self.bytes = 0

    def _sample(self):
        while True:
            self.bytes = max(self.bytes, group_rss(self._pgid))
            if self._halt.wait(self._interval):
                return

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._halt.set()
        self._thread.join()
