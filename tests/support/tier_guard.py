"""The test tiers, enforced: `--tier fast` runs no test that needs a service and fails one that starts a server.

Tiers (README and docs/development.md give the commands):
- `fast` (`make test-fast`): plain functions and small in-process Beam graphs. Tests marked with a service
  marker (`SERVICE_MARKERS`) or as scenario tests (`SCENARIO_MARKER`) are deselected, and every other test
  runs under the guard below.
- `integration` (`make test-integration`): only the tests with one of those markers.
- no `--tier` (`scripts/test.sh`): everything.

Tests under `tests/integration/<service>/` get that service's marker from their folder, so a test put there
cannot be forgotten by the fast tier's deselection.

The guard fails a fast test that listens on a port or starts a process that does: (1) `socket.listen` in this
process is refused and recorded (uvicorn, http.server, moto in-process, asyncio servers); (2) a Python process
the test starts gets the same refusal from `tier_site/sitecustomize.py`, which records it in a log file this
plugin reads after each test; (3) any other process the test starts (Prism, Java, chromium) is watched while it
runs, and a listening socket among its open files fails the test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from tests.support.scripts import load_script

__all__ = ["SCENARIO_MARKER", "SERVICE_MARKERS", "listening_pids"]

_processes = load_script("process_memory")  # reads /proc: which processes hold listening sockets

SERVICE_MARKERS = ("kafka", "prism", "flink", "s3", "browser", "server")
"""The markers of tests that need a service: a broker, a runner binary, a cluster, an S3 server, a browser, or
a network server of the test's own (the judge's OpenAI-compatible server, uvicorn)."""

SCENARIO_MARKER = "scenario"
"""The marker of tests that need no service but a scenario lake (generated traffic over tens of windows,
audited and drift-checked: tens of seconds to build). They run with the integration tier; a test that takes
the `scenario_lake` or `demo_lake` fixture gets the marker by itself."""

_SCENARIO_FIXTURES = ("scenario_lake", "demo_lake")

_SITE = Path(__file__).resolve().parent / "tier_site"
_POLL_S = 0.05


def pytest_addoption(parser):
    parser.addoption(
        "--tier",
        choices=("fast", "integration"),
        default=None,
        help="fast: no test that needs a service, and a guard against servers; integration: only those tests.",
    )


def pytest_configure(config):
    if config.getoption("--tier") == "fast":
        config.pluginmanager.register(_Guard(config), "groundwatch-tier-guard")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    integration = Path(str(config.rootpath)) / "tests" / "integration"
    for item in items:
        folder = Path(str(item.path)).parent
        if integration in folder.parents or folder == integration:
            service = folder.relative_to(integration).parts[:1]
            if service and service[0] in SERVICE_MARKERS:
                item.add_marker(service[0])
    # The controller sees `--dist loadgroup`; pytest-xdist's workers, which collect and name the tests the
    # controller schedules, see `dist` "no" and `loadgroup` True instead.
    if config.getoption("dist", "no") == "loadgroup" or getattr(config.option, "loadgroup", False):
        _group_for_workers(items)
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in _SCENARIO_FIXTURES):
            item.add_marker(SCENARIO_MARKER)
    tier = config.getoption("--tier")
    if tier is None:
        return
    keep, drop = [], []
    for item in items:
        integration = any(item.get_closest_marker(name) for name in (*SERVICE_MARKERS, SCENARIO_MARKER))
        (keep if integration == (tier == "integration") else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def _group_for_workers(items) -> None:
    """Under `pytest -n N --dist loadgroup`: a module's tests on one worker, so that its module-scoped set-up is
    made once; every Flink test on one worker, so that one Flink cluster serves them all; and every reader of
    the demo's lake on one worker, so that the demo runs once (a session fixture is made once per worker)."""
    for item in items:
        if item.get_closest_marker("flink"):
            group = "flink"
        elif "demo_lake" in getattr(item, "fixturenames", ()):
            group = "demo-lake"
        else:
            group = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def listening_pids(pids: set[int], *, descendants: bool = True) -> set[int]:
    """Those of `pids` (and of their descendants, unless told not to) holding a listening TCP socket, among the
    processes of this user (a test's servers are; run as root, one that switched to another user is not seen)."""
    return _processes.holding(_with_descendants(pids) if descendants else pids, _processes.listening_inodes())


def _with_descendants(pids: set[int]) -> set[int]:
    seen, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return seen


class _Guard:
    """The fast tier's guard: see the module's docstring."""

    def __init__(self, config):
        self._log = Path(tempfile.gettempdir()) / f"groundwatch-tier-guard-{os.getpid()}.log"
        self._violations: list[str] = []
        self._children: set[int] = set()
        self._lock = threading.Lock()
        self._original_listen = socket.socket.listen
        self._original_popen_init = subprocess.Popen.__init__

    def pytest_sessionstart(self, session):
        self._log.unlink(missing_ok=True)
        os.environ["GROUNDWATCH_TIER_GUARD_LOG"] = str(self._log)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_SITE), os.environ.get("PYTHONPATH")]))
        guard = self

        def refuse_listen(sock, *args, **kwargs):
            guard._violate(f"this process listened on {sock.getsockname()}")
            raise OSError("the fast test tier starts no server: mark the test with the service it needs")

        def watch_popen(popen, *args, **kwargs):
            guard._original_popen_init(popen, *args, **kwargs)
            with guard._lock:
                guard._children.add(popen.pid)

        socket.socket.listen = refuse_listen
        subprocess.Popen.__init__ = watch_popen

    def pytest_sessionfinish(self, session):
        socket.socket.listen = self._original_listen
        subprocess.Popen.__init__ = self._original_popen_init
        self._log.unlink(missing_ok=True)

    def _violate(self, what: str) -> None:
        with self._lock:
            self._violations.append(what)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        # A server a fixture started (uvicorn on uvloop, gRPC: below `socket.listen`) listens for the whole
        # call, so checking at its start and end finds it every time; polling in between finds the servers a
        # test starts and stops itself.
        self._check_this_process()
        stop = threading.Event()
        watcher = threading.Thread(target=self._watch_children, args=(stop,), daemon=True)
        watcher.start()
        try:
            yield
        finally:
            stop.set()
            watcher.join()
            self._check_this_process()

    def _check_this_process(self) -> None:
        if listening_pids({os.getpid()}, descendants=False):
            self._violate("this process listened on a port (a server outside Python's socket module)")

    def _watch_children(self, stop: threading.Event) -> None:
        """Polls the processes the test started, and this one, for a listening socket."""
        while not stop.wait(_POLL_S):
            with self._lock:
                children = {pid for pid in self._children if os.path.exists(f"/proc/{pid}")}
                self._children = children
            self._check_this_process()
            for pid in listening_pids(children) if children else ():
                self._violate(f"process {pid} ({_command_of(pid)}) listened on a port")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.when != "teardown":
            return
        with self._lock:
            found, self._violations = self._violations, []
        if self._log.exists():
            found += self._log.read_text(encoding="utf-8").splitlines()
            self._log.unlink()
        if found:
            report = outcome.get_result()
            report.outcome = "failed"
            markers = ", ".join(SERVICE_MARKERS)
            report.longrepr = (
                f"{item.nodeid} started a server in the fast tier: {'; '.join(sorted(set(found)))}. "
                f"Mark it with the service it needs ({markers}) or move it under tests/integration/."
            )


def _command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
    except OSError:
        return "ended"
