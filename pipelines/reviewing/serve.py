"""Serving the review app: the address and token rules, then uvicorn.

    code, line = serve_app(args)   # args: lake, host, port, reviewer, reviewer_header

The queue reads a rollup that `groundwatch compact` writes per hour; an hour not compacted is aggregated from
its rows when the app first sees its files and held in memory (`pipelines.reviewing.queries.LakeSession`), so
at start the app says how many hours of `responses` are not compacted when more than `UNCOMPACTED_HOURS_OK`
are (`uncompacted_hours`): they cost start-up time and memory.

The app binds to 127.0.0.1 by default. Any other address needs a token in the environment variable
GROUNDWATCH_REVIEW_TOKEN (never a flag: flags show in `ps` and shell history); when the variable is set the
token is demanded on 127.0.0.1 too. The token is never printed or logged.
"""

from __future__ import annotations

import os
from typing import Any

from pipelines.options.common import UsageError, check_port_free
from pipelines.reviewing.actions import check_lake
from pipelines.reviewing.store import ReviewInputError
from transforms.io.lake.reader import is_clean, partitions, table_files

__all__ = ["LOOPBACK", "TOKEN_VARIABLE", "UNCOMPACTED_HOURS_OK", "app_token", "serve_app", "uncompacted_hours"]

UNCOMPACTED_HOURS_OK = 2
"""Hours a lake written to right now has not compacted yet (the current one, the last): no advice below this."""

TOKEN_VARIABLE = "GROUNDWATCH_REVIEW_TOKEN"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def app_token(host: str, environ: dict[str, str] | None = None) -> str | None:
    """The token the app demands on `host` (None: none); ReviewInputError when `host` needs one and none is set."""
    token = (environ if environ is not None else os.environ).get(TOKEN_VARIABLE, "").strip() or None
    if host not in LOOPBACK and token is None:
        raise ReviewInputError(f"--host {host}: binding beyond 127.0.0.1 needs a token in {TOKEN_VARIABLE}")
    return token


def uncompacted_hours(lake: str) -> tuple[int, int]:
    """How many hour partitions of `responses` are not clean (several files, or none compacted), of how many."""
    hours = partitions(table_files(lake, "responses")).values()
    return sum(not is_clean(files) for files in hours), len(hours)


def serve_app(args: Any) -> tuple[int, str]:
    """Check the lake and the address, then serve until stopped."""
    try:
        check_lake(args.lake)
        token = app_token(args.host)
    except ReviewInputError as e:
        return 2, str(e)
    if args.reviewer and args.reviewer_header:
        return 2, "--reviewer and --reviewer-header: give one"
    try:
        check_port_free(args.host, args.port)  # before the URL is printed as if the app had started
    except UsageError as e:
        return 2, str(e)
    import uvicorn

    from pipelines.reviewing.app import ReviewConfig, review_app  # kept lazy: start-up (the web app)

    config = ReviewConfig(args.lake, token=token, reviewer=args.reviewer, reviewer_header=args.reviewer_header)
    app = review_app(config)
    where = f"http://{args.host}:{args.port}/{'login?token=...' if token else 'queue'}"
    print(f"groundwatch review: {where}  (lake {args.lake}; Ctrl-C stops)", flush=True)
    raw, hours = uncompacted_hours(args.lake)
    if raw > UNCOMPACTED_HOURS_OK:
        print(
            f"groundwatch review: {raw} of {hours} hours of responses are not compacted; the queue aggregates "
            f"them at start and holds them in memory (seconds on a large lake): run groundwatch compact "
            f"--lake {args.lake}",
            flush=True,
        )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0, "stopped"
