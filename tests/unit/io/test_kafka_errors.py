"""`named_kafka_errors`: kafka-python's errors as the one line a command prints, naming the servers."""

from __future__ import annotations

import pytest
from kafka.errors import KafkaConnectionError, KafkaTimeoutError, MessageSizeTooLargeError

from transforms.io.kafka.client import KafkaFailed, named_kafka_errors


@pytest.mark.parametrize("error", [KafkaTimeoutError("Unable to bootstrap from h:9"), KafkaConnectionError("111")])
def test_a_broker_that_does_not_answer_is_cannot_reach(error):
    with pytest.raises(KafkaFailed) as raised, named_kafka_errors("h:9"):
        raise error
    assert str(raised.value) == f"cannot reach Kafka at --bootstrap-servers h:9: {error}"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # no traceback of theirs


def test_another_refusal_is_said_as_kafka_python_says_it():
    with pytest.raises(KafkaFailed, match=r"^Kafka at --bootstrap-servers h:9: \[Error 10\] MessageSizeTooLarge"):
        with named_kafka_errors("h:9"):
            raise MessageSizeTooLargeError("too big")


def test_other_errors_pass_through_and_a_failure_is_a_value_error():
    with pytest.raises(OSError), named_kafka_errors("h:9"):
        raise OSError("disk")
    assert issubclass(KafkaFailed, ValueError)  # what every command prints as its one line


def test_a_refusal_without_a_description_is_said_without_none():
    """A broker's refusal reaches kafka-python with no description: "[Error 10] MessageSizeTooLargeError: None"."""
    with pytest.raises(KafkaFailed) as raised, named_kafka_errors("h:9"):
        raise MessageSizeTooLargeError(None)  # as the sender builds it from the broker's answer
    assert str(raised.value) == "Kafka at --bootstrap-servers h:9: [Error 10] MessageSizeTooLargeError"
