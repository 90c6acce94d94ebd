"""What the benchmarks read of processes from /proc: a local run's workers are processes of their own, and so is a
local broker.

with PeakMemory(os.getpgid(0)) as peak:
    run_something()
peak.bytes   # the largest sum of the group's resident memory seen, sampled every half second

before = group_cpu(pgid); ...; spent = cpu_by_role(before, group_cpu(pgid))   # CPU seconds of each kind of process
pids_cpu(listeners("127.0.0.1:39092"))   # CPU seconds so far of what listens there (a local broker's JVM)
listening_inodes(); holding(pids, inodes)   # which of some processes hold a listening socket (the tests' tier guard)
wall, cpu, code, output = timed_run([sys.executable, "-m", "pipelines.cli", "audit", ...], env=env, cwd=root)
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import threading
import time
from collections.abc import Iterable

__all__ = [
    "PeakMemory",
    "cpu_by_role",
    "cpu_seconds",
    "describe",
    "group_cpu",
    "group_rss",
    "holding",
    "listeners",
    "listening_inodes",
    "loopback_ports",
    "pids_cpu",
    "pids_listening_on",
    "timed_run",
]

ROLES = (
    ("default_environment", "SDK worker: read, dedupe, lake"),
    ("pipelines.runner.worker_pool", "SDK workers: audit lanes"),
    ("prism", "Prism"),
    ("pipelines.cli", "monitor process"),
)
"""A process's role, by the first of these its command line holds (a stream's workers are named for their
environment: the lanes each have one of their own, the rest of the graph runs in the default one)."""


def timed_run(argv: list[str], *, env: dict[str, str], cwd: str) -> tuple[float, float, int, str]:
    """Run a command to its end: its wall-clock seconds, its CPU seconds (the process and every child it waited
    for, such as a local run's worker processes), its exit code and its output (stdout and stderr together)."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd)
    assert process.stdout is not None  # stdout=PIPE
    with process.stdout:
        output = process.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), output


def _group_pids(pgid: int) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.getpgid(int(pid)) == pgid:
                pids.append(int(pid))
        except (OSError, ProcessLookupError):
            continue  # the process ended while we looked
    return pids


def cpu_seconds(pid: int, *, reaped: bool = False) -> float | None:
    """CPU seconds (user + system) so far of process `pid`, with those of the children it reaped if `reaped`;
    None once it has ended."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11 : 15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")  # utime, stime[, cu, cs]


def group_cpu(pgid: int) -> dict[int, tuple[float, str]]:
    """CPU seconds (user + system) so far of every live process in process group `pgid`, with its role
    (`ROLES`, else "other")."""
    seen = {}
    for pid in _group_pids(pgid):
        try:
            with open(f"/proc/{pid}/cmdline") as cmdline:
                command = cmdline.read().replace("\0", " ")
        except OSError:
            continue
        cpu = cpu_seconds(pid)
        if cpu is not None:
            seen[pid] = (cpu, next((name for part, name in ROLES if part in command), "other"))
    return seen


def cpu_by_role(before: dict[int, tuple[float, str]], after: dict[int, tuple[float, str]]) -> dict[str, float]:
    """CPU seconds each role spent between two `group_cpu` snapshots (a process that ended between them is
    not counted: take `after` before stopping anything)."""
    spent: dict[str, float] = {}
    for pid, (cpu, role) in after.items():
        spent[role] = spent.get(role, 0.0) + cpu - before.get(pid, (0.0, role))[0]
    return spent


def listening_inodes(port: int | None = None) -> set[str]:
    """The inodes of the TCP sockets in the LISTEN state on this machine (IPv4 and IPv6), or only of those on
    `port`, any address."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as lines:
                next(lines)  # the header
                for fields in map(str.split, lines):
                    if len(fields) > 9 and fields[3] == "0A" and (port is None or _port_of(fields[1]) == port):
                        inodes.add(fields[9])  # 0A: LISTEN
        except OSError:
            continue  # no IPv6 on this machine
    return inodes


def _port_of(local_address: str) -> int:
    """The port of a /proc/net/tcp address (`0100007F:9984`: hex address, hex port)."""
    return int(local_address.rsplit(":", 1)[1], 16)


def holding(pids: Iterable[int], inodes: set[str]) -> set[int]:
    """Those of `pids` that run as this user and hold an open file descriptor on one of the sockets `inodes`."""
    found = set()
    for pid in pids if inodes else ():
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # it ended while we looked, or its descriptors are not ours to read
        for fd in descriptors:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                found.add(pid)
                break
    return found


def pids_listening_on(port: int) -> set[int]:
    """The processes of this user that listen on TCP `port`, on any address."""
    return holding(map(int, filter(str.isdigit, os.listdir("/proc"))), listening_inodes(port))


KAFKA_PORT = 9092
"""The port of a bootstrap address that names none, as Kafka's clients assume."""


def loopback_ports(addresses: str) -> list[int]:
    """The ports of those comma-separated `host[:port]` addresses (Kafka's bootstrap servers) that name this
    machine's loopback: `localhost`, an address of 127.0.0.0/8 or `::1`, bracketed when it has a port (`[::1]:9092`).
    An address without a port has Kafka's own; other hosts, and names of services instead of ports, give none."""
    ports = []
    for address in filter(None, (a.strip() for a in addresses.split(","))):
        if address.startswith("["):  # [IPv6]:port
            host, _, rest = address[1:].partition("]")
            port = rest.removeprefix(":") or str(KAFKA_PORT)
        elif address.count(":") == 1:
            host, port = address.split(":")
        else:  # a host alone, or an IPv6 address without brackets (and so without a port)
            host, port = address, str(KAFKA_PORT)
        if port.isdigit() and _loopback(host):
            ports.append(int(port))
    return ports


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: resolving it is not for a benchmark to do
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def listeners(addresses: str) -> set[int]:
    """The processes of this user that listen at the ports of `addresses` on this machine (`loopback_ports`): a
    local broker's JVM, given its bootstrap servers. Empty for a broker elsewhere."""
    return set().union(*map(pids_listening_on, loopback_ports(addresses)))


def pids_cpu(pids: set[int]) -> float | None:
    """CPU seconds (user + system) so far of the processes `pids`; None if one of them has ended."""
    seconds = [cpu_seconds(pid) for pid in pids]
    return None if None in seconds else sum(seconds)


def describe(pids: set[int]) -> str:
    """`pid (name)` of each of `pids`, for a report to say what it counted."""
    named = []
    for pid in sorted(pids):
        try:
            with open(f"/proc/{pid}/comm") as comm:
                named.append(f"{pid} ({comm.read().strip()})")
        except OSError:
            named.append(f"{pid} (ended)")
    return ", ".join(named)


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
