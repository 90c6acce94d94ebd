"""The options of `groundwatch monitor`: its Beam pipeline options, its command-line flags (and how they map
to the pipeline options), and the Kafka connection they describe.

    options = PipelineOptions(argv).view_as(MonitorOptions); validate(options)
    connection = connection_from_options(options)     # kafka-python settings; secrets from the environment

`groundwatch produce` shares the connection flags (`add_kafka_security_arguments`).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options.judge import add_judge_arguments, judge_argv
from pipelines.runner.passes import MAX_RECORDS_PER_RUN
from transforms.ingest.windows import DEFAULT_WINDOW_SECONDS
from transforms.io.kafka.client import START_FROM
from transforms.io.kafka.partitions import DISCOVERY_INTERVAL_SECONDS
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD

__all__ = [
    "MonitorOptions",
    "add_arguments",
    "add_kafka_security_arguments",
    "connection_from_options",
    "to_argv",
    "validate",
]


class MonitorOptions(PipelineOptions):
    """Kafka options of the monitor pipeline (the audit options come from `pipelines.audit.AuditOptions`)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--kafka_bootstrap_servers", help="Kafka bootstrap servers, host:port[,host:port].")
        parser.add_argument(
            "--kafka_topic", default="rag.responses", help="Topic of logged responses. Default rag.responses."
        )
        parser.add_argument("--kafka_group_id", default="groundwatch", help="Consumer group to commit.")
        parser.add_argument(
            "--start_from",
            default="committed",
            choices=START_FROM,
            help="committed (else earliest), earliest or latest. Default committed.",
        )
        parser.add_argument("--review_topic", default="rag.review", help="Review-queue topic; '' disables it.")
        parser.add_argument("--dead_letter_topic", default="rag.dead-letters", help="Dead-letter topic; '' disables.")
        parser.add_argument(
            "--event_time",
            default="kafka",
            choices=("kafka", "message"),
            help="Event time: kafka record timestamp or the message timestamp field.",
        )
        parser.add_argument(
            "--max_out_of_order_seconds",
            type=float,
            default=5.0,
            help="How far behind the latest event time the watermark stays. Default 5.",
        )
        parser.add_argument(
            "--checkpoint_records", type=int, default=500, help="Records per source chunk. Default 500."
        )
        parser.add_argument(
            "--checkpoint_seconds", type=float, default=1.0, help="Seconds per source chunk (streaming). Default 1."
        )
        parser.add_argument(
            "--partition_discovery_seconds",
            type=float,
            default=DISCOVERY_INTERVAL_SECONDS,
            help="How often a stream looks for partitions added to the topic. Default 60.",
        )
        parser.add_argument(
            "--until_caught_up",
            action="store_true",
            default=False,
            help="Read to the end offsets seen at start, then stop.",
        )
        parser.add_argument("--security_protocol", default=None, help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.")
        parser.add_argument("--sasl_mechanism", default=None, help="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, ...")
        parser.add_argument(
            "--sasl_username", default=None, help="SASL user (password: $GROUNDWATCH_KAFKA_SASL_PASSWORD)."
        )
        parser.add_argument("--ssl_cafile", default=None, help="CA bundle (PEM) to verify the brokers.")
        parser.add_argument("--ssl_certfile", default=None, help="Client certificate (PEM) for mutual TLS.")
        parser.add_argument(
            "--ssl_keyfile", default=None, help="Client key (PEM); its password: $GROUNDWATCH_KAFKA_SSL_PASSWORD."
        )


def connection_from_options(opts: MonitorOptions, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The kafka-python connection settings; secrets from the environment only."""
    env = os.environ if env is None else env
    connection = {
        "bootstrap_servers": opts.kafka_bootstrap_servers,
        "security_protocol": opts.security_protocol,
        "sasl_mechanism": opts.sasl_mechanism,
        "sasl_plain_username": opts.sasl_username,
        "sasl_plain_password": env.get("GROUNDWATCH_KAFKA_SASL_PASSWORD"),
        "ssl_cafile": opts.ssl_cafile,
        "ssl_certfile": opts.ssl_certfile,
        "ssl_keyfile": opts.ssl_keyfile,
        "ssl_password": env.get("GROUNDWATCH_KAFKA_SSL_PASSWORD"),
    }
    return {k: v for k, v in connection.items() if v}


def validate(opts: MonitorOptions) -> None:
    """Raise ValueError naming the flag when a Kafka option is unusable."""
    if not opts.kafka_bootstrap_servers:
        raise ValueError("--bootstrap-servers is required (host:port[,host:port])")
    if not opts.kafka_topic:
        raise ValueError("--topic is required")
    if opts.checkpoint_records < 1 or opts.checkpoint_seconds <= 0:
        raise ValueError("--checkpoint-records must be >= 1 and --checkpoint-seconds > 0")
    if opts.max_out_of_order_seconds < 0:
        raise ValueError("--max-out-of-order-seconds must be >= 0")
    if opts.partition_discovery_seconds <= 0:
        raise ValueError("--partition-discovery-seconds must be > 0")


_AUDIT_FLAGS = (
    "lake",
    "sample-rate",
    "window-seconds",
    "allowed-lateness-seconds",
    "confidence-threshold",
    "verifier",
    "calibration",
    "max-records-per-run",
)
_KAFKA_FLAGS = (
    "bootstrap-servers",
    "topic",
    "group-id",
    "start-from",
    "review-topic",
    "dead-letter-topic",
    "event-time",
    "max-out-of-order-seconds",
    "checkpoint-records",
    "checkpoint-seconds",
    "partition-discovery-seconds",
    "security-protocol",
    "sasl-mechanism",
    "sasl-username",
    "ssl-cafile",
    "ssl-certfile",
    "ssl-keyfile",
    "prism-location",
)


# Beam's own options already use these names; the pipeline options carry a kafka_ prefix.
_RENAMED = {"bootstrap_servers": "kafka_bootstrap_servers", "topic": "kafka_topic", "group_id": "kafka_group_id"}


def add_kafka_security_arguments(parser: argparse.ArgumentParser) -> None:
    """Client settings for a secured cluster (shared by monitor and produce); passwords only from the environment."""
    parser.add_argument("--security-protocol", help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.")
    parser.add_argument("--sasl-mechanism", help="e.g. PLAIN or SCRAM-SHA-512.")
    parser.add_argument("--sasl-username", help="SASL user; the password only from $GROUNDWATCH_KAFKA_SASL_PASSWORD.")
    parser.add_argument("--ssl-cafile", help="CA bundle (PEM).")
    parser.add_argument("--ssl-certfile", help="Client certificate (PEM).")
    parser.add_argument("--ssl-keyfile", help="Client key (PEM); password from $GROUNDWATCH_KAFKA_SSL_PASSWORD.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `groundwatch monitor` flags; anything else is passed to Beam as a pipeline option."""
    parser.add_argument("--bootstrap-servers", required=True, help="Kafka bootstrap servers, host:port[,...].")
    parser.add_argument("--topic", default="rag.responses", help="Topic of logged responses. Default rag.responses.")
    parser.add_argument("--lake", default="./groundwatch-lake", help="Audit lake folder. Default ./groundwatch-lake.")
    parser.add_argument("--group-id", default="groundwatch", help="Consumer group. Default groundwatch.")
    parser.add_argument("--start-from", default="committed", choices=START_FROM, help="Default committed.")
    parser.add_argument("--window-seconds", type=int, default=DEFAULT_WINDOW_SECONDS, help="Window size. Default 60.")
    parser.add_argument(
        "--allowed-lateness-seconds",
        type=int,
        default=3600,
        help="Late responses still audited this long after their window. Default 3600.",
    )
    parser.add_argument("--sample-rate", type=float, default=1.0, help="Fraction audited (high risk always).")
    parser.add_argument("--confidence-threshold", type=float, default=DEFAULT_CONFIDENCE_THRESHOLD, help="Default 0.7.")
    parser.add_argument("--verifier", default="heuristic", help="Sentence verifier. Default heuristic.")
    parser.add_argument("--calibration", default="", help="Calibration file from `groundwatch calibrate --fit`.")
    parser.add_argument("--until-caught-up", action="store_true", help="Read to the current end, then stop.")
    parser.add_argument(
        "--max-records-per-run",
        type=int,
        default=MAX_RECORDS_PER_RUN,
        help="With --until-caught-up: passes of at most this many messages (bounds memory). Default 50000.",
    )
    parser.add_argument("--review-topic", default="rag.review", help="Review-queue topic ('' disables).")
    parser.add_argument("--dead-letter-topic", default="rag.dead-letters", help="Dead-letter topic ('' disables).")
    parser.add_argument("--event-time", default="kafka", choices=("kafka", "message"), help="Default kafka.")
    parser.add_argument("--max-out-of-order-seconds", type=float, default=5.0, help="Watermark slack. Default 5.")
    parser.add_argument("--checkpoint-records", type=int, default=500, help="Records per chunk. Default 500.")
    parser.add_argument("--checkpoint-seconds", type=float, default=1.0, help="Streaming chunk seconds. Default 1.")
    parser.add_argument(
        "--partition-discovery-seconds",
        type=float,
        default=DISCOVERY_INTERVAL_SECONDS,
        help="How often a stream looks for new partitions of the topic. Default 60.",
    )
    add_kafka_security_arguments(parser)
    parser.add_argument("--prism-location", help="Prism binary. Default ~/.cache/groundwatch/bin/prism.")
    add_judge_arguments(parser)


def to_argv(args: argparse.Namespace) -> list[str]:
    """The pipeline argv for parsed CLI arguments plus the Beam options passed through."""
    argv = []
    for flag in _AUDIT_FLAGS + _KAFKA_FLAGS:
        value = getattr(args, flag.replace("-", "_"), None)
        if value is not None:
            name = flag.replace("-", "_")
            argv.append(f"--{_RENAMED.get(name, name)}={value}")
    if args.until_caught_up:
        argv.append("--until_caught_up")
    return argv + judge_argv(args) + list(getattr(args, "extra_args", []) or [])
