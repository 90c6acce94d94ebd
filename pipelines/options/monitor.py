"""The options of `groundwatch monitor`: its Beam pipeline options, its command-line flags (and how they map
to the pipeline options), and the Kafka connection they describe. Each flag is declared once, in a table
(`pipelines.options.flags`); the audit's own come from `pipelines.options.audit.AUDIT_FLAGS`.

    options = PipelineOptions(argv).view_as(MonitorOptions); validate(options)
    connection = connection_from_options(options)     # kafka-python settings; secrets from the environment

`groundwatch produce` shares the connection flags (`CONNECTION_FLAGS`, `add_kafka_security_arguments`).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.options.audit import AUDIT_FLAGS
from pipelines.options.flags import (
    Flag,
    add_flags,
    add_pipeline_options,
    flags_argv,
    with_cli_defaults,
)
from pipelines.options.model import add_stage_arguments, stage_argv
from pipelines.runner.stop import FlinkStopOptions  # noqa: F401  (registers --flink_rest with Beam)
from transforms.io.kafka.client import START_FROM
from transforms.io.kafka.partitions import DISCOVERY_INTERVAL_SECONDS

__all__ = [
    "BOOTSTRAP_FLAG",
    "CONNECTION_FLAGS",
    "DEFAULT_PRISM",
    "DRIFT_FLAGS",
    "KAFKA_FLAGS",
    "MonitorOptions",
    "SECURITY_FLAGS",
    "STREAM_ALLOWED_LATENESS_SECONDS",
    "add_arguments",
    "add_kafka_security_arguments",
    "connection_from_options",
    "to_argv",
    "validate",
]

STREAM_ALLOWED_LATENESS_SECONDS = 3600
"""How long after its window a late response is still audited by `groundwatch monitor`."""

# Beam's own options already use the names bootstrap_servers, topic and group_id: the pipeline options carry a
# kafka_ prefix.
BOOTSTRAP_FLAG = Flag(
    "bootstrap-servers",
    "Kafka bootstrap servers, host:port[,host:port].",
    option="kafka_bootstrap_servers",
    required=True,
)
SECURITY_FLAGS: list[Flag] = [
    Flag("security-protocol", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."),
    Flag("sasl-mechanism", "e.g. PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."),
    Flag("sasl-username", "SASL user; the password only from $GROUNDWATCH_KAFKA_SASL_PASSWORD."),
    Flag("ssl-cafile", "CA bundle (PEM) to verify the brokers."),
    Flag("ssl-certfile", "Client certificate (PEM) for mutual TLS."),
    Flag("ssl-keyfile", "Client key (PEM); its password only from $GROUNDWATCH_KAFKA_SSL_PASSWORD."),
]
CONNECTION_FLAGS: list[Flag] = [BOOTSTRAP_FLAG, *SECURITY_FLAGS]
"""How to reach the cluster (shared by monitor and produce); passwords only from the environment."""

KAFKA_FLAGS: list[Flag] = [
    Flag("topic", "Topic of logged responses.", default="rag.responses", option="kafka_topic"),
    Flag("group-id", "Consumer group whose offsets are committed.", default="groundwatch", option="kafka_group_id"),
    Flag("start-from", "committed (else earliest), earliest or latest.", default="committed", choices=START_FROM),
    Flag("until-caught-up", "Read to the end offsets seen at start, then stop.", switch=True),
    Flag("review-topic", "Review-queue topic; '' disables it.", default="rag.review"),
    Flag("dead-letter-topic", "Dead-letter topic; '' disables it.", default="rag.dead-letters"),
    Flag(
        "event-time",
        "Event time: the Kafka record timestamp or the message's timestamp field.",
        default="kafka",
        choices=("kafka", "message"),
    ),
    Flag("max-out-of-order-seconds", "How far behind the latest event time the watermark stays.", float, 5.0),
    Flag("checkpoint-records", "Records per source chunk.", int, 500),
    Flag("checkpoint-seconds", "Seconds per source chunk (streaming).", float, 1.0),
    Flag(
        "partition-discovery-seconds",
        "How often a stream looks for partitions added to the topic.",
        float,
        DISCOVERY_INTERVAL_SECONDS,
    ),
]
"""The Kafka options of the monitor pipeline (its audit options are `AUDIT_FLAGS`)."""

DRIFT_FLAGS: list[Flag] = [
    Flag(
        "drift-every-seconds",
        "How often the monitor checks newly closed windows for drift, as groundwatch drift does; 0 turns it off.",
        float,
        30.0,
    ),
    # pipelines.drift.DEFAULT_ALERTS_TOPIC; not imported, so that parsing options does not load the checks.
    Flag(
        "alerts-topic",
        "Topic for alert and incident updates; '' keeps them in the lake and the log.",
        default="rag.alerts",
    ),
]
"""The drift stage the monitor drives beside its graph (`pipelines.runner.drift_stage`)."""

DEFAULT_PRISM = os.path.join(os.path.expanduser("~"), ".cache", "groundwatch", "bin", "prism")
"""Where `scripts/build-prism.sh` puts the Prism binary."""
_PRISM = Flag(
    "prism-location",
    f"Prism binary for streaming; else $GROUNDWATCH_PRISM, else {DEFAULT_PRISM} (scripts/build-prism.sh).",
    beam_owned=True,  # Beam's PrismRunnerOptions declares --prism_location
)

_FLINK_REST = Flag(
    "flink-rest",
    "HOST:PORT of the Flink REST API running the stream, where Ctrl-C or SIGTERM cancels its job (HOST:LOW-HIGH: a "
    "port range, as scripts/flink.sh prints for its embedded mini-cluster); else --flink_master if HOST:PORT.",
    beam_owned=True,  # FlinkStopOptions declares --flink_rest (imported here, so Beam knows it wherever this is)
)

_CLI_FLAGS: list[Flag] = [
    BOOTSTRAP_FLAG,
    *KAFKA_FLAGS,
    *DRIFT_FLAGS,
    *with_cli_defaults(
        [f for f in AUDIT_FLAGS if f.name != "input"], allowed_lateness_seconds=STREAM_ALLOWED_LATENESS_SECONDS
    ),
    *SECURITY_FLAGS,
    _PRISM,
    _FLINK_REST,
]
"""`groundwatch monitor`'s flags but the judge's, as the CLI shows them."""


class MonitorOptions(PipelineOptions):
    """Kafka options of the monitor pipeline (the audit options come from `pipelines.options.audit.AuditOptions`)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        add_pipeline_options(parser, CONNECTION_FLAGS + KAFKA_FLAGS + DRIFT_FLAGS)


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
    if opts.drift_every_seconds < 0:
        raise ValueError("--drift-every-seconds must be >= 0 (0 turns the drift stage off)")


def add_kafka_security_arguments(parser: argparse.ArgumentParser) -> None:
    """Client settings for a secured cluster (shared by monitor and produce); passwords only from the environment."""
    add_flags(parser, SECURITY_FLAGS, title="Kafka security")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `groundwatch monitor` flags; anything else is passed to Beam as a pipeline option."""
    parser.allow_abbrev = False  # as Beam's parser: a prefix of a flag is not that flag
    add_flags(parser, [f for f in _CLI_FLAGS if f not in SECURITY_FLAGS])
    add_kafka_security_arguments(parser)
    add_stage_arguments(parser)


def to_argv(args: argparse.Namespace) -> list[str]:
    """The pipeline argv for parsed CLI arguments plus the Beam options passed through."""
    return flags_argv(args, _CLI_FLAGS) + stage_argv(args) + list(getattr(args, "extra_args", []) or [])
