"""What the benchmarks count as the Kafka broker (`scripts/process_memory.py`): the process listening at a
bootstrap address's port, only when the address names this machine's loopback, and its CPU read from /proc.
Finding a real broker's process is tested beside a broker (tests/integration/kafka/test_kafka_broker_cpu.py)."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys

import pytest

from tests.support.scripts import load_script

processes = load_script("process_memory")


@pytest.mark.parametrize(
    ("addresses", "ports"),
    [
        ("127.0.0.1:39092", [39092]),
        ("LOCALHOST:9093", [9093]),
        ("localhost", [9092]),  # no port: Kafka's own
        ("[::1]:9094", [9094]),
        ("[::1]", [9092]),
        ("::1", [9092]),  # an IPv6 address has a port only in brackets
        ("[0:0:0:0:0:0:0:1]:9097", [9097]),
        ("[::ffff:127.0.0.1]:9098", [9098]),
        ("127.0.0.2:9095", [9095]),  # all of 127/8 is loopback
        ("broker.example.com:9092, 127.0.0.1:9096", [9096]),
        ("10.0.0.1:9092", []),
        ("example.invalid:9092", []),
        ("localhost:kafka", []),  # a service name is no port of ours to look up
        ("256.0.0.1:9092", []),
        ("", []),
    ],
)
def test_only_loopback_addresses_name_ports_to_look_at(addresses, ports):
    assert processes.loopback_ports(addresses) == ports


def test_only_this_users_processes_holding_the_socket_count(monkeypatch):
    # A socket that only exists (the fast tier allows no listening one): its inode names it, as a listener's would.
    with socket.socket() as held:
        inode = str(os.fstat(held.fileno()).st_ino)
        assert processes.holding({os.getpid()}, {inode}) == {os.getpid()}
        assert processes.holding({os.getpid()}, {"1"}) == set()
        monkeypatch.setattr(processes.os, "getuid", lambda: os.geteuid() + 1)  # as if we were another user
        assert processes.holding({os.getpid()}, {inode}) == set()


def test_cpu_is_read_for_live_processes_and_refused_once_one_has_ended():
    sum(i * i for i in range(2_000_000))  # some CPU of our own to read
    usage = resource.getrusage(resource.RUSAGE_SELF)
    own = processes.pids_cpu({os.getpid()})
    # /proc counts in clock ticks, getrusage finer: the two agree within a few ticks.
    assert own == pytest.approx(usage.ru_utime + usage.ru_stime, abs=0.1) and own > 0

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert processes.pids_cpu({os.getpid(), child.pid}) is None
    assert processes.describe({child.pid}) == f"{child.pid} (ended)"
    with open("/proc/self/comm") as comm:
        assert processes.describe({os.getpid()}) == f"{os.getpid()} ({comm.read().strip()})"
