"""A Kafka sink's refusals: one for good is counted and logged (sparingly) and the bundle goes on; one worth
retrying fails the bundle. The summary names the refusing topics, summed over a catch-up's passes. (The sink
against a real broker: `tests/integration/kafka/test_kafka_poison.py`.)"""

from __future__ import annotations

import logging

import pytest
from kafka.errors import KafkaTimeoutError, MessageSizeTooLargeError, NotLeaderForPartitionError

from pipelines.runner.counts import AuditCounts, format_counts, sum_counts
from transforms.io.kafka.sink import _ProduceFn


def _sink() -> _ProduceFn:
    return _ProduceFn({"bootstrap_servers": "127.0.0.1:9"}, "rag.review")  # builds no client until setup()


@pytest.mark.parametrize("error", [KafkaTimeoutError("Batch expired"), NotLeaderForPartitionError()])
def test_a_failure_worth_retrying_fails_the_bundle(error):
    with pytest.raises(type(error)):
        _sink()._refuse(b"r-1", error)


def test_refusals_for_good_are_logged_the_first_time_and_every_hundredth(caplog):
    sink = _sink()
    with caplog.at_level(logging.WARNING, logger="transforms.io.kafka.sink"):
        for i in range(250):
            sink._refuse(f"r-{i}".encode(), MessageSizeTooLargeError("too big"))
    said = [r.getMessage() for r in caplog.records]
    assert [m.split(" (key ")[1].split(";")[0] for m in said] == [
        "'r-0'",
        "'r-99'",
        "'r-199'",
    ]
    assert said[1].startswith("Kafka refused a message for rag.review (key 'r-99'; 100 refused by this worker): ")
    assert all("MessageSizeTooLarge" in m and m.endswith("; its row is in the lake") for m in said)


def _counts(refused: dict[str, int]) -> AuditCounts:
    return AuditCounts(
        read=3, audited=2, sampled_out=0, dead_lettered=1, needs_review=2, dead_letter_reasons={}, kafka_refused=refused
    )


def test_the_summary_names_the_refusing_topics_summed_over_passes():
    total = sum_counts([_counts({"rag.review": 2}), _counts({"rag.dead-letters": 1, "rag.review": 1})])
    assert total.kafka_refused == {"rag.dead-letters": 1, "rag.review": 3}
    lines = format_counts(total, "/data/lake").splitlines()
    said = "kafka refused         4 messages (rag.dead-letters: 1, rag.review: 3; their rows are in the lake)"
    assert lines[-2] == said
    assert lines[-1].startswith("lake ")
    assert not any(line.startswith("kafka refused") for line in format_counts(_counts({}), "/d").splitlines())
