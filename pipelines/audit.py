"""The audit pipeline: logged responses in a JSONL file (or glob) -> verdicts in the audit lake.

    groundwatch audit --input traffic.jsonl --lake ./groundwatch-lake \\
        [--sample-rate 1.0] [--window-seconds 60] [--confidence-threshold 0.7] [--verifier heuristic] \\
        [--calibration cal.json] [--review-sample 0.02] \\
        [any Beam option, e.g. --runner=PrismRunner --direct_num_workers=2]

Each flag also takes its underscored spelling (`--sample_rate`, as Beam's options are spelled); a flag neither
this command nor Beam knows is refused with the closest one named (`pipelines.options.flags`).

Every message read is accounted for: audited, sampled out, or dead-lettered
(malformed, invalid, duplicate, or failed in a stage). The run prints the four
counts, from Beam's metrics, and fails if they do not add up. It runs on
Beam's FnApiRunner unless `--runner` says otherwise (the DirectRunner would
first try to download Prism): in process for small inputs, with one worker
process per core (up to 4) from 4 MiB of input on, unless
`--direct_num_workers` / `--direct_running_mode` say otherwise. On that runner an input of more than
`--max-records-per-run` lines (default 50,000) is audited in passes, one run each (`pipelines.runner.passes`):
the runner holds a run's data in memory until it ends.
The run itself is `pipelines.runner.bounded.run_audit`; the graph, `pipelines.runner.audit_graph`.
"""

from __future__ import annotations

import argparse
import functools

from pipelines.options.audit import AUDIT_FLAGS
from pipelines.options.flags import add_flags, flags_argv
from pipelines.options.model import add_stage_arguments, stage_argv
from pipelines.runner.bounded import exit_code, run_audit

__all__ = ["ACCEPTS_PIPELINE_ARGS", "add_arguments", "main"]

ACCEPTS_PIPELINE_ARGS = True

_CLI_FLAGS = [flag for flag in AUDIT_FLAGS if flag.name != "allowed-lateness-seconds"]
"""The `groundwatch audit` flags but the judge's: a bounded run has no late data."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `groundwatch audit` flags; anything else is passed to Beam as a pipeline option."""
    parser.allow_abbrev = False  # as Beam's parser: a prefix of a flag is not that flag
    add_flags(parser, _CLI_FLAGS)
    add_stage_arguments(parser)


def to_argv(args: argparse.Namespace) -> list[str]:
    """The pipeline argv for parsed CLI arguments plus the Beam options passed through."""
    return flags_argv(args, _CLI_FLAGS) + stage_argv(args) + list(getattr(args, "extra_args", []) or [])


def main(args: argparse.Namespace) -> int:
    return exit_code("audit", functools.partial(run_audit, progress="audit"), to_argv(args))
