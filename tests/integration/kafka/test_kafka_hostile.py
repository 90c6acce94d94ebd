"""Hostile messages cannot jam a partition: a bounded monitor passes every one and commits to the end.

A property test over `tests.support.hostile_messages` (arbitrary Unicode with lone surrogates, deep nesting,
extreme numbers, duplicate keys, huge strings) through the Kafka path, with the source reading each
message's own time (`--event_time=message`). A monitor run takes tens of seconds, so hypothesis draws one
batch of many messages; the messages that failed a run on the original code are always in it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.monitor import run
from pipelines.produce import produce_messages
from tests.support.audit_messages import message, raw
from tests.support.hostile_messages import KNOWN_HOSTILE, hostile_batch
from tests.support.kafka_fixtures import (  # noqa: F401
    committed_offsets,
    kafka_bootstrap,
    lake_accounting,
    monitor_argv,
    new_topic,
)

pytestmark = pytest.mark.kafka


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=hostile_batch(min_size=20, max_size=30), valid=st.integers(1, 3))
def test_a_topic_of_hostile_messages_is_passed_to_the_end(kafka_bootstrap, new_topic, tmp_path_factory, batch, valid):  # noqa: F811
    topic = new_topic(partitions=2)
    messages = [*KNOWN_HOSTILE, *batch, *(raw(message(f"valid-{i}")) for i in range(valid))]
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == len(messages)

    lake = tmp_path_factory.mktemp("hostile") / "lake"
    counts = run(monitor_argv(kafka_bootstrap, topic, lake, "--event_time=message"), out=lambda _: None)
    assert counts.read == len(messages) and counts.adds_up
    assert counts.dead_letter_reasons.get("invalid_unicode", 0) >= 3

    found = lake_accounting(str(lake), topic)
    assert len(found["responses"]) + len(found["dead_letters"]) + counts.sampled_out == len(messages)
    assert len(found["responses"]) >= valid
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 2)
    assert committed == ends and sum(ends.values()) == len(messages)
    assert run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None).read == 0
