"""Kafka in, lake out, bounded (`groundwatch monitor --until-caught-up`) against a real broker.

Every message produced is accounted for exactly once (audited + sampled out + dead-lettered = produced,
checked offset by offset with DuckDB over the lake, in a folder and in an S3 bucket); offsets are committed;
a second run reads nothing; the review topic holds exactly the responses that need review; the dead-letter
topic holds the original bytes.
"""

from __future__ import annotations

import json

import pytest

from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import (
    assert_accounted_once,
    committed_offsets,
    consume_all,
    expected_fates,
    lake_accounting,
    monitor_argv,
    offsets_by_value,
)

pytestmark = pytest.mark.kafka

SAMPLE_RATE = 0.8


def test_every_message_accounted_once_and_offsets_committed(kafka_bootstrap, new_topic, folder_or_bucket_lake):
    topic = new_topic(partitions=3)
    messages = generated_messages(1000, seed=11, malformed_fraction=0.05, start=DEFAULT_START)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 1000
    produced = offsets_by_value(kafka_bootstrap, topic)
    assert len(produced) == 1000
    fates = expected_fates(messages, SAMPLE_RATE)
    assert len(fates["dead"]) > 0 and len(fates["sampled_out"]) > 0

    # In a bucket (tests.support.s3_fixtures), the offset commit reads the rows back from the bucket.
    lake = folder_or_bucket_lake
    # Chunks of 100 records: each partition's read reports its progress chunk by chunk.
    argv = monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={SAMPLE_RATE}", "--checkpoint_records=100")
    counts = run(argv, out=lambda _: None)
    # Each offset in exactly one place, the place its content says, and nothing that was not produced.
    assert_accounted_once(lake, topic, produced, fates, counts)
    if lake.startswith("s3://"):  # the rows are objects of the bucket, not files of some local folder
        from tests.support.s3_fixtures import bucket_keys, bucket_of

        tables = {key.split("/")[1] for key in bucket_keys(bucket_of(lake))}
        assert {"responses", "dead_letters", "window_metrics"} <= tables

    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 3)
    assert committed == ends

    again = run(monitor_argv(kafka_bootstrap, topic, lake, f"--sample_rate={SAMPLE_RATE}"), out=lambda _: None)
    assert again.read == 0


def test_review_topic_gets_exactly_the_responses_needing_review(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    topic = new_topic(partitions=2)
    messages = generated_messages(300, seed=5, malformed_fraction=0.05, start=DEFAULT_START)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages)
    lake = tmp_path / "lake"
    counts = run(monitor_argv(kafka_bootstrap, topic, lake), out=lambda _: None)

    found = lake_accounting(str(lake), topic)
    reviews = consume_all(kafka_bootstrap, f"{topic}.review")
    bodies = [json.loads(r.value) for r in reviews]
    assert {b["response_id"] for b in bodies} == found["review_ids"]
    assert len(bodies) == len(found["review_ids"]) == counts.needs_review > 0
    for record, body in zip(reviews, bodies, strict=True):
        assert record.key.decode() == body["response_id"] and body["reasons"]
        assert body["routes"] and set(body["routes"]) <= {"uncertain", "disagreement", "risk", "flagged", "sample"}
        for sentence in body["flagged_sentences"]:
            assert any(f"sentence {sentence['sentence_index']}" in reason for reason in body["reasons"])

    dead = consume_all(kafka_bootstrap, f"{topic}.dead")
    produced = offsets_by_value(kafka_bootstrap, topic)
    assert len(dead) == len(found["dead_letters"]) == counts.dead_lettered
    for record in dead:
        headers = dict(record.headers)
        origin = (int(headers["origin_partition"]), int(headers["origin_offset"]))
        assert produced[origin] == record.value  # the original bytes, unchanged
        assert headers["error"] and headers["origin_source"] == f"kafka:{topic}".encode()
