"""Kafka client basics shared by the source, the sinks, the offset ledger and the CLI: connection settings,
consumers and producers, where a partition's read starts, and a message's own event time.

The connection is a plain dict of kafka-python client settings (bootstrap_servers, security_protocol,
sasl_*, ssl_*), passed through as is, so any cluster works.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from schemas.responses import EARLIEST_EVENT_TIME, LATEST_EVENT_TIME

if TYPE_CHECKING:  # kafka-python is imported where a client is built, so importing this module stays cheap
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError
    from kafka.producer.future import FutureRecordMetadata

__all__ = [
    "CLIENT_SETTINGS",
    "CLOSE_TRIES",
    "KAFKA_METRICS_NAMESPACE",
    "PUBLISHED_PREFIX",
    "REFUSED_PREFIX",
    "KafkaFailed",
    "PRODUCER_LINGER_MS",
    "START_FROM",
    "answers",
    "client_config",
    "close_producer",
    "consumer",
    "failures",
    "kafka_source",
    "kafka_words",
    "message_event_time",
    "named_kafka_errors",
    "not_taken",
    "producer",
    "refused_for_good",
    "require_all_taken",
    "resolve_start_offset",
    "send_or_refusal",
]

KAFKA_METRICS_NAMESPACE = "groundwatch.kafka"
"""Counters of the Kafka transforms: records read, partitions discovered, messages published and refused (per
topic, `PUBLISHED_PREFIX` and `REFUSED_PREFIX` before its name), offset commits and failed offset commit attempts
(`offset_commit_failures`; retried with the partition's next chunk read, idle ones of a stream included)."""

PUBLISHED_PREFIX = "published_"
"""A sink's counter of the messages the broker acknowledged is this before the topic's name."""

REFUSED_PREFIX = "refused_"
"""A sink's counter of the messages refused for good (too large, say) is this before the topic's name."""

START_FROM = ("committed", "earliest", "latest")

PRODUCER_LINGER_MS = 100
"""How long a producer keeps a batch open for more messages. Every sender here flushes when it is done (the
sinks at the end of each bundle, `groundwatch produce` at the end of its input), so this only bounds how long
a message waits before it is sent; what it buys is fewer, fuller batches. kafka-python wakes its sender
thread and sends a request for every batch: with 2 KB messages at 450/s it spent 0.59-0.64 ms of CPU per
message at 5 ms and 0.31-0.32 ms at 100 ms when flushed every 40 messages, and 0.62-0.65 against 0.28-0.30
ms when paced with one flush at the end (`python scripts/bench_kafka.py --mode producer --count 6000
--rate 450`, two runs)."""

CLIENT_SETTINGS = (
    "bootstrap_servers",
    "client_id",
    "security_protocol",
    "sasl_mechanism",
    "sasl_plain_username",
    "sasl_plain_password",
    "sasl_kerberos_service_name",
    "sasl_kerberos_domain_name",
    "ssl_cafile",
    "ssl_certfile",
    "ssl_keyfile",
    "ssl_password",
    "ssl_check_hostname",
    "ssl_crlfile",
    "request_timeout_ms",
    "bootstrap_timeout_ms",
)
"""The kafka-python settings a connection dict may carry; they reach consumers, producers and admin clients."""


def client_config(connection: Mapping[str, Any]) -> dict[str, Any]:
    """The connection dict checked against the settings every kafka-python client accepts."""
    unknown = sorted(set(connection) - set(CLIENT_SETTINGS))
    if unknown:
        raise ValueError(f"unknown Kafka connection settings: {', '.join(unknown)}")
    if not connection.get("bootstrap_servers"):
        raise ValueError("the Kafka connection needs bootstrap_servers (host:port[,host:port...])")
    return {k: v for k, v in connection.items() if v is not None}


def kafka_source(topic: str) -> str:
    """The `Origin.source` of a message read from `topic`."""
    return f"kafka:{topic}"


def message_event_time(raw: bytes, fallback_s: float | None) -> float | None:
    """The message's own `timestamp` (ISO 8601 with a zone, or epoch ms) in epoch seconds, else `fallback_s`.

    Only a time the contract accepts counts (finite, in [1970, 2200)): the source stamps each record with it
    and a late check formats it, and `1e400`, `NaN` or a year 10**9 would fail there, in the source, where no
    dead letter can catch them. Parsing rejects such a message later, with its reason."""
    try:
        value = json.loads(raw).get("timestamp")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = value / 1000.0
        else:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if when.tzinfo is None:
                return fallback_s
            seconds = when.timestamp()
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError, RecursionError, OverflowError):
        return fallback_s
    if not _EARLIEST_S <= seconds < _LATEST_S:  # NaN fails this too
        return fallback_s
    return seconds


_EARLIEST_S, _LATEST_S = EARLIEST_EVENT_TIME.timestamp(), LATEST_EVENT_TIME.timestamp()


def resolve_start_offset(committed: int | None, earliest: int, latest: int, start_from: str) -> int:
    """Where a partition's read starts: the committed offset when asked for and present, else earliest or latest."""
    if start_from not in START_FROM:
        raise ValueError(f"start_from must be one of {START_FROM}, got {start_from!r}")
    if start_from == "committed" and committed is not None:
        # Retention may have deleted what the group last committed; start at what still exists.
        return min(max(committed, earliest), latest)
    return latest if start_from == "latest" else earliest


class KafkaFailed(ValueError):
    """A Kafka request failed (`named_kafka_errors`); the message names the servers."""


@contextlib.contextmanager
def named_kafka_errors(bootstrap_servers: str) -> Iterator[None]:
    """kafka-python's errors inside as a `KafkaFailed` that names the servers: the one line a command prints.

        with named_kafka_errors(args.bootstrap_servers):
            ensure_topics(connection, [args.topic])

    kafka-python raises a `KafkaError` (not an `OSError`) when a broker does not answer or refuses a request,
    which a command would otherwise end on with a traceback. A broker that does not answer is "cannot reach";
    anything else (a refused topic name, a message too large) is said as kafka-python says it.
    """
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

    servers = f"--bootstrap-servers {bootstrap_servers}"
    try:
        yield
    except (KafkaConnectionError, KafkaTimeoutError) as e:
        raise KafkaFailed(f"cannot reach Kafka at {servers}: {kafka_words(e)}") from None
    except KafkaError as e:
        raise KafkaFailed(f"Kafka at {servers}: {kafka_words(e)}") from None


def kafka_words(error: KafkaError) -> str:
    """kafka-python's words for an error, without the ": None" of a broker's refusal that came without a
    description ("[Error 10] MessageSizeTooLargeError")."""
    return str(error).removesuffix(": None")


def producer(connection: Mapping[str, Any], **extra: Any) -> KafkaProducer:
    """A producer that waits for every in-sync replica (acks=all), retries, and batches (`PRODUCER_LINGER_MS`).

    Not idempotent: kafka-python 3.x's idempotent producer (its default) takes a record the broker refuses (too
    large for the topic, say) as fatal, and fails every later record it is given, to any topic, with the same
    error; one oversized review message would have cost a worker every message after it. Delivery here is
    at-least-once with keys anyway (a retried bundle sends again), so one thing idempotence gives is not needed:
    no duplicate from the producer's own retries. The other is: without it, a batch the producer retries may
    land after a later one. Where the order of one key's messages matters (an alert's firing and cleared rows),
    pass `max_in_flight_requests_per_connection=1`.
    """
    from kafka import KafkaProducer

    settings = {
        "acks": "all",
        "retries": 10,
        "linger_ms": PRODUCER_LINGER_MS,
        "enable_idempotence": False,
        **extra,
    }
    return KafkaProducer(**client_config(connection), **settings)


def refused_for_good(error: KafkaError) -> bool:
    """Whether the record itself was refused, so that sending it again would be refused again: too large (for a
    request, or for the topic), or invalid (a keyless record to a compacted topic, say). kafka-python also fails
    the other records of a batch in which the broker refused one record as invalid, with a plain `KafkaError`
    that says so. Those would be taken if sent again, but they count as refused with it: rare here, where every
    message has a key.

    Anything else is not the record's doing, and is raised by whoever sent it: a broker away past the delivery
    timeout, a topic the cluster refuses to this client (a missing ACL), a name it cannot have, a corrupt
    record (damaged on the way), or a timestamp the topic refuses (the producer stamps each record with its
    host's clock, so this is the clock's doing, and every record would be refused).
    """
    from kafka.errors import InvalidRecordError, KafkaError, MessageSizeTooLargeError, RecordListTooLargeError

    return isinstance(error, (InvalidRecordError, MessageSizeTooLargeError, RecordListTooLargeError)) or (
        type(error) is KafkaError
    )


def send_or_refusal(sender: KafkaProducer, topic: str, **record: Any) -> FutureRecordMetadata | KafkaError:
    """`sender.send(topic, **record)`, or the error when the producer refuses the record before sending it
    (larger than its largest request, 1 MiB by default), to be answered with the others by `answers`. An error
    that is not the record's own (`refused_for_good`) raises."""
    from kafka.errors import KafkaError

    try:
        return sender.send(topic, **record)
    except KafkaError as error:
        if not refused_for_good(error):
            raise
        return error


def answers(sender: KafkaProducer, sent: Sequence[FutureRecordMetadata | KafkaError]) -> list[KafkaError | None]:
    """Send what the producer holds now, and wait for the answer to each record, in order: None where the broker
    took it, else the error (a refusal before sending is its own answer).

    `flush` first, so that the last batch goes now rather than when its linger ends. But `flush` does not say
    which records failed (it only logs them), and when the broker refuses a batch as too large, kafka-python
    3.0.12 splits it to send again and its `flush` raises `UnknownError: Future not done` before the split
    records are answered. So each record's own future is waited on. Each is answered within the producer's
    delivery timeout (kafka-python's default, 120 s), a broker away included.
    """
    from kafka.errors import KafkaError

    with contextlib.suppress(KafkaError):
        sender.flush()
    answered: list[KafkaError | None] = []
    for record in sent:
        if isinstance(record, KafkaError):
            answered.append(record)
            continue
        try:
            record.get()
        except KafkaError as error:
            answered.append(error)
        else:
            answered.append(None)
    return answered


def failures(sender: KafkaProducer, sent: Sequence[FutureRecordMetadata | KafkaError]) -> list[KafkaError]:
    """The errors of the records not taken, once every record is answered (`answers`)."""
    return [error for error in answers(sender, sent) if error is not None]


def require_all_taken(
    sender: KafkaProducer,
    sent: Sequence[FutureRecordMetadata | KafkaError],
    bootstrap_servers: str,
    topic: str,
    what: str,
) -> None:
    """Wait for every record's answer (`answers`); raise `KafkaFailed` if any was not taken (`not_taken`)."""
    failed = failures(sender, sent)
    if failed:
        raise not_taken(failed, len(sent), bootstrap_servers, topic, what)


def not_taken(failed: Sequence[KafkaError], total: int, bootstrap_servers: str, topic: str, what: str) -> KafkaFailed:
    """The error for `failed` records of `total` sent, saying how many and the first one's error: "Kafka at
    --bootstrap-servers H:P: 2 of 5 messages to t not taken, the first: [Error 10] MessageSizeTooLargeError".
    When every failure is a broker not answering (a timeout, a lost connection), it says "cannot reach Kafka",
    and how many went unanswered."""
    from kafka.errors import KafkaConnectionError, KafkaTimeoutError

    first = kafka_words(failed[0])
    counted, servers = f"{len(failed)} of {total} {what} to {topic}", f"--bootstrap-servers {bootstrap_servers}"
    if all(isinstance(error, (KafkaConnectionError, KafkaTimeoutError)) for error in failed):
        return KafkaFailed(f"cannot reach Kafka at {servers}: {counted} unanswered, the first: {first}")
    return KafkaFailed(f"Kafka at {servers}: {counted} not taken, the first: {first}")


CLOSE_TRIES = 20
"""How often `close_producer` closes again after a flush cut short by a split batch (each split halves one)."""


def close_producer(sender: KafkaProducer, timeout: float | None = None) -> None:
    """Close a producer. Its `close` flushes first, and kafka-python 3.0.12's `flush` raises `UnknownError: Future
    not done` when it splits a batch the broker refused as too large: `close` then stops before it closes
    anything, and the split records are never sent. So close again, while that is what it raises; each try sends
    what the last split left. After `CLOSE_TRIES`, the error is raised."""
    from kafka.errors import UnknownError

    for _ in range(CLOSE_TRIES - 1):
        try:
            sender.close(timeout=timeout)
            return
        except UnknownError:
            continue
    sender.close(timeout=timeout)


def consumer(connection: Mapping[str, Any], group_id: str | None, **extra: Any) -> KafkaConsumer:
    """A consumer that never commits by itself and reads committed transactions only."""
    from kafka import KafkaConsumer

    return KafkaConsumer(
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        **client_config(connection),
        **extra,
    )
