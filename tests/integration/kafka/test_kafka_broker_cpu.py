"""The benchmarks count the broker's CPU beside the monitor's (`scripts/process_memory.py`): the process that
listens at the bootstrap address is found from /proc, on this machine only."""

from __future__ import annotations

import pytest

from pipelines.produce import produce_messages
from tests.support.scripts import load_script

processes = load_script("process_memory")


def test_the_broker_is_found_at_its_bootstrap_address_and_its_work_shows_in_its_cpu(kafka_bootstrap, new_topic):
    found = processes.listeners(kafka_bootstrap)
    assert len(found) == 1, f"one process listens at {kafka_bootstrap}: {found}"
    (broker,) = found
    with open(f"/proc/{broker}/cmdline") as cmdline:
        assert "kafka.Kafka" in cmdline.read().split("\0")  # the broker's JVM, not a client of it

    before = processes.pids_cpu(found)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, new_topic(), (b"x" * 512 for _ in range(5000)))
    assert processes.pids_cpu(found) > before


@pytest.mark.parametrize("address", ["example.invalid:{port}", "10.0.0.1:{port}", "127.0.0.1:1"])
def test_no_process_is_counted_for_an_address_elsewhere_or_a_port_nobody_listens_on(kafka_bootstrap, address):
    port = kafka_bootstrap.rsplit(":", 1)[1]
    assert processes.listeners(address.format(port=port)) == set()
