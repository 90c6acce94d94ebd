"""`groundwatch report`: a standalone HTML report of the audit lake for a period.

    groundwatch report --lake ./groundwatch-lake [--from 2026-11-29T09:00Z] [--to 2026-11-29T10:00Z] --out report.html

The page holds the period's headline figures, its alerts, charts of mean attribution confidence
with its reference band, drift p-values, verdict shares and claim rates, a table of retriever
versions, and an Evidently drift report of the period, all in one file that opens offline
(`dashboards.report`). Run `groundwatch drift` first for the reference band and the alerts.
Exit codes: 0 written, 2 bad usage or a lake without window metrics.
"""

from __future__ import annotations

import argparse
import sys

from dashboards.report import REPORT_STEPS, build_report
from pipelines.options.common import add_lake_argument, existing_lake, exits_2_on_usage_error, iso_time
from pipelines.runner.progress import Progress

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument(
        "--from", dest="start", type=iso_time, help="Period start, ISO 8601 (default: the first window)."
    )
    parser.add_argument("--to", dest="end", type=iso_time, help="Period end, exclusive, ISO 8601 (default: the last).")
    parser.add_argument(
        "--out", default="groundwatch-report.html", help="Output HTML file. Default groundwatch-report.html."
    )


@exits_2_on_usage_error("report")
def main(args: argparse.Namespace) -> int:
    existing_lake(args.lake)
    if args.start and args.end and args.start >= args.end:
        print("groundwatch report: --from must be before --to", file=sys.stderr)
        return 2
    try:
        with Progress("report", total=REPORT_STEPS, unit="steps") as progress:
            page = build_report(args.lake, args.start, args.end, advance=progress.advance)
    except ValueError as error:
        print(f"groundwatch report: {error}", file=sys.stderr)
        return 2
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(page)
    print(f"groundwatch report: wrote {args.out} ({len(page) // 1024} KiB)")
    return 0
