"""Kafka refusals: which errors are the record's own (counted, and the run goes on) and which are raised; how a
sink logs what it counts; the summary line, summed over a catch-up's passes. (The sinks, `groundwatch produce`
and the producer against a real broker: `tests/integration/kafka/test_kafka_poison.py`, `test_kafka_offsets.py`,
`test_kafka_command_lines.py`.)"""

from __future__ import annotations

import logging

import pytest
from kafka.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTopicError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotLeaderForPartitionError,
    RecordListTooLargeError,
    TopicAuthorizationFailedError,
)

from pipelines.runner.counts import AuditCounts, format_counts, sum_counts
from transforms.io.kafka.client import refused_for_good
from transforms.io.kafka.sink import _ProduceFn

# What kafka-python gives the other records of a batch in which the broker refused one (`sender.py`).
COMPANION = KafkaError("Failed to append record because it was part of a batch which had one more more invalid records")


@pytest.mark.parametrize(
    "error",
    [
        MessageSizeTooLargeError("The message is 1048811 bytes when serialized"),
        RecordListTooLargeError(),
        InvalidRecordError(),  # a keyless record to a compacted topic
        COMPANION,
    ],
)
def test_a_refusal_of_the_record_itself_is_for_good(error):  # counted, and the run goes on
    assert refused_for_good(error)


@pytest.mark.parametrize(
    "error",
    [
        KafkaTimeoutError("Batch for TopicPartition expired"),  # the broker away past the delivery timeout
        KafkaConnectionError("111 ECONNREFUSED"),
        NotLeaderForPartitionError(),
        TopicAuthorizationFailedError(),  # a missing ACL: every message would be refused
        InvalidTopicError(),
        InvalidTimestampError(),  # the worker's clock off: every message would be refused
        CorruptRecordError(),  # damaged on the way: sent again, it would be taken
    ],
)
def test_a_failure_that_is_not_the_records_own_is_raised(error):
    assert not refused_for_good(error)


def test_a_sink_logs_the_first_refusal_of_each_kind_and_every_hundredth(caplog):
    sink = _ProduceFn({"bootstrap_servers": "127.0.0.1:9"}, "rag.review")  # builds no client until setup()
    errors = [MessageSizeTooLargeError()] * 150 + [COMPANION] + [MessageSizeTooLargeError()] * 99
    with caplog.at_level(logging.WARNING, logger="transforms.io.kafka.sink"):
        for i, error in enumerate(errors):
            sink._count_refusal(f"r-{i}".encode(), error)
        sink._count_refusal(None, COMPANION)
    said = [r.getMessage() for r in caplog.records]
    assert [m.split(" (key ")[1].split(";")[0] for m in said] == ["'r-0'", "'r-99'", "'r-150'", "'r-199'"]
    assert said[0] == (
        "Kafka refused a message for rag.review (key 'r-0'; 1 refused by this sink so far): "
        "[Error 10] MessageSizeTooLargeError; its row is in the lake"
    )
    assert "(key 'r-150'; 151 refused by this sink so far): KafkaError: Failed to append record because" in said[2]


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
