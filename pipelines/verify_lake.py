"""`groundwatch verify-lake`: prove that no file of the lake was changed, removed or added behind its back.

    groundwatch verify-lake --lake ./groundwatch-lake
    groundwatch verify-lake --lake s3://bucket/lake --expect-head 41:9f86d0...   # the head kept elsewhere
    groundwatch verify-lake --lake ./groundwatch-lake --print-head               # prints SEQ:SHA256
    GROUNDWATCH_LAKE_HMAC_KEY=... groundwatch verify-lake --lake ./groundwatch-lake   # signatures checked too

It replays the lake's manifest (`transforms.io.lake.manifest`: one hash-chained entry per publish) and checks
every file against it (`transforms.io.lake.manifest_check`). Exit 0 when the chain is unbroken (and signed,
with the key) and every listed file is present with its size and SHA-256 and no data file is unlisted; exit 1
with one line per modified, missing or foreign file and per break of the chain; exit 2 on bad usage.
Temporary files of a stopped writer, an interrupted publish and files left by an interrupted compaction are
notes, not failures. `--sample F` and `--since T` hash fewer files (every file's presence and size are still
checked). `--lineage` prints, for each file compaction wrote, the files of the audits its rows came from.
"""

from __future__ import annotations

import argparse
import sys

from pipelines.options.common import add_lake_argument, existing_lake, exits_2_on_usage_error, iso_time
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import hmac_key
from transforms.io.lake.manifest_check import head_text, lineage, parse_head, replay, verify_lake

__all__ = ["add_arguments", "main"]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def _head(text: str) -> tuple[int, str]:
    try:
        return parse_head(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument(
        "--print-head",
        action="store_true",
        help="Check the chain only and print its head (SEQ:SHA256) to keep outside the lake. Default: off.",
    )
    parser.add_argument(
        "--expect-head",
        type=_head,
        metavar="SEQ:SHA256",
        help="Fail unless the chain extends this head (one --print-head printed earlier). Default: none.",
    )
    hashing = parser.add_mutually_exclusive_group()
    hashing.add_argument(
        "--sample",
        type=_fraction,
        metavar="F",
        help="Hash a random fraction F in (0, 1] of the files (sizes of all are checked). Default: hash all.",
    )
    hashing.add_argument(
        "--since",
        type=iso_time,
        help="Hash only files listed at or after this time (ISO 8601, e.g. 2026-11-29T09:00Z). Default: all.",
    )
    parser.add_argument(
        "--lineage",
        action="store_true",
        help="Also print, for each file compaction wrote, the files whose rows it holds. Default: off.",
    )


@exits_2_on_usage_error("verify-lake")
def main(args: argparse.Namespace) -> int:
    lake = lakefs.normalize(existing_lake(args.lake))
    if args.print_head:
        return _print_head(lake)
    report = verify_lake(lake, key=hmac_key(), sample=args.sample, since=args.since, expect_head=args.expect_head)
    for line in report.problems:
        print(line)
    for line in report.notes:
        print(f"note: {line}")
    if args.lineage:
        _print_lineage(lake)
    verdict = "unaltered" if not report.problems else f"{len(report.problems)} problems"
    print(
        f"{lake}: {report.entries} entries, {report.files} files ({report.hashed} hashed); head {report.head}; "
        f"{verdict}"
    )
    return 1 if report.problems else 0


def _print_head(lake: str) -> int:
    state = replay(lake, hmac_key())
    for line in state.breaks:
        print(f"break: {line}", file=sys.stderr)
    head = head_text(state.head)
    if head is None:
        print(f"groundwatch verify-lake: {lake} has no manifest yet", file=sys.stderr)
        return 1
    print(head)
    return 1 if state.breaks else 0


def _print_lineage(lake: str) -> None:
    state = replay(lake, hmac_key())
    for path, (_, seq) in sorted(state.current.items()):
        sources = lineage(state, path)
        if not sources:
            continue
        described = ", ".join(f"{p} (entry {s}, {_origin(state, s)})" for p, s in sources)
        print(f"lineage: {path} (entry {seq}) holds the rows of {len(sources)} files: {described}")


def _origin(state, seq: int) -> str:
    body = state.entries[seq].body
    return f"{body.get('command')} run {str(body.get('run_id'))[:12]}"
