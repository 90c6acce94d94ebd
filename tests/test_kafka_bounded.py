"""Kafka in, lake out, bounded (`groundwatch monitor --until-caught-up`) against a real broker.

Every message produced is accounted for exactly once (audited + sampled out + dead-lettered = produced,
checked offset by offset with DuckDB over the lake); offsets are committed; a second run reads nothing;
the review topic holds exactly the responses that need review; the dead-letter topic holds the original bytes.
"""

from __future__ import annotations

import json

import pytest
from kafka_fixtures import consume_all, kafka_bootstrap, lake_accounting, new_topic  # noqa: F401

from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic import DEFAULT_START
from transforms.parse import ParseError, parse_message
from transforms.sample import sample_point

pytestmark = pytest.mark.kafka

SAMPLE_RATE = 0.8


def _monitor_argv(bootstrap: str, topic: str, lake, *extra: str) -> list[str]:
    return [
        f"--kafka_bootstrap_servers={bootstrap}",
        f"--kafka_topic={topic}",
        f"--kafka_group_id=g-{topic}",
        f"--lake={lake}",
        f"--review_topic={topic}.review",
        f"--dead_letter_topic={topic}.dead",
        "--until_caught_up",
        *extra,
    ]


def _expected_fates(messages: list[bytes], rate: float) -> dict[str, set[bytes]]:
    """What must happen to each message: malformed -> dead letter, valid -> audited or sampled out."""
    fates = {"dead": set(), "audited": set(), "sampled_out": set()}
    for raw in messages:
        try:
            response = parse_message(raw)
        except ParseError:
            fates["dead"].add(raw)
            continue
        keep = response.metadata.risk_level.value == "high" or sample_point(response.response_id) < rate
        fates["audited" if keep else "sampled_out"].add(response.response_id)
    return fates


def _offsets_by_value(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    return {(r.partition, r.offset): r.value for r in consume_all(bootstrap, topic)}


def test_every_message_accounted_once_and_offsets_committed(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(partitions=3)
    messages = generated_messages(1000, seed=11, malformed_fraction=0.05, start=DEFAULT_START)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 1000
    produced = _offsets_by_value(kafka_bootstrap, topic)
    assert len(produced) == 1000
    fates = _expected_fates(messages, SAMPLE_RATE)
    assert len(fates["dead"]) > 0 and len(fates["sampled_out"]) > 0

    lake = tmp_path / "lake"
    # Chunks of 100 records: each partition's read checkpoints and resumes a few times.
    argv = _monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={SAMPLE_RATE}", "--checkpoint_records=100")
    counts = run(argv, out=lambda _: None)
    assert counts.read == 1000 and counts.adds_up

    found = lake_accounting(str(lake), topic)
    audited, dead = found["responses"], found["dead_letters"]
    # Each offset in exactly one place, and nothing in the lake that was not produced.
    assert len(audited) == len(set(audited)) and len(dead) == len(set(dead))
    assert not set(audited) & set(dead)
    assert set(audited) | set(dead) <= set(produced)
    sampled_out = set(produced) - set(audited) - set(dead)
    assert len(audited) + len(dead) + len(sampled_out) == 1000
    # ... and each in the place its content says.
    assert {produced[o] for o in dead} >= fates["dead"]
    ids_by_offset = {o: json.loads(produced[o])["response_id"] for o in audited}
    assert set(ids_by_offset.values()) == fates["audited"]
    assert {json.loads(produced[o])["response_id"] for o in sampled_out} == fates["sampled_out"]
    assert counts.audited == len(audited) and counts.dead_lettered == len(dead)
    assert counts.sampled_out == len(sampled_out)

    consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=f"g-{topic}", enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in range(3)]
        ends = consumer.end_offsets(partitions)
        assert {tp: consumer.committed(tp) for tp in partitions} == ends
    finally:
        consumer.close()

    again = run(_monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={SAMPLE_RATE}"), out=lambda _: None)
    assert again.read == 0


def test_review_topic_gets_exactly_the_responses_needing_review(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    topic = new_topic(partitions=2)
    messages = generated_messages(300, seed=5, malformed_fraction=0.05, start=DEFAULT_START)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages)
    lake = tmp_path / "lake"
    counts = run(_monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)

    found = lake_accounting(str(lake), topic)
    reviews = consume_all(kafka_bootstrap, f"{topic}.review")
    bodies = [json.loads(r.value) for r in reviews]
    assert {b["response_id"] for b in bodies} == found["review_ids"]
    assert len(bodies) == len(found["review_ids"]) == counts.needs_review > 0
    for record, body in zip(reviews, bodies, strict=True):
        assert record.key.decode() == body["response_id"] and body["reasons"]
        for sentence in body["flagged_sentences"]:
            assert any(f"sentence {sentence['sentence_index']}" in reason for reason in body["reasons"])

    dead = consume_all(kafka_bootstrap, f"{topic}.dead")
    produced = _offsets_by_value(kafka_bootstrap, topic)
    assert len(dead) == len(found["dead_letters"]) == counts.dead_lettered
    for record in dead:
        headers = dict(record.headers)
        origin = (int(headers["origin_partition"]), int(headers["origin_offset"]))
        assert produced[origin] == record.value  # the original bytes, unchanged
        assert headers["error"] and headers["origin_source"] == f"kafka:{topic}".encode()
