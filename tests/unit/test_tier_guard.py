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

@pytest.mark.kafka
def test_needs_a_broker():
    raise AssertionError("a marked test never runs in the fast tier")
"""


@pytest.fixture
def run_fast_tier(pytester, monkeypatch):
    """Runs `CASES` with `--tier fast` in a pytest of its own; returns its outcome."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("GROUNDWATCH_TIER_GUARD_LOG", raising=False)  # this session's guard stays out of it
    pytester.makepyfile(test_cases=CASES)
    pytester.makeini("[pytest]\nmarkers =\n    kafka: a broker\n")

    def run(*args: str):
        return pytester.runpytest_subprocess("-p", "tests.support.tier_guard", "--tier", "fast", *args)

    return run


def test_the_fast_tier_fails_tests_that_listen_and_deselects_marked_ones(run_fast_tier):
    result = run_fast_tier("-q")
    # The in-process server fails its call (listen raises) and its teardown; the child's refusal fails the
    # teardown of a test whose call passed; the marked test is not run.
    expected = {"passed": 2, "failed": 1, "errors": 2, "deselected": 1}
    assert result.parseoutcomes() == expected, result.stdout.str()
    text = result.stdout.str()
    assert "test_listens_in_process started a server in the fast tier: this process listened" in text
    assert "test_starts_a_python_server started a server in the fast tier: pid" in text
    assert "test_plain started a server" not in text


def test_without_a_tier_the_guard_stays_out_of_the_way(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("GROUNDWATCH_TIER_GUARD_LOG", raising=False)
    pytester.makepyfile(test_cases=CASES.replace("raise AssertionError", "assert True or AssertionError"))
    pytester.makeini("[pytest]\nmarkers =\n    kafka: a broker\n")
    result = pytester.runpytest_subprocess("-p", "tests.support.tier_guard", "-q")
    assert result.parseoutcomes() == {"passed": 4}, result.stdout.str()


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
