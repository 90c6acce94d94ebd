"""`groundwatch serve`: the audit as an HTTP JSON service in front of a RAG system's responses.

    groundwatch serve [--host 127.0.0.1] [--port 8321] [--workers 1] [--verifier heuristic] \\
        [--confidence-threshold 0.7] [--judge-timeout-per-request 10] [--judge-base-url URL --judge-model M ...] \\
        [--model-path DIR ...] [--calibration cal.json] \\
        [--publish-jsonl verified.jsonl | --publish-kafka-topic rag.responses --bootstrap-servers H:P]
    curl -s localhost:8321/v1/verify -H 'content-type: application/json' -d @response.json

`POST /v1/verify` audits one logged response (the input contract) and returns the sentence report, the
citation audit, the claim checks and the routing decision; `POST /v1/verify/batch` takes
`{"responses": [...]}`; `GET /healthz`; `GET /openapi.json`. The app is `pipelines.serving.app`; it runs on
uvicorn, with `--workers N` processes. Set GROUNDWATCH_SERVE_API_KEY to require a key (Authorization: Bearer
KEY, or X-API-Key); `--require-api-key` refuses to start without one. Exit codes: 0 stopped; 2 bad usage, a
busy port, or Kafka failing (`--publish-kafka-topic`: reached, and the topic created, before any worker starts);
1 uvicorn stopped otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys

from pipelines.options.audit import add_calibration_argument, load_calibration
from pipelines.options.common import add_deprecated_alias, check_port_free
from pipelines.options.model import add_stage_arguments, stage_verifier_config
from pipelines.serving.app import API_KEY_ENV, CONFIG_ENV, ServeConfig, create_app
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
from transforms.verify.registry import available_verifiers

__all__ = ["DEFAULT_PORT", "add_arguments", "config_from", "main"]

DEFAULT_PORT = 8321


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Address to listen on. Default 127.0.0.1 (this machine).")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Port. Default {DEFAULT_PORT}.")
    parser.add_argument("--workers", type=int, default=1, help="Worker processes (uvicorn's workers). Default 1.")
    parser.add_argument("--verifier", default="heuristic", help=f"One of: {', '.join(available_verifiers())}.")
    parser.add_argument(
        "--confidence-threshold",
        type=float,
        default=DEFAULT_CONFIDENCE_THRESHOLD,
        help=f"Sentences under this confidence need review; in [0, 1]. Default {DEFAULT_CONFIDENCE_THRESHOLD}.",
    )
    parser.add_argument(
        "--judge-timeout-per-request",
        type=float,
        default=10.0,
        help="Seconds a request waits for the judge (openai, cascade); then the offline verdict, marked "
        "undetermined and needing review. Default 10.",
    )
    parser.add_argument("--publish-jsonl", metavar="FILE", help="Append every verified response to this JSONL file.")
    parser.add_argument("--publish-kafka-topic", metavar="TOPIC", help="Send every verified response to this topic.")
    parser.add_argument(
        "--bootstrap-servers",
        dest="kafka_bootstrap_servers",
        help="Kafka servers (host:port[,host:port]) for --publish-kafka-topic. Default $GROUNDWATCH_KAFKA_BOOTSTRAP.",
    )
    add_deprecated_alias(parser, "--kafka-bootstrap-servers", "--bootstrap-servers")
    parser.add_argument(
        "--require-api-key", action="store_true", help="Refuse to start unless GROUNDWATCH_SERVE_API_KEY is set."
    )
    parser.add_argument("--access-log", action="store_true", help="Log each request line (never headers or bodies).")
    add_calibration_argument(parser)
    add_stage_arguments(parser)


def config_from(args: argparse.Namespace):
    """The ServeConfig of parsed flags; ValueError naming the flag when one is unusable."""
    if args.verifier not in available_verifiers():
        raise ValueError(f"--verifier {args.verifier!r} is unknown; choose one of: {', '.join(available_verifiers())}")
    if not 0.0 <= args.confidence_threshold <= 1.0:
        raise ValueError(f"--confidence-threshold must be in [0, 1], got {args.confidence_threshold}")
    if args.judge_timeout_per_request <= 0:
        raise ValueError(f"--judge-timeout-per-request must be positive, got {args.judge_timeout_per_request}")
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    if not 0 <= args.port < 65536:
        raise ValueError(f"--port must be in 0-65535, got {args.port}")
    if args.publish_jsonl and args.publish_kafka_topic:
        raise ValueError("give --publish-jsonl or --publish-kafka-topic, not both")
    if args.publish_kafka_topic and not (args.kafka_bootstrap_servers or os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP")):
        raise ValueError("--publish-kafka-topic needs --bootstrap-servers (or GROUNDWATCH_KAFKA_BOOTSTRAP)")
    calibration = None
    if getattr(args, "calibration", None):
        load_calibration(args)  # ValueError naming the flag, before any worker starts
        calibration = os.path.abspath(args.calibration)
    return ServeConfig(
        verifier=args.verifier,
        calibration=calibration,
        threshold=args.confidence_threshold,
        verifier_config=stage_verifier_config(args),
        judge_timeout_s=args.judge_timeout_per_request,
        publish_jsonl=os.path.abspath(args.publish_jsonl) if args.publish_jsonl else None,
        publish_kafka_topic=args.publish_kafka_topic,
        kafka_bootstrap=args.kafka_bootstrap_servers or os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP"),
    )


def _reach_kafka_topic(config: ServeConfig) -> None:
    """With --publish-kafka-topic: reach Kafka and create the topic if missing, before any worker starts.

    Otherwise each worker's start-up fails on its own after kafka-python's 30 s, and uvicorn's exit says only
    that the service did not start."""
    if not config.publish_kafka_topic or not config.kafka_bootstrap:
        return
    from transforms.io.kafka.sink import ensure_topics  # kept lazy: start-up (Beam, only for Kafka)

    ensure_topics({"bootstrap_servers": config.kafka_bootstrap}, [config.publish_kafka_topic])


def main(args: argparse.Namespace) -> int:
    try:
        config = config_from(args)
        if args.require_api_key and not os.environ.get(API_KEY_ENV):
            raise ValueError(f"--require-api-key: set {API_KEY_ENV}")
        create_app(config)  # builds the verifier once here, so a bad judge setting is exit 2, not a dead worker
        _reach_kafka_topic(config)  # up to 30 s: before the port is checked, so that it is still free at the bind
        check_port_free(args.host, args.port)  # before the URL is printed as if the service had started
    except ValueError as e:
        print(f"groundwatch serve: {e}", file=sys.stderr)
        return 2
    # uvicorn's worker processes build the app themselves (factory), from this configuration; no secret in it.
    os.environ[CONFIG_ENV] = config.model_dump_json()
    key = "required" if os.environ.get(API_KEY_ENV) else "not required"
    print(
        f"groundwatch serve: verifier {config.verifier}, {args.workers} worker(s), API key {key}, "
        f"http://{args.host}:{args.port}/openapi.json",
        file=sys.stderr,
    )
    try:
        _run_uvicorn(args)
    except SystemExit as e:  # uvicorn's exit 3: the socket was taken between the check and the bind, or a worker
        # could not start (its lines above say why)
        print(
            f"groundwatch serve: could not start on {args.host}:{args.port} (uvicorn's exit {e.code})", file=sys.stderr
        )
        return 2 if e.code == 3 else 1
    return 0


def _run_uvicorn(args: argparse.Namespace) -> None:
    import uvicorn

    uvicorn.run(
        "pipelines.serving.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        access_log=args.access_log,
        log_level="info",
        server_header=False,
    )
