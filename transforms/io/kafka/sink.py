"""Publish to Kafka from Beam: the human review queue, dead letters, and any other `(key, value, headers)`.

    audited | "PublishReviewQueue" >> PublishReviewQueue(connection, "rag.review", threshold=0.7)
    dead    | "PublishDeadLetters" >> PublishDeadLetters(connection, "rag.dead-letters")

A review message is JSON keyed by response_id: why the response needs a human (the routing reasons), and the
flagged sentences with their indexes, verdicts, confidences and evidence ids. A dead-letter message's value is
the original bytes, unchanged; the reason, stage and origin (source, partition, offset) travel as headers and
in the key. `WriteToKafka` waits at the end of every bundle until each of its messages is answered, so a
bundle that the runner commits has been answered (at-least-once: a retried bundle may publish again; keys let
readers dedupe). A message refused for good (too large, or invalid) is counted and logged, and the run's summary
names its topic: the row it came from is in the lake. Any other failure fails the bundle.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.metrics import Metrics

from schemas import AttributionVerdict, AuditedResponse, DeadLetterRow
from transforms.io.kafka.client import (
    KAFKA_METRICS_NAMESPACE,
    PUBLISHED_PREFIX,
    REFUSED_PREFIX,
    answers,
    client_config,
    close_producer,
    kafka_words,
    named_kafka_errors,
    producer,
    refused_for_good,
    send_or_refusal,
)

if TYPE_CHECKING:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.errors import KafkaError
    from kafka.producer.future import FutureRecordMetadata

__all__ = [
    "KafkaMessage",
    "PublishDeadLetters",
    "PublishReviewQueue",
    "WriteToKafka",
    "dead_letter_message",
    "ensure_topics",
    "review_message",
]

_LOG = logging.getLogger(__name__)

KafkaMessage = tuple[bytes | None, bytes, list[tuple[str, bytes]]]
"""A message to produce: key, value and headers."""


def review_message(audited: AuditedResponse, threshold: float) -> KafkaMessage | None:
    """The review-queue message of a response that needs a human, or None."""
    if audited.review is None or not audited.review.needs_review:
        return None
    response, origin = audited.parsed.response, audited.parsed.origin
    flagged = [
        {
            "sentence_index": s.sentence_index,
            "attribution_verdict": s.attribution_verdict.value,
            "confidence": s.confidence,
            "supporting_evidence_ids": s.supporting_evidence_ids,
            "contradicting_evidence_ids": s.contradicting_evidence_ids,
            "unsupported_spans": s.unsupported_spans,
        }
        for s in audited.report.sentences
        if s.attribution_verdict in (AttributionVerdict.ungrounded, AttributionVerdict.contradicted)
        or s.confidence < threshold
    ]
    body = {
        "response_id": response.response_id,
        "event_time": response.timestamp.isoformat(),
        "tenant": response.metadata.tenant,
        "risk_level": response.metadata.risk_level.value,
        "overall_faithfulness_score": audited.report.scored_faithfulness,  # null when it claims nothing, as in the lake
        "reasons": audited.review.reasons,
        "routes": [route.value for route in audited.review.routes],
        "critical_flags": audited.report.critical_flags,
        "flagged_sentences": flagged,
        "origin": origin.model_dump(),
        "verifier": audited.verifier,
        "audited_at": audited.audited_at.isoformat() if audited.audited_at else None,
    }
    return response.response_id.encode("utf-8"), json.dumps(body).encode("utf-8"), [("type", b"review")]


def dead_letter_message(row: DeadLetterRow) -> KafkaMessage:
    """The dead-letter message: the original bytes as the value; reason, stage and origin in headers."""
    headers = [
        ("error", row.error.encode("utf-8", "backslashreplace")),
        ("stage", row.stage.encode("utf-8")),
        ("origin_source", row.origin_source.encode("utf-8", "backslashreplace")),
        ("origin_partition", b"" if row.origin_partition is None else str(row.origin_partition).encode()),
        ("origin_offset", b"" if row.origin_offset is None else str(row.origin_offset).encode()),
        ("dead_letter_id", row.dead_letter_id.encode()),
    ]
    return row.dead_letter_id.encode(), bytes(row.raw_payload), headers


def ensure_topics(connection: Mapping[str, Any], topics: list[str]) -> list[str]:
    """Create the topics that do not exist yet (broker-default partitions and replication); return those created.

    Called before a pipeline starts, so a cluster without topic auto-creation does not stall the first send.
    It returns once the broker's metadata lists each new topic with a leader for every partition (which lags
    the creation, on KRaft most): a producer's first lookup before that would be told the topic is unknown.
    A broker that does not answer, or refuses, raises `KafkaFailed` naming the servers (`named_kafka_errors`).
    """
    from kafka import KafkaAdminClient

    with named_kafka_errors(connection.get("bootstrap_servers", "")):
        return _create_missing(KafkaAdminClient(**client_config(connection)), topics)


def _create_missing(admin: KafkaAdminClient, topics: list[str]) -> list[str]:
    """`ensure_topics` with its admin client, which it closes."""
    from kafka.admin import NewTopic
    from kafka.errors import KafkaTimeoutError, TopicAlreadyExistsError

    try:
        missing = [t for t in dict.fromkeys(topics) if t and t not in set(admin.list_topics())]
        if missing:
            try:
                admin.create_topics([NewTopic(t) for t in missing])
            except TopicAlreadyExistsError:
                pass  # created meanwhile by someone else
            with contextlib.suppress(KafkaTimeoutError):  # not ready in 10 s: a producer waits for it itself
                admin.wait_for_topics(missing)
        return missing
    finally:
        admin.close()


class _ProduceFn(beam.DoFn):
    """Send each message; at the end of the bundle, wait for every answer.

    A message refused for good (`refused_for_good`: too large for a request or for the topic, or invalid) is
    counted (`refused_<topic>`) and logged, not raised: its row is in the lake either way, and the message would
    be refused again however often it was sent. Any other failure (the broker away past the producer's delivery
    timeout, a topic this client may not write to) fails the bundle, before anything of it is counted.
    """

    def __init__(self, connection: Mapping[str, Any], topic: str) -> None:
        self._connection = dict(connection)
        self._topic = topic
        self._producer: KafkaProducer | None = None
        self._pending: list[tuple[bytes | None, FutureRecordMetadata | KafkaError]] = []
        self._refusals_seen: Counter[str] = Counter()  # by kind, for the log
        self._sent = Metrics.counter(KAFKA_METRICS_NAMESPACE, f"{PUBLISHED_PREFIX}{topic}")
        self._refused = Metrics.counter(KAFKA_METRICS_NAMESPACE, f"{REFUSED_PREFIX}{topic}")

    def setup(self) -> None:
        self._producer = producer(self._connection)

    def start_bundle(self) -> None:
        self._pending = []  # a failed bundle's are of no use to its retry

    def process(self, message: KafkaMessage) -> None:
        key, value, headers = message
        if self._producer is None or getattr(self._producer, "_closed", False):
            # A runner may reuse this DoFn after a failed bundle tore its producer down.
            self._producer = producer(self._connection)
        self._pending.append((key, send_or_refusal(self._producer, self._topic, value=value, key=key, headers=headers)))

    def finish_bundle(self) -> None:
        pending, self._pending = self._pending, []
        if not pending or self._producer is None:
            return
        answered = answers(self._producer, [sent for _, sent in pending])  # flushes, then each message's answer
        for error in answered:
            if error is not None and not refused_for_good(error):
                raise error  # the bundle fails with nothing counted
        for (key, _), error in zip(pending, answered, strict=True):
            if error is None:
                self._sent.inc()
            else:
                self._count_refusal(key, error)

    def _count_refusal(self, key: bytes | None, error: KafkaError) -> None:
        """Count a message refused for good; log the first of each kind, and every hundredth."""
        self._refused.inc()
        kind = type(error).__name__
        self._refusals_seen[kind] += 1
        if self._refusals_seen[kind] == 1 or self._refusals_seen.total() % 100 == 0:
            _LOG.warning(
                "Kafka refused a message for %s (key %r; %d refused by this sink so far): %s; its row is in the lake",
                self._topic,
                None if key is None else key.decode("utf-8", "backslashreplace"),
                self._refusals_seen.total(),
                kafka_words(error),
            )

    def teardown(self) -> None:
        if self._producer is not None:
            close_producer(self._producer)
            self._producer = None


class WriteToKafka(beam.PTransform):
    """Publish `(key, value, headers)` messages to `topic`; delivered when the bundle commits."""

    def __init__(self, connection: Mapping[str, Any], topic: str):
        super().__init__()
        client_config(connection)
        if not topic:
            raise ValueError("a Kafka topic name is needed")
        self._connection = dict(connection)
        self._topic = topic

    def expand(self, messages: PCollection) -> PCollection:
        return messages | "Produce" >> beam.ParDo(_ProduceFn(self._connection, self._topic))


def _review_message_of(audited: Any, threshold: float) -> list[KafkaMessage]:
    # A stream's lanes built the message already (`transforms.audit.stream.ScoredRows.review_message`).
    message = review_message(audited, threshold) if isinstance(audited, AuditedResponse) else audited.review_message
    return [message] if message else []


class PublishReviewQueue(beam.PTransform):
    """Send every audited response that needs a human to the review topic, saying why. The elements are
    `AuditedResponse`s, or a stream's `ScoredRows` carrying the message their lane built."""

    def __init__(self, connection: Mapping[str, Any], topic: str, *, threshold: float):
        super().__init__()
        self._write = WriteToKafka(connection, topic)
        self._threshold = threshold

    def expand(self, audited: PCollection) -> PCollection:
        threshold = self._threshold
        return (
            audited
            | "ReviewMessages" >> beam.FlatMap(_review_message_of, threshold)
            | "WriteReviewTopic" >> self._write
        )


class PublishDeadLetters(beam.PTransform):
    """Send every dead letter, with its original bytes, to the dead-letter topic."""

    def __init__(self, connection: Mapping[str, Any], topic: str):
        super().__init__()
        self._write = WriteToKafka(connection, topic)

    def expand(self, dead_letters: PCollection) -> PCollection:
        return (
            dead_letters | "DeadLetterMessages" >> beam.Map(dead_letter_message) | "WriteDeadLetterTopic" >> self._write
        )
