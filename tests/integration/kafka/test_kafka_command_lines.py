"""What `groundwatch produce`, `monitor` and `serve` print about Kafka itself (marker `kafka`): a new topic is
no error, and a broker that does not answer ends them on a line of ours naming the servers, not on
kafka-python's traceback (`produce` and `serve` show kafka-python's own lines of its tries above it; the
monitor sets them aside).

They run as a user types them: the installed `groundwatch`, in processes of their own, where the root logger
is as a command leaves it (importing Beam gives it a handler that prints every library's warnings).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.documented import groundwatch_bin
from tests.support.kafka_fixtures import consume_all
from tests.support.ports import free_port

pytestmark = pytest.mark.kafka


def test_producing_to_a_new_topic_creates_it_and_prints_only_the_count(kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(auto=True)  # the name only: produce makes the topic
    argv = [groundwatch_bin(), "produce", "--bootstrap-servers", kafka_bootstrap, "--topic", topic, "--generate", "5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == f"produced 5 messages to {topic} at {kafka_bootstrap}\n"
    # kafka-python logs the first lookup of a topic the broker does not have as an error, though the broker
    # then creates it: a user's first `produce` would print "ERROR:kafka.cluster:Topic ... not found".
    assert done.stderr == ""
    assert len(consume_all(kafka_bootstrap, topic)) == 5


def test_messages_kafka_does_not_take_end_produce_on_a_line_that_counts_them(kafka_bootstrap, new_topic, tmp_path):
    """Two ways a message is not taken, each once every message is sent and answered:
    - a topic taking 300 bytes a message refuses generated responses. kafka-python splits the refused batch to
      send again, and its `flush` then raised "UnknownError: Future not done" (the cause unsaid), followed by a
      traceback from the producer's `__del__` when Python exited;
    - a line over the producer's largest request (1 MiB) is refused before it is sent. It stopped the input
      there, and the lines after it were not sent."""
    small = new_topic(config={"max.message.bytes": "300"})
    argv = [groundwatch_bin(), "produce", "--bootstrap-servers", kafka_bootstrap, "--topic", small, "--generate", "5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        f"groundwatch produce: Kafka at --bootstrap-servers {kafka_bootstrap}: 5 of 5 messages to {small} not "
        "taken, the first: [Error 10] MessageSizeTooLargeError"
    )
    assert "Traceback" not in done.stderr and "Future not done" not in done.stderr

    topic = new_topic()
    lines = tmp_path / "log.jsonl"
    lines.write_bytes(b'{"first": 1}\n{"huge": "' + b"x" * 1_100_000 + b'"}\n{"third": 3}\n')
    argv = [groundwatch_bin(), "produce", "--bootstrap-servers", kafka_bootstrap, "--topic", topic]
    done = subprocess.run([*argv, "--input", str(lines)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(
        f"groundwatch produce: Kafka at --bootstrap-servers {kafka_bootstrap}: 1 of 3 messages to {topic} not "
        "taken, the first: [Error 10] MessageSizeTooLargeError: The message is 1100"
    )
    assert [r.value for r in consume_all(kafka_bootstrap, topic)] == [b'{"first": 1}', b'{"third": 3}']


def test_a_broker_that_does_not_answer_is_one_line_from_produce_monitor_and_serve(tmp_path):
    away = f"127.0.0.1:{free_port()}"  # nothing listens there
    runs = {
        "produce": [groundwatch_bin(), "produce", "--bootstrap-servers", away, "--topic", "t", "--generate", "3"],
        "monitor": [
            groundwatch_bin(), "monitor", "--bootstrap-servers", away, "--topic", "t",
            "--lake", str(tmp_path / "lake"), "--until-caught-up",
        ],
        "serve": [
            groundwatch_bin(), "serve", "--publish-kafka-topic", "t", "--bootstrap-servers", away,
            "--port", str(free_port()),
        ],
    }  # fmt: skip
    # All wait out kafka-python's bootstrap timeout (30 s), side by side. The monitor's line is as it was (it is
    # here so that it stays); its runner's log, kept after a failure, goes to this test's temporary folder. The
    # service reaches Kafka before it starts: before, each worker failed alone and uvicorn only said exit 3.
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "cwd": tmp_path}
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    started = {name: subprocess.Popen(argv, env=env, **pipes) for name, argv in runs.items()}
    for name, process in started.items():
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 2, f"{name}: exit {process.returncode}\n{stderr[-3000:]}"
        assert "Traceback" not in stderr, f"{name}:\n{stderr[-3000:]}"
        said = f"groundwatch {name}: cannot reach Kafka at --bootstrap-servers {away}: KafkaTimeoutError"
        assert said in stderr, f"{name}:\n{stderr[-3000:]}"
    assert not (tmp_path / "lake").exists()
