"""A message no stage can read does not jam a topic: a bounded monitor passes it, dead-letters it with its bytes,
and commits the group's offsets to the end of every partition (before, it failed every run at the same offset).
Neither does a message its side topic refuses: a dead letter larger than a request may be, or review messages
larger than the review topic takes, are counted and named in the summary, and the run goes on."""

from __future__ import annotations

import json

import pytest

from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.runner.counts import format_counts
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import (  # noqa: F401
    committed_offsets,
    consume_all,
    create_topic,
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


def test_messages_a_side_topic_refuses_are_counted_and_named_and_the_run_goes_on(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    """Three refusals, and none costs the run or a message the topic takes:
    - a malformed message just under the broker's 1 MB limit, whose dead letter's headers take it over the
      producer's largest request (before, `send` raised and failed the run at the same offset every time);
    - a dead letter larger than its topic takes (1,000 bytes), refused by the broker: the two small dead letters
      beside it still arrive (kafka-python's idempotent producer, its default, failed every later one);
    - a review topic taking 200 bytes a message refuses every review message (before, only kafka-python's log
      said so)."""
    from kafka import KafkaProducer

    topic = new_topic(partitions=1)
    create_topic(kafka_bootstrap, f"{topic}.review", 1, {"max.message.bytes": "200"})
    create_topic(kafka_bootstrap, f"{topic}.dead", 1, {"max.message.bytes": "1000"})
    valid = generated_messages(30, seed=23, malformed_fraction=0.0, start=DEFAULT_START)
    huge, big, small, smaller = b"{" + b"x" * 1_048_480, b"{" + b"y" * 2000, b"{not json", b"[1,"
    messages = [*valid[:15], huge, big, small, *valid[15:], smaller]
    sender = KafkaProducer(bootstrap_servers=kafka_bootstrap, max_request_size=2_000_000)
    for m in messages:
        sender.send(topic, m).get(timeout=30)
    sender.close()

    lake = tmp_path / "lake"
    counts = run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)
    assert (counts.read, counts.audited, counts.dead_lettered) == (34, 30, 4) and counts.adds_up
    assert counts.needs_review > 0
    assert counts.kafka_refused == {f"{topic}.dead": 2, f"{topic}.review": counts.needs_review}
    assert (
        f"kafka refused  {counts.needs_review + 2:>8} messages ({topic}.dead: 2, {topic}.review: "
        f"{counts.needs_review}; their rows are in the lake)"
    ) in format_counts(counts, str(lake))

    # The lake has every row, the dead letters' bytes whole; the topics have what they took.
    found = lake_accounting(str(lake), topic)
    assert len(found["responses"]) == 30 and len(found["review_ids"]) == counts.needs_review
    produced = offsets_by_value(kafka_bootstrap, topic)
    assert sorted(produced[o] for o in found["dead_letters"]) == sorted([huge, big, small, smaller])
    assert sorted(r.value for r in consume_all(kafka_bootstrap, f"{topic}.dead")) == sorted([small, smaller])
    assert consume_all(kafka_bootstrap, f"{topic}.review") == []
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 1)
    assert committed == ends and sum(ends.values()) == len(messages)


def test_a_sink_bundle_raises_a_failure_not_the_messages_own_and_counts_nothing(kafka_bootstrap, new_topic, caplog):  # noqa: F811
    """A sink's bundle against the broker: a message taken, one over the largest request, and one that timed out
    (the broker away past the 120 s delivery timeout; the error put in as kafka-python gives it). The bundle
    raises the timeout, and nothing of it is counted or logged, the refusal included: the runner's retry, or
    the run's end, says it. A later bundle of a message over the largest request and one that fits counts the
    first and sends the second."""
    import logging

    from kafka.errors import KafkaTimeoutError

    from transforms.io.kafka.sink import _ProduceFn

    topic = new_topic()
    sink = _ProduceFn({"bootstrap_servers": kafka_bootstrap}, topic)
    sink.setup()
    try:
        with caplog.at_level(logging.WARNING, logger="transforms.io.kafka.sink"):
            sink.start_bundle()
            sink.process((b"taken", b"v", []))
            sink.process((b"huge-1", b"x" * 1_100_000, []))  # refused before it is sent
            sink._pending.append((b"gone", KafkaTimeoutError("Expiring 1 record(s): 120000 ms has passed")))
            with pytest.raises(KafkaTimeoutError):
                sink.finish_bundle()
            assert not ours(caplog) and not sink._refusals_seen

            sink.start_bundle()
            sink.process((b"huge-2", b"x" * 1_100_000, []))
            sink.process((b"fits", b"y", []))
            sink.finish_bundle()
        assert sink._refusals_seen == {"MessageSizeTooLargeError": 1}
        assert [r.getMessage().split(" (key ")[1][:8] for r in ours(caplog)] == ["'huge-2'"]
    finally:
        sink.teardown()
    assert sorted(r.value for r in consume_all(kafka_bootstrap, topic)) == [b"v", b"y"]


def ours(caplog) -> list:
    """The sink's own log records (kafka-python logs warnings of its own, about a new topic's metadata say)."""
    return [r for r in caplog.records if r.name == "transforms.io.kafka.sink"]
