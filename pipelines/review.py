"""`groundwatch review`: the review workbench. A web app over the lake, and the same labels from scripts.

    groundwatch review --lake ./groundwatch-lake [--port 8300] [--reviewer NAME]     # the web app
    groundwatch review label --lake L --response-id R --sentence N --label contradicted --reviewer NAME [--note ...]
    groundwatch review import --lake L FILE.jsonl [--reviewer NAME]
    groundwatch review export --lake L --golden OUT.jsonl [--tenant T]

The app binds to 127.0.0.1. Any other `--host` needs a token in GROUNDWATCH_REVIEW_TOKEN (environment only),
which every request must carry (`Authorization: Bearer ...` or the `gw_review_token` cookie the login sets).
The reviewer's name comes from `--reviewer`, or from the header an authenticating proxy sets
(`--reviewer-header`, e.g. X-Forwarded-User): see docs/review.md. Labels go to the lake's `reviews` table,
appended, never overwritten. Exit 2 with one line on bad input (an unknown response, sentence or label),
and nothing is written then.
"""

from __future__ import annotations

import argparse
import sys

from pipelines.options.common import LAKE_HELP, add_lake_argument
from pipelines.reviewing.actions import export_file, import_file, label_one
from pipelines.reviewing.serve import serve_app
from pipelines.reviewing.store import LABELS, Label

__all__ = ["add_arguments", "main"]

DEFAULT_PORT = 8300


def _lake_again(parser: argparse.ArgumentParser) -> None:
    """`--lake` also after the action (`review label --lake L`), leaving the one before it when not given."""
    parser.add_argument("--lake", default=argparse.SUPPRESS, help=LAKE_HELP)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_lake_argument(parser)
    parser.add_argument("--host", default="127.0.0.1", help="Address to bind. Default 127.0.0.1; others need a token.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"Port. Default {DEFAULT_PORT}.")
    parser.add_argument("--reviewer", default="", help="Reviewer name for every label given in this app.")
    parser.add_argument(
        "--reviewer-header", default="", help="Request header holding the reviewer name (set by a proxy)."
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    label = sub.add_parser("label", help="record one reviewer label")
    _lake_again(label)
    label.add_argument("--response-id", required=True, help="The response's response_id.")
    label.add_argument("--sentence", type=int, required=True, help="The sentence's sentence_index (from 0).")
    label.add_argument("--label", required=True, help=f"One of {', '.join(LABELS)}.")
    label.add_argument("--reviewer", dest="label_reviewer", metavar="NAME", required=True, help="Who gives the label.")
    label.add_argument("--note", default="", help="A note kept with the label.")
    imp = sub.add_parser("import", help="record the labels of a JSONL file, all or none")
    _lake_again(imp)
    imp.add_argument("file", help='JSONL: {"response_id", "sentence_index", "label", "reviewer"?, "note"?} a line.')
    imp.add_argument(
        "--reviewer", dest="label_reviewer", metavar="NAME", default="", help="Reviewer of lines naming none."
    )
    exp = sub.add_parser("export", help="write the reviewed sentences as a golden file (calibrate --golden)")
    _lake_again(exp)
    exp.add_argument("--golden", required=True, help="Output JSONL in the golden-file format.")
    exp.add_argument("--tenant", default=None, help="Only this tenant's reviews.")


def main(args: argparse.Namespace) -> int:
    if args.action == "label":
        label = Label(args.response_id, args.sentence, args.label, args.label_reviewer, args.note)
        code, line = label_one(args.lake, label)
    elif args.action == "import":
        code, line = import_file(args.lake, args.file, default_reviewer=args.label_reviewer)
    elif args.action == "export":
        code, line = export_file(args.lake, args.golden, tenant=args.tenant)
    else:
        code, line = serve_app(args)
    print(f"groundwatch review: {line}" if code else line, file=sys.stderr if code else sys.stdout)
    return code
