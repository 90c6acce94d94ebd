"""Jars from Maven Central for the local JVM servers the scripts run (Kafka, Beam's Flink job server), a Java to run
them with, and the port and process helpers both need.

`scripts/kafka_broker.py` and `scripts/flink_cluster.py` load this module by its path beside them (they are
command-line tools, not a package, and tests load them by path too):

    libs = ensure_libs(POM, CACHE / "flink" / version / "lib", f"Beam {version}", FlinkError)
    java = find_java((11, 17), FlinkError, env_var="GROUNDWATCH_FLINK_JAVA")  # kafka_broker.py runs `java` from PATH
    port = free_port()                              # or port_free(38099); pid_alive(pid); terminate(pid, 20.0)
    port = listen_port(pair=True)                   # for a server that restarts: outside the ephemeral range

`ensure_libs` resolves a pom's runtime dependencies with `mvn dependency:copy-dependencies` into a staging folder
of this process, marks it complete and renames it into place, so an interrupted or concurrent download never
leaves a half-filled folder that looks usable. Nothing it fetches is committed: it lives in the user's cache.
"""

from __future__ import annotations

import contextlib
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = [
    "CACHE",
    "ensure_libs",
    "ephemeral_ports",
    "find_java",
    "free_port",
    "listen_port",
    "pid_alive",
    "pom_property",
    "port_free",
    "terminate",
]

CACHE = Path(os.environ.get("GROUNDWATCH_CACHE", Path.home() / ".cache" / "groundwatch"))
"""The user's cache both scripts keep their jars and default run folders in (`$GROUNDWATCH_CACHE`)."""

MARKER = ".complete"
"""The file written last into a resolved folder: its presence means every jar is there."""


def pom_property(pom: Path, name: str, error: type[Exception] = RuntimeError) -> str:
    """The value of `<name>` in the pom's properties (the version it pins)."""
    match = re.search(rf"<{re.escape(name)}>([^<]+)</{re.escape(name)}>", pom.read_text())
    if not match:
        raise error(f"no <{name}> in {pom}")
    return match.group(1)


def ensure_libs(pom: Path, lib: Path, what: str, error: type[Exception] = RuntimeError) -> Path:
    """Resolve the runtime jars of `pom` into `lib` once (`what` names them in errors); return `lib`."""
    if (lib / MARKER).exists():
        return lib
    if shutil.which("mvn") is None:
        raise error("mvn is not on PATH; install Maven (apt-get install maven) and a Java 17 runtime")
    staging = lib.with_name(f"{lib.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        "mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}", "-DincludeScope=runtime",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise error(f"mvn could not resolve {what}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
    (staging / MARKER).write_text(what)
    shutil.rmtree(lib, ignore_errors=True)
    staging.rename(lib)
    return lib


def _java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 else major


def find_java(majors: tuple[int, ...], error: type[Exception] = RuntimeError, env_var: str = "") -> str:
    """A Java runtime of one of `majors`: `$<env_var>`, `$JAVA_HOME`, `java` on PATH, or one under /usr/lib/jvm
    (newest listed major first), so a machine whose default Java is too new still finds a fitting one."""
    candidates = [os.environ.get(env_var) if env_var else None]
    if home := os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(home, "bin", "java"))
    candidates.append(shutil.which("java"))
    for major in sorted(majors, reverse=True):
        candidates += sorted(glob.glob(f"/usr/lib/jvm/*{major}*/bin/java"))
    for java in filter(None, candidates):
        if os.access(java, os.X_OK) and _java_major(java) in majors:
            return os.path.realpath(java)
    wanted = " or ".join(map(str, majors))
    raise error(f"no Java {wanted} runtime found (apt-get install openjdk-17-jre-headless, or set JAVA_HOME)")


def port_free(port: int) -> bool:
    """Whether `port` can be bound on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port of 127.0.0.1 that is free now (the system's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ephemeral_ports() -> tuple[int, int]:
    """The range the system takes outgoing connections' own ports from (Linux's `ip_local_port_range`)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default
    return low, high


def listen_port(*, pair: bool = False, tries: int = 200) -> int:
    """A free port of 127.0.0.1 below the system's ephemeral range (with `pair`, the next one free too), for a
    server that stops and starts again on it: no outgoing connection is given such a port as its own, where a
    port of `free_port` can be, while its server is down, and is then not free for the restart. Chosen at
    random, so that two callers rarely meet; `free_port` when the range leaves no room below it."""
    low, _ = ephemeral_ports()
    first, last = max(1024, low - 12_000), low - 2
    if last - first < 100:
        return free_port()
    rng = random.SystemRandom()
    for _ in range(tries):
        port = rng.randint(first, last)
        if port_free(port) and (not pair or port_free(port + 1)):
            return port
    return free_port()


def pid_alive(pid: int | None) -> bool:
    """Whether process `pid` runs. A zombie has ended: this process reaps its own children's; another's (left by a
    parent that has not reaped it yet, or by an init that reaps no orphans) is read as ended from /proc."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return process_state(pid) != "Z"  # without /proc (None), os.kill's answer stands


def process_state(pid: int) -> str | None:
    """The state letter /proc gives process `pid` (R running, S sleeping, Z zombie, ...); None if it has none."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def terminate(pid: int, grace_s: float) -> None:
    """SIGTERM `pid`, and SIGKILL it if it still runs after `grace_s`; return once it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while pid_alive(pid):
            time.sleep(0.1)
