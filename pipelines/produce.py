"""Publish logged responses to Kafka: the shipped sample, generated traffic, or a JSONL file.

    groundwatch produce --bootstrap-servers 127.0.0.1:39092 --topic rag.responses --generate 1000 \\
        [--rate 200] [--malformed-fraction 0.05] [--seed 7] [--scenario mixed]
    groundwatch produce --bootstrap-servers 127.0.0.1:39092 --topic rag.responses --input traffic.jsonl
    groundwatch produce --bootstrap-servers 127.0.0.1:39092 --topic rag.responses --sample

Generated responses are stamped from now on (so a streaming monitor sees live traffic) unless `--start`
gives an ISO 8601 time; malformed messages (truncated JSON, wrong types, unknown schema version, non-UTF-8
bytes, ...) replace that fraction of them. Each message is keyed by its response_id, so one response always
lands in the same partition. `--rate` paces the sending (messages per second); by default it is as fast as
the broker takes them. A topic that does not exist yet is created first, with the broker's default partitions
and replication, whether or not the broker creates topics by itself. Connection settings are the monitor's
(security protocol, SASL, SSL; passwords from the environment).
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import random
import sys
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipelines.options.flags import add_flags, flags_argv
from pipelines.options.monitor import (
    BOOTSTRAP_FLAG,
    CONNECTION_FLAGS,
    MonitorOptions,
    add_kafka_security_arguments,
    connection_from_options,
)
from pipelines.traffic.synthetic import generate_responses, malformed_lines
from transforms.ingest.parse import ParseError, parse_message, response_id_of
from transforms.io.kafka.client import close_producer, named_kafka_errors, require_all_taken, send_or_refusal
from transforms.io.kafka.client import producer as kafka_producer
from transforms.io.kafka.sink import ensure_topics

if TYPE_CHECKING:
    from kafka.errors import KafkaError
    from kafka.producer.future import FutureRecordMetadata

__all__ = ["add_arguments", "generated_messages", "main", "malformed_messages", "produce_messages"]


def malformed_messages(valid: list[dict], seed: int) -> list[bytes]:
    """The traffic generator's bad messages that the parser rejects (not its duplicates or empty evidence)."""
    bad = []
    for raw in malformed_lines(valid, seed):
        try:
            parse_message(raw)
        except ParseError:
            bad.append(raw)
    return bad


def generated_messages(
    count: int, *, seed: int = 7, scenario: str = "mixed", malformed_fraction: float = 0.0, start: datetime
) -> list[bytes]:
    """`count` messages: valid generated responses with `malformed_fraction` of them replaced by bad ones."""
    if not 0.0 <= malformed_fraction <= 1.0:
        raise ValueError(f"--malformed-fraction must be in [0, 1], got {malformed_fraction}")
    bad_count = round(count * malformed_fraction)
    valid = list(generate_responses(count - bad_count, seed=seed, scenario=scenario, start=start, seconds_between=0.01))
    messages = [json.dumps(m).encode() for m in valid]
    if bad_count:
        bad = malformed_messages(valid or list(generate_responses(1, seed=seed, start=start)), seed)
        rng = random.Random(seed + 3)
        for i in range(bad_count):
            messages.insert(rng.randrange(0, len(messages) + 1), bad[i % len(bad)])
    return messages


def _file_messages(path: str) -> Iterator[bytes]:
    with open(path, "rb") as stream:
        for line in stream:
            line = line.rstrip(b"\r\n")
            if line.strip():
                yield line


def _key_of(raw: bytes) -> bytes | None:
    response_id = response_id_of(raw)  # None (sent as is, unkeyed) also for an id UTF-8 cannot encode
    return response_id.encode("utf-8") if response_id is not None else None


def produce_messages(connection: Mapping[str, Any], topic: str, messages, *, rate: float | None = None) -> int:
    """Send raw messages to `topic` (keyed by response_id), at most `rate` per second; return how many.

    The topic is created first when it is missing: a broker that creates topics by itself would do so too, but
    kafka-python logs the first lookup of a missing topic as an error ("Topic ... not found in cluster
    metadata"), and a broker that does not would leave every send waiting. Kafka's errors raise `KafkaFailed`,
    naming the servers, and so do messages Kafka did not take (too large, say), once every message is sent and
    answered, saying how many."""
    ensure_topics(connection, [topic])
    servers = connection.get("bootstrap_servers", "")
    with named_kafka_errors(servers):
        producer = kafka_producer(connection)
        sent: list[FutureRecordMetadata | KafkaError] = []
        started = time.monotonic()
        try:
            for raw in messages:
                if rate:
                    ahead = started + len(sent) / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                sent.append(send_or_refusal(producer, topic, value=raw, key=_key_of(raw)))
            require_all_taken(producer, sent, servers, topic, "messages")
        finally:
            close_producer(producer)
    return len(sent)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `groundwatch produce` flags."""
    add_flags(parser, [BOOTSTRAP_FLAG])
    parser.add_argument("--topic", default="rag.responses", help="Topic to publish to. Default %(default)s.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", help="JSONL file: one message per line, sent as is.")
    source.add_argument("--generate", type=int, metavar="N", help="Generate N responses.")
    source.add_argument("--sample", action="store_true", help="The sample traffic shipped with groundwatch.")
    parser.add_argument("--rate", type=float, help="Messages per second. Default: as fast as possible.")
    parser.add_argument("--malformed-fraction", type=float, default=0.0, help="Share of bad messages (--generate).")
    parser.add_argument("--seed", type=int, default=7, help="Generator seed. Default %(default)s.")
    parser.add_argument("--scenario", default="mixed", help="Generator scenario. Default %(default)s.")
    parser.add_argument("--start", help="Event time of the first generated response (ISO 8601). Default now.")
    add_kafka_security_arguments(parser)


def main(args: argparse.Namespace) -> int:
    connection = connection_from_options(MonitorOptions(flags_argv(args, CONNECTION_FLAGS)))
    try:
        if args.input:
            messages = list(_file_messages(args.input))
        elif args.sample:
            data = importlib.resources.files("pipelines").joinpath("data/sample_traffic.jsonl")
            messages = [line for line in data.read_bytes().splitlines() if line.strip()]
        else:
            start = datetime.fromisoformat(args.start) if args.start else datetime.now(UTC)
            messages = generated_messages(
                args.generate,
                seed=args.seed,
                scenario=args.scenario,
                malformed_fraction=args.malformed_fraction,
                start=start,
            )
        sent = produce_messages(connection, args.topic, messages, rate=args.rate)
    except (ValueError, OSError) as e:
        print(f"groundwatch produce: {e}", file=sys.stderr)
        return 2
    print(f"produced {sent} messages to {args.topic} at {args.bootstrap_servers}")
    return 0
