"""`groundwatch drift`: check each new window of the lake against its reference and raise alerts.

    groundwatch drift --lake ./groundwatch-lake [--baseline-windows 6] [--min-responses 20]
        [--reference-from 2026-11-29T09:00Z --reference-to 2026-11-29T10:00Z]
        [--drift-p-value 0.001] [--max-confidence-drop 0.10] [--fail-on-alert]

It checks every window of the lake not checked before and writes the checks, alerts and incidents back to
the lake, with one Evidently snapshot per window (`pipelines.runner.drift_run`, which `groundwatch ui`
shows). Alerts also go to stderr and, when Kafka is configured (`--bootstrap-servers` or
GROUNDWATCH_KAFKA_BOOTSTRAP), to the alerts topic.

Exit codes: 0 done; 1 with `--fail-on-alert` when an alert fired in this run or is still firing;
2 bad usage, or Kafka failing: a broker that does not answer before any window is checked means nothing
checked; one lost during the run leaves the windows from the one it could not send for unchecked; either way
the next run, with Kafka back, checks those windows and sends their alerts. Updates the alerts topic refuses
for good (too large for it) also give 2, after the summary (their windows are checked); 2 wins over 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from pipelines.options.common import (
    add_deprecated_alias,
    add_lake_argument,
    existing_lake,
    exits_2_on_usage_error,
    iso_time,
)
from pipelines.runner.drift_run import DEFAULT_ALERTS_TOPIC, log_alerts_to_stderr, run_drift
from transforms.io.kafka.client import KafkaFailed
from transforms.monitoring.drift import DriftConfig

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument("--baseline-windows", type=int, default=6, help="Trailing windows in the reference. Default 6.")
    parser.add_argument(
        "--reference-from", type=iso_time, help="Fixed reference period start, ISO 8601 (e.g. 2026-11-29T09:00Z)."
    )
    parser.add_argument("--reference-to", type=iso_time, help="Fixed reference period end (exclusive), ISO 8601.")
    parser.add_argument("--min-responses", type=int, default=20, help="Fewer responses: insufficient data. Default 20.")
    parser.add_argument(
        "--drift-p-value",
        type=float,
        default=0.001,
        help="K-S p-value threshold per window, shared by the slices judged in it (Bonferroni). Default 0.001.",
    )
    parser.add_argument(
        "--max-confidence-drop",
        type=float,
        default=0.10,
        help="Tolerated relative drop of mean confidence. Default 0.10.",
    )
    parser.add_argument(
        "--min-claims", type=int, default=50, help="Fewer claims: claim rates not judged in that window. Default 50."
    )
    parser.add_argument("--min-coverage", type=float, default=0.95, help="Lowest attribution coverage. Default 0.95.")
    parser.add_argument(
        "--max-low-confidence", type=float, default=0.10, help="Highest low-confidence claim rate. Default 0.10."
    )
    parser.add_argument(
        "--clear-after", type=int, default=2, help="Consecutive passing windows that clear an alert. Default 2."
    )
    parser.add_argument(
        "--max-span-hours",
        type=float,
        default=168.0,
        help="How far back a slice too small for one window pools its windows to reach --min-responses "
        "(hours). Default 168, a week; 0 checks every slice window by window.",
    )
    parser.add_argument(
        "--recompute", action="store_true", help="Forget earlier drift runs (checks, alerts, snapshots), check all."
    )
    parser.add_argument("--no-workspace", action="store_true", help="Do not add snapshots to the Evidently workspace.")
    parser.add_argument(
        "--bootstrap-servers",
        dest="kafka_bootstrap",
        default=os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP"),
        help="Kafka servers (host:port[,host:port]) for the alerts topic. Default $GROUNDWATCH_KAFKA_BOOTSTRAP, "
        "else no Kafka.",
    )
    add_deprecated_alias(parser, "--kafka-bootstrap", "--bootstrap-servers")
    parser.add_argument("--alerts-topic", default=DEFAULT_ALERTS_TOPIC, help=f"Default {DEFAULT_ALERTS_TOPIC}.")
    parser.add_argument("--json", action="store_true", help="Also print the alert changes as JSON lines.")
    parser.add_argument("--fail-on-alert", action="store_true", help="Exit 1 when an alert fired or is still firing.")


@exits_2_on_usage_error("drift")
def main(args: argparse.Namespace) -> int:
    log_alerts_to_stderr()
    existing_lake(args.lake)
    try:
        config = DriftConfig(
            baseline_windows=args.baseline_windows,
            reference_from=args.reference_from,
            reference_to=args.reference_to,
            min_responses=args.min_responses,
            drift_p_value=args.drift_p_value,
            max_confidence_drop=args.max_confidence_drop,
            min_claims=args.min_claims,
            min_coverage=args.min_coverage,
            max_low_confidence=args.max_low_confidence,
            clear_after=args.clear_after,
            max_span_hours=args.max_span_hours,
        )
    except ValueError as error:
        print(f"groundwatch drift: {error}", file=sys.stderr)
        return 2
    try:
        outcome = run_drift(
            args.lake,
            config,
            workspace=not args.no_workspace,
            recompute=args.recompute,
            kafka_bootstrap=args.kafka_bootstrap,
            alerts_topic=args.alerts_topic,
            progress="drift",
        )
    except KafkaFailed as error:  # Kafka away before any window was checked, or lost mid-run (the line says where)
        print(f"groundwatch drift: {error}", file=sys.stderr)
        return 2
    if args.json:
        for row in outcome.changes:
            print(json.dumps(row.model_dump(mode="json")))
    if outcome.refused:  # the windows are checked: what the alerts topic would not take is an error all the same
        print(f"groundwatch drift: {outcome.refused}", file=sys.stderr)
        return 2
    return 1 if args.fail_on_alert and (outcome.fired or outcome.firing) else 0
