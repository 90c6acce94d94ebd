"""The fast tier's guard (`tests/support/tier_guard.py`) fails a test that starts a server, and only that test.

Each case runs a small test file in a pytest of its own (`pytester`, in a subprocess) with `--tier fast`, the
way `make test-fast` runs the suite, and reads its outcome.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.support.scripts import ROOT
from tests.support.tier_guard import listening_pids

CASES = """
import socket, subprocess, sys
import pytest

def test_plain():
    assert 1 + 1 == 2

def test_listens_in_process():
    server = socket.create_server(("127.0.0.1", 0))
    server.close()

def test_starts_a_python_server():
    code = "import socket; socket.create_server(('127.0.0.1', 0))"
    subprocess.run([sys.executable, "-c", code])

def test_listens_below_python():
    import _socket, time  # a C server (gRPC's) never calls socket.socket.listen
    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    time.sleep(0.5)
    server.close()

@pytest.fixture(scope="module")
def server_below_python():
    import _socket  # uvicorn on uvloop listens the same way, from a module-scoped fixture
    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield
    server.close()

def test_calls_a_server_its_fixture_started(server_below_python):
    assert True  # over before a poll: the server is found at the call's start and end

@pytest.mark.kafka
def test_needs_a_broker():
    raise AssertionError("a marked test never runs in the fast tier")
"""


def _run_pytest(folder, *args: str, modules: dict[str, str] | None = None) -> tuple[dict[str, int], str]:
    """Runs pytest on `modules` (by default `CASES`, as test_cases.py) in `folder` as a process of its own,
    started by posix_spawn: this session's guard watches the processes a test starts with subprocess, and
    these cases start servers on purpose."""
    modules = modules or {"test_cases.py": CASES}
    for name, text in modules.items():
        (folder / name).write_text(text)
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n    kafka: a broker\n")
    env = {k: v for k, v in os.environ.items() if k != "GROUNDWATCH_TIER_GUARD_LOG"}  # its own guard only
    env["PYTHONPATH"] = str(ROOT)
    output = folder / "output.txt"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.support.tier_guard"]
    command += ["--rootdir", str(folder), "-c", str(folder / "pytest.ini"), *map(str, map(folder.joinpath, modules))]
    command += args
    with open(output, "wb") as out:
        pid = os.posix_spawn(sys.executable, command, env, file_actions=[(os.POSIX_SPAWN_DUP2, out.fileno(), 1)])
        os.waitpid(pid, 0)
    text = output.read_text()
    return pytest.RunResult.parse_summary_nouns(text.splitlines()), text


def test_the_fast_tier_fails_tests_that_listen_and_deselects_marked_ones(tmp_path):
    outcomes, text = _run_pytest(tmp_path, "-q", "--tier", "fast")
    # The in-process server fails its call (listen raises) and its teardown; the child's refusal and the server
    # below Python's socket module fail the teardown of tests whose call passed; the marked test is not run.
    assert outcomes == {"passed": 4, "failed": 1, "errors": 4, "deselected": 1}, text
    assert "test_listens_in_process started a server in the fast tier: this process listened on (" in text
    assert "test_starts_a_python_server started a server in the fast tier: pid" in text
    assert "test_listens_below_python started a server in the fast tier: this process listened on a port" in text
    assert "test_calls_a_server_its_fixture_started started a server in the fast tier: this process" in text
    assert "test_plain started a server" not in text


WHERE_IT_RAN = """
import os, pytest

@pytest.mark.parametrize("case", range(6))
def test_case(case):
    with open(os.path.join(os.path.dirname(__file__), "workers.txt"), "a") as out:
        out.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def test_on_two_workers_a_modules_tests_share_one_worker(tmp_path):
    """`--dist loadgroup` keeps a module on one worker (its module and session set-up made once): a pytest
    whose test ids pytest-xdist cannot suffix with the group spreads them over both."""
    modules = {"test_one.py": WHERE_IT_RAN, "test_two.py": WHERE_IT_RAN}
    outcomes, text = _run_pytest(tmp_path, "-q", "-n", "2", "--dist", "loadgroup", modules=modules)
    assert outcomes == {"passed": 12}, text
    workers: dict[str, set[str]] = {}
    for line in (tmp_path / "workers.txt").read_text().splitlines():
        module, worker = line.split()
        workers.setdefault(module, set()).add(worker)
    assert {module: len(ran_on) for module, ran_on in workers.items()} == {"test_one": 1, "test_two": 1}, workers


def test_without_a_tier_the_guard_stays_out_of_the_way(tmp_path):
    outcomes, text = _run_pytest(tmp_path, "-q", "-k", "not needs_a_broker")
    assert outcomes == {"passed": 5, "deselected": 1}, text


def test_a_process_of_any_language_holding_a_listening_socket_is_found():
    """The watcher of the processes a test starts (Prism, Java, chromium): started here by posix_spawn, which this
    session's own guard does not watch, and without Python's site hooks (`-S`)."""
    code = "import socket, time; s = socket.create_server(('127.0.0.1', 0)); print(flush=True); time.sleep(30)"
    read, write = os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, write, 1)]
    pid = os.posix_spawn(sys.executable, [sys.executable, "-S", "-c", code], dict(os.environ), file_actions=actions)
    os.close(write)
    try:
        os.read(read, 1)  # the server is up
        assert listening_pids({pid}) == {pid}
    finally:
        os.close(read)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    deadline = time.monotonic() + 5
    while listening_pids({pid}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert listening_pids({pid}) == set()
