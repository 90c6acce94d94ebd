"""Where the service sends every response it verified, so in-line checks reach the audit lake and the monitor.

    publisher = JsonlPublisher("verified.jsonl")          # then: groundwatch audit --input verified.jsonl
    publisher = KafkaPublisher({"bootstrap_servers": "127.0.0.1:39092"}, "rag.responses")  # groundwatch monitor
    publisher.publish(raw, response_id); publisher.close()

What is published is the logged response as the client sent it (the input contract), not the verdicts: the
pipeline audits it again with its own windows, dedupe and lake rows. A body spread over several lines is
re-encoded on one line for the JSONL file (same JSON value). Each worker process opens its own file handle
(appends of one `write` each) or producer.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["JsonlPublisher", "KafkaPublisher", "Publisher", "make_publisher"]


class Publisher:
    """Sends verified responses on; counts what it sent and what failed (shown by GET /healthz)."""

    def __init__(self):
        self.published = 0
        self.failures = 0

    def publish(self, raw: bytes, response_id: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class JsonlPublisher(Publisher):
    """Appends one line per response to a JSONL file (created if missing)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def publish(self, raw: bytes, response_id: str) -> None:
        line = raw.strip()
        if b"\n" in line or b"\r" in line:
            line = json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with self._lock:  # one write per line: O_APPEND keeps lines of several workers whole
            os.write(self._fd, line + b"\n")
            self.published += 1

    def close(self) -> None:
        os.close(self._fd)


class KafkaPublisher(Publisher):
    """Sends each response to a Kafka topic, keyed by response_id (as `groundwatch produce` does)."""

    def __init__(self, connection: Mapping[str, Any], topic: str):
        super().__init__()
        from transforms.io.kafka.client import producer  # kept lazy: start-up (kafka-python)

        self.topic = topic
        self._producer = producer(connection)

    def publish(self, raw: bytes, response_id: str) -> None:
        from kafka.errors import KafkaError

        try:
            future = self._producer.send(self.topic, value=bytes(raw), key=response_id.encode("utf-8"))
        except KafkaError as error:  # refused before it is sent (larger than a request may be): the verdict stands
            self._failed(error)
            return
        future.add_callback(self._sent).add_errback(self._failed)

    def _sent(self, _metadata) -> None:
        self.published += 1

    def _failed(self, _error) -> None:
        self.failures += 1

    def close(self) -> None:
        from kafka.errors import KafkaError

        from transforms.io.kafka.client import close_producer  # kept lazy: start-up (kafka-python)

        with contextlib.suppress(KafkaError):  # nothing Kafka says may cut the service's shutdown short
            close_producer(self._producer)


def make_publisher(
    *, jsonl: str | None = None, kafka_topic: str | None = None, kafka_bootstrap: str | None = None
) -> Publisher | None:
    """The publisher the flags ask for, or None."""
    if jsonl and kafka_topic:
        raise ValueError("give --publish-jsonl or --publish-kafka-topic, not both")
    if jsonl:
        return JsonlPublisher(jsonl)
    if kafka_topic:
        bootstrap = kafka_bootstrap or os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP")
        if not bootstrap:
            raise ValueError("--publish-kafka-topic needs --bootstrap-servers (or GROUNDWATCH_KAFKA_BOOTSTRAP)")
        return KafkaPublisher({"bootstrap_servers": bootstrap}, kafka_topic)
    return None
