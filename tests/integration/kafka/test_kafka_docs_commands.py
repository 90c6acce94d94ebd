"""The Kafka page's commands run as written (marker `kafka`): docs/kafka.md's `produce`, then its `monitor` with
the page's own `[--until-caught-up]` option, so that it ends once it has read the topic to its end.

The page names the broker `127.0.0.1:39092`, where `scripts/kafka.sh start` (and so `scripts/test.sh`) puts it;
a broker a test session started elsewhere takes its place in the commands. The commands run as a user types
them: the installed `groundwatch`, in a folder of their own (the page's `./groundwatch-lake`).
"""

from __future__ import annotations

import subprocess

import pytest

from dashboards.views import connect_lake
from tests.support.documented import ROOT, commands, groundwatch_bin
from tests.support.kafka_fixtures import unread_messages

pytestmark = pytest.mark.kafka

PAGE = ROOT / "docs" / "kafka.md"
DOCUMENTED_BROKER = "127.0.0.1:39092"
TOPIC = "rag.responses"


def _as_written(command: list[str], bootstrap: str) -> list[str]:
    return [groundwatch_bin(), *(bootstrap if word == DOCUMENTED_BROKER else word for word in command[1:])]


def test_the_kafka_pages_produce_and_monitor_run_as_written(kafka_bootstrap, tmp_path):
    produce, monitor = [c for c in commands(PAGE) if c[1] in ("produce", "monitor")][:2]
    assert produce[1] == "produce" and monitor[1] == "monitor" and DOCUMENTED_BROKER in produce
    count = int(produce[produce.index("--generate") + 1])
    backlog = unread_messages(kafka_bootstrap, "groundwatch", TOPIC)  # the page's consumer group (the flag's default)

    run = {"capture_output": True, "text": True, "timeout": 600, "cwd": tmp_path, "check": False}
    published = subprocess.run(_as_written(produce, kafka_bootstrap), **run)
    assert published.returncode == 0, published.stderr[-2000:]
    caught_up = subprocess.run([*_as_written(monitor, kafka_bootstrap), "--until-caught-up"], **run)
    assert caught_up.returncode == 0, caught_up.stderr[-2000:]

    con = connect_lake(str(tmp_path / "groundwatch-lake"))
    responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    dead_letters = con.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
    assert responses + dead_letters == backlog + count and dead_letters > 0  # the page asks for 5% malformed
    assert unread_messages(kafka_bootstrap, "groundwatch", TOPIC) == 0
