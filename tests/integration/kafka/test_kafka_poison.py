"""A message no stage can read does not jam a topic: a bounded monitor passes it, dead-letters it with its bytes,
and commits the group's offsets to the end of every partition (before, it failed every run at the same offset)."""

from __future__ import annotations

import json

import pytest

from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import (  # noqa: F401
    committed_offsets,
    kafka_bootstrap,
    lake_accounting,
    monitor_argv,
    new_topic,
    offsets_by_value,
)

pytestmark = pytest.mark.kafka

DEEP = b"[" * 1000 + b"]" * 1000


def test_a_deeply_nested_message_is_passed_and_offsets_reach_the_end(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    topic = new_topic(partitions=2)
    valid = generated_messages(40, seed=19, malformed_fraction=0.0, start=DEFAULT_START)
    inside = json.loads(valid[0])
    inside["response_id"] = "deep-inside"
    deep_inside = json.dumps(inside).encode()[:-1] + b', "trace": ' + DEEP + b"}"
    messages = [*valid[:20], DEEP, deep_inside, *valid[20:]]
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == len(messages)
    produced = offsets_by_value(kafka_bootstrap, topic)

    lake = tmp_path / "lake"
    counts = run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)
    assert (counts.read, counts.audited, counts.dead_lettered) == (42, 40, 2) and counts.adds_up
    assert counts.dead_letter_reasons == {"malformed_json": 2}

    found = lake_accounting(str(lake), topic)
    assert len(found["responses"]) == 40
    assert sorted(produced[o] for o in found["dead_letters"]) == sorted([DEEP, deep_inside])
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 2)
    assert committed == ends and sum(ends.values()) == len(messages)

    again = run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)
    assert again.read == 0
