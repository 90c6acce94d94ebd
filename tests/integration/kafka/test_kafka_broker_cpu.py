"""The benchmarks count the broker's CPU beside the monitor's (`scripts/process_memory.py`): the process that
listens at the bootstrap address is found from /proc when the address is on this machine's loopback. The
address forms are tested without a broker (tests/unit/pipelines/test_process_listeners.py)."""

from __future__ import annotations

import os

import pytest

from pipelines.produce import produce_messages
from tests.support.scripts import load_script

processes = load_script("process_memory")


def test_the_broker_is_found_at_its_bootstrap_address_and_its_cpu_read(kafka_bootstrap, new_topic):
    if not processes.loopback_ports(kafka_bootstrap):
        pytest.skip(f"the broker at {kafka_bootstrap} is not on this machine's loopback")
    found = processes.listeners(kafka_bootstrap)
    if not found and os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP"):
        pytest.skip(f"the broker at {kafka_bootstrap} is not a process of this user (a container's?)")
    assert len(found) == 1, f"one process listens at {kafka_bootstrap}: {found}"
    (broker,) = found
    with open(f"/proc/{broker}/cmdline") as cmdline:
        assert "kafka.Kafka" in cmdline.read().split("\0")  # the broker's JVM, not a client of it
    assert processes.describe(found) == f"{broker} (java)"

    before = processes.pids_cpu(found)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, new_topic(), (b"x" * 512 for _ in range(5000)))
    after = processes.pids_cpu(found)
    assert before is not None and after is not None and after > before
