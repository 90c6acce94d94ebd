"""The review web app: a Starlette application over a lake, with Jinja2 pages and plain form posts.

    app = review_app(ReviewConfig(lake="./groundwatch-lake", reviewer="ana"))   # serve with uvicorn
    TestClient(app).get("/queue?tenant=acme")                                     # or test in process

Routes: `/queue` (filters as query parameters: tenant, risk, reason, verifier_version, since, until, status,
page), `/response/{id}?t=EVENT_TIME` (the response page), `POST /response/{id}/review` (one label per claim
sentence, then on to the next open response), `/next?id=&t=&rank=` (the open response after that one in
queue order), `/login?token=...` (sets the token cookie). With a token set,
every other request needs it (`Authorization: Bearer TOKEN`, or the cookie). The reviewer is `reviewer`
when set, else the value of the header `reviewer_header` (an authenticating proxy's), else the name typed
into the page (remembered in a cookie).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from pipelines.reviewing.page import VERDICT_KEYS, response_view
from pipelines.reviewing.queries import (
    LakeSession,
    QueueFilters,
    load_response,
    next_in_queue,
    queue,
    reason_choices,
)
from pipelines.reviewing.store import LABELS, Label, ReviewInputError, append_reviews, review_rows

__all__ = ["TOKEN_COOKIE", "ReviewConfig", "review_app"]

TOKEN_COOKIE = "gw_review_token"
_REVIEWER_COOKIE = "gw_reviewer"
_FILTERS = ("tenant", "risk", "reason", "verifier_version", "since", "until", "status")


@dataclass(frozen=True)
class ReviewConfig:
    """How the app runs: its lake, the token it demands (None: none), and where the reviewer's name comes from."""

    lake: str
    token: str | None = None
    reviewer: str = ""
    reviewer_header: str = ""

    def no_reviewer(self) -> str:
        """What a reviewer who gave no name is told: the proxy's header is missing, or the name field is empty."""
        if self.reviewer_header:
            return f"no reviewer: the request has no {self.reviewer_header} header (the proxy in front sets it)"
        return "no reviewer: type your name in the reviewer field"


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "+"))
    except ValueError:
        return None


def _filters(request: Request) -> QueueFilters:
    q = request.query_params
    page = q.get("page", "0")
    return QueueFilters(
        tenant=q.get("tenant", ""),
        risk=q.get("risk", ""),
        reason=q.get("reason", ""),
        verifier_version=q.get("verifier_version", ""),
        since=_time(q.get("since")),
        until=_time(q.get("until")),
        status=q.get("status", "open") or "open",
        page=int(page) if page.isdigit() else 0,
    )


class _TokenMiddleware(BaseHTTPMiddleware):
    def __init__(self, app, token: str):
        super().__init__(app)
        self._token = token

    async def dispatch(self, request, call_next):
        if request.url.path == "/login":
            return await call_next(request)
        given = request.cookies.get(TOKEN_COOKIE, "")
        header = request.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            given = header[7:].strip()
        if not hmac.compare_digest(given.encode(), self._token.encode()):
            return PlainTextResponse("a review token is required: open /login?token=... first", status_code=401)
        return await call_next(request)


def review_app(config: ReviewConfig, *, session: LakeSession | None = None) -> Starlette:
    """The app over `config.lake`."""
    lake = session or LakeSession(config.lake)
    templates = Jinja2Templates(directory=str(resources.files("pipelines.reviewing") / "templates"))

    def reviewer_of(request: Request, typed: str = "") -> str:
        if config.reviewer:
            return config.reviewer
        if config.reviewer_header:
            return request.headers.get(config.reviewer_header, "").strip()
        return typed.strip() or request.cookies.get(_REVIEWER_COOKIE, "")

    def queue_page(request: Request) -> Response:
        for bound in ("since", "until"):  # a filter that cannot be read is said, not dropped
            text = request.query_params.get(bound, "").strip()
            if text and _time(text) is None:
                example = "2026-11-29T09:00 (UTC), or with a zone: 2026-11-29T09:00+01:00"
                return PlainTextResponse(f"{bound}={text!r} is not a time: give one such as {example}", 400)
        f = _filters(request)
        page = queue(lake.cursor(), f)
        kept = {name: request.query_params.get(name, "") for name in _FILTERS if request.query_params.get(name)}
        context = {
            "page": page,
            "filters": f,
            "kept": kept,
            "query": urlencode(kept),
            "reasons": reason_choices(),
            "saved": request.query_params.get("saved", ""),
        }
        return templates.TemplateResponse(request, "queue.html", context)

    def response_page(request: Request) -> Response:
        response_id = request.path_params["response_id"]
        loaded = load_response(lake.cursor(), response_id, _time(request.query_params.get("t")))
        if loaded is None:
            return PlainTextResponse(f"no response {response_id!r} in the lake", status_code=404)
        context = {
            **response_view(loaded),
            "reviewer": reviewer_of(request),
            "reviewer_fixed": bool(config.reviewer or config.reviewer_header),
            "back": request.query_params.get("back", ""),
            "labels_all": LABELS,
        }
        return templates.TemplateResponse(request, "response.html", context)

    async def submit(request: Request) -> Response:
        response_id = request.path_params["response_id"]
        form = await request.form()
        reviewer = reviewer_of(request, str(form.get("reviewer", "")))
        labels = [
            Label(response_id, int(key[6:]), str(value), reviewer, str(form.get(f"note-{key[6:]}", "")))
            for key, value in form.multi_items()
            if key.startswith("label-") and key[6:].isdigit()
        ]
        try:
            if not labels:
                raise ReviewInputError("no sentence labelled")
            if not reviewer.strip():
                raise ReviewInputError(config.no_reviewer())
            rows = review_rows(lake.cursor(), labels, source="web", near=_time(str(form.get("t", ""))))
        except ReviewInputError as e:
            return PlainTextResponse(f"not recorded: {e}", status_code=400)
        await run_in_threadpool(append_reviews, lake.lake, rows)  # a file, and its window's metrics again
        lake.refresh_reviews()
        back = str(form.get("back", ""))
        anchor: dict[str, Any] = {
            "response_id": response_id,
            "event_time": _time(str(form.get("t", ""))),
            "risk_rank": 0,
        }
        rank = str(form.get("rank", ""))
        anchor["risk_rank"] = int(rank) if rank.isdigit() else 0
        following = next_in_queue(lake.cursor(), anchor) if anchor["event_time"] else None
        if form.get("then") == "next" and following:
            target = f"/response/{following[0]}?" + urlencode({"t": following[1].isoformat(), "back": back})
        else:
            target = "/queue?" + (back + "&" if back else "") + urlencode({"saved": response_id})
        redirect = RedirectResponse(target, status_code=303)
        if not config.reviewer and not config.reviewer_header:
            redirect.set_cookie(_REVIEWER_COOKIE, reviewer, httponly=True, samesite="strict")
        return redirect

    def next_page(request: Request) -> Response:
        q = request.query_params
        rank = q.get("rank", "0")
        anchor: dict[str, Any] = {
            "response_id": q.get("id", ""),
            "event_time": _time(q.get("t")),
            "risk_rank": int(rank) if rank.isdigit() else 0,
        }
        following = next_in_queue(lake.cursor(), anchor) if anchor["event_time"] else None
        back = q.get("back", "")
        if following is None:
            return RedirectResponse("/queue?" + back, status_code=303)
        return RedirectResponse(
            f"/response/{following[0]}?" + urlencode({"t": following[1].isoformat(), "back": back}), status_code=303
        )

    def login(request: Request) -> Response:
        given = request.query_params.get("token", "")
        if config.token and not hmac.compare_digest(given.encode(), config.token.encode()):
            return PlainTextResponse("wrong token", status_code=401)
        redirect = RedirectResponse("/queue", status_code=303)
        if config.token:
            redirect.set_cookie(TOKEN_COOKIE, config.token, httponly=True, samesite="strict")
        return redirect

    routes = [
        Route("/", lambda request: RedirectResponse("/queue")),
        Route("/queue", queue_page),
        Route("/login", login),
        Route("/next", next_page),
        Route("/response/{response_id:path}/review", submit, methods=["POST"]),
        Route("/response/{response_id:path}", response_page),
    ]
    middleware = [Middleware(_TokenMiddleware, token=config.token)] if config.token else []
    app = Starlette(routes=routes, middleware=middleware)
    app.state.verdict_keys = VERDICT_KEYS
    return app
