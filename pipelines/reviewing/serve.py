"""Serving the review app: the address and token rules, then uvicorn.

    code, line = serve_app(args)   # args: lake, host, port, reviewer, reviewer_header

The app binds to 127.0.0.1 by default. Any other address needs a token in the environment variable
GROUNDWATCH_REVIEW_TOKEN (never a flag: flags show in `ps` and shell history); when the variable is set the
token is demanded on 127.0.0.1 too. The token is never printed or logged.
"""

from __future__ import annotations

import os
from typing import Any

from pipelines.reviewing.actions import check_lake
from pipelines.reviewing.store import ReviewInputError

__all__ = ["LOOPBACK", "TOKEN_VARIABLE", "app_token", "serve_app"]

TOKEN_VARIABLE = "GROUNDWATCH_REVIEW_TOKEN"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def app_token(host: str, environ: dict[str, str] | None = None) -> str | None:
    """The token the app demands on `host` (None: none); ReviewInputError when `host` needs one and none is set."""
    token = (environ if environ is not None else os.environ).get(TOKEN_VARIABLE, "").strip() or None
    if host not in LOOPBACK and token is None:
        raise ReviewInputError(f"--host {host}: binding beyond 127.0.0.1 needs a token in {TOKEN_VARIABLE}")
    return token


def serve_app(args: Any) -> tuple[int, str]:
    """Check the lake and the address, then serve until stopped."""
    try:
        check_lake(args.lake)
        token = app_token(args.host)
    except ReviewInputError as e:
        return 2, str(e)
    if args.reviewer and args.reviewer_header:
        return 2, "--reviewer and --reviewer-header: give one"
    import uvicorn

    from pipelines.reviewing.app import ReviewConfig, review_app  # kept lazy: start-up (the web app)

    config = ReviewConfig(args.lake, token=token, reviewer=args.reviewer, reviewer_header=args.reviewer_header)
    app = review_app(config)
    where = f"http://{args.host}:{args.port}/{'login?token=...' if token else 'queue'}"
    print(f"groundwatch review: {where}  (lake {args.lake}; Ctrl-C stops)", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0, "stopped"
