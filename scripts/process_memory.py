"""Resident memory of a process group, for the benchmarks: a local run's workers are processes of their own.

with PeakMemory(os.getpgid(0)) as peak:
    run_something()
peak.bytes   # the largest sum of the group's resident memory seen, sampled every half second

before = group_cpu(pgid); ...; spent = cpu_by_role(before, group_cpu(pgid))   # CPU seconds of each kind of process
"""

from __future__ import annotations

import os
import threading

__all__ = ["PeakMemory", "cpu_by_role", "group_cpu", "group_rss"]

ROLES = (
    ("default_environment", "SDK worker: read, dedupe, lake"),
    ("pipelines.runner.worker_pool", "SDK workers: audit lanes"),
    ("prism", "Prism"),
    ("pipelines.cli", "monitor process"),
)
"""A process's role, by the first of these its command line holds (a stream's workers are named for their
environment: the lanes each have one of their own, the rest of the graph runs in the default one)."""


def _group_pids(pgid: int) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.getpgid(int(pid)) == pgid:
                pids.append(int(pid))
        except (OSError, ProcessLookupError):
            continue  # the process ended while we looked
    return pids


def group_cpu(pgid: int) -> dict[int, tuple[float, str]]:
    """CPU seconds (user + system) so far of every live process in process group `pgid`, with its role
    (`ROLES`, else "other")."""
    ticks = os.sysconf("SC_CLK_TCK")
    seen = {}
    for pid in _group_pids(pgid):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline") as cmdline:
                command = cmdline.read().replace("\0", " ")
        except OSError:
            continue
        role = next((name for part, name in ROLES if part in command), "other")
        seen[pid] = ((int(fields[11]) + int(fields[12])) / ticks, role)
    return seen


def cpu_by_role(before: dict[int, tuple[float, str]], after: dict[int, tuple[float, str]]) -> dict[str, float]:
    """CPU seconds each role spent between two `group_cpu` snapshots (a process that ended between them is
    not counted: take `after` before stopping anything)."""
    spent: dict[str, float] = {}
    for pid, (cpu, role) in after.items():
        spent[role] = spent.get(role, 0.0) + cpu - before.get(pid, (0.0, role))[0]
    return spent


def group_rss(pgid: int) -> int:
    """The resident memory, in bytes, of every process in process group `pgid` now."""
    total = 0
    for pid in _group_pids(pgid):
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
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
