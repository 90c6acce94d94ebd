"""What the review app reads from the lake: the queue, one response with everything a reviewer needs.

    con = LakeSession(lake)                                   # views made once, refreshed on a timer
    page = queue(con.cursor(), QueueFilters(tenant="acme"))   # items, total, counts per facet
    response = load_response(con.cursor(), "r-1", event_time)

The queue is the responses routed to review (`needs_review`), filtered by tenant, risk, reason kind
(`dashboards.review_reasons`), verifier version and event time, ordered by risk (high first), then by event
time (oldest first: a queue is served in arrival order), then by id. A response link carries its `event_time`
so that loading it reads only its hour's files (the lake prunes partitions on the time column).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from dashboards.review_reasons import KIND_PATTERNS, REASON_KINDS
from dashboards.views import connect_lake, create_views
from pipelines.reviewing.store import create_latest_view

__all__ = [
    "PAGE_SIZE",
    "REASON_COUNT_HEAD",
    "LakeSession",
    "QueueFilters",
    "QueuePage",
    "load_response",
    "next_in_queue",
    "queue",
    "reason_patterns",
]

PAGE_SIZE = 50
_REFRESH_SECONDS = 30.0
_REASONS_TEXT = "array_to_string(review_reasons, chr(10))"
"""A response's reasons as one text, one a line: a reason kind's pattern (`^...`, multi-line) finds its lines."""
_RISK_RANK = "CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END"


def reason_patterns() -> dict[str, str]:
    """Each reason kind a reviewer can filter by and its pattern (every kind of `REASON_KINDS` but `other`)."""
    return {kind: KIND_PATTERNS[kind] for kind in REASON_KINDS if kind in KIND_PATTERNS}


class LakeSession:
    """One DuckDB connection with the lake's views, made again when older than `refresh_seconds` (new audits)
    and at once after reviews are appended (`refresh_reviews`). Requests take a `cursor()` of their own."""

    def __init__(self, lake: str, *, refresh_seconds: float = _REFRESH_SECONDS):
        self.lake, self._refresh = lake, refresh_seconds
        self._lock = threading.Lock()
        self._con = self._connect()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        con = connect_lake(self.lake)
        create_latest_view(con)
        self._made = time.monotonic()
        return con

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            if time.monotonic() - self._made > self._refresh:
                self._con = self._connect()
            return self._con.cursor()

    def refresh_reviews(self) -> None:
        with self._lock:
            create_views(self._con, self.lake, ["reviews"])
            create_latest_view(self._con)


@dataclass(frozen=True)
class QueueFilters:
    """The queue's filters; empty means any."""

    tenant: str = ""
    risk: str = ""
    reason: str = ""
    verifier_version: str = ""
    since: datetime | None = None
    until: datetime | None = None
    status: str = "open"
    """`open` (some claim sentence without a label), `reviewed`, or `all`."""
    page: int = 0


@dataclass
class QueuePage:
    """One page of the queue, how many match, and the counts behind each filter's choices."""

    items: list[dict[str, Any]]
    total: int
    counts: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


_BASE = f"""
WITH labelled AS (SELECT response_id, count(*) AS labelled FROM reviews_latest GROUP BY 1),
q AS (
    SELECT r.response_id, r.event_time, r.tenant, r.risk_level, r.verifier_version, r.review_reasons,
           r.overall_faithfulness_score, r.sentence_count, r.critical_flag_count, {_RISK_RANK} AS risk_rank,
           coalesce(l.labelled, 0) AS labelled, l.labelled IS NOT NULL AS reviewed
    FROM responses r LEFT JOIN labelled l USING (response_id)
    WHERE r.needs_review
)
"""
"""The responses in review, each with how many of its sentences carry a label; `reviewed` once any does (the
app labels every claim sentence of a response in one submission)."""


def _where(f: QueueFilters) -> tuple[str, dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for name, column in (("tenant", "tenant"), ("risk", "risk_level"), ("verifier_version", "verifier_version")):
        if getattr(f, name):
            clauses.append(f"{column} = ${name}")
            params[name] = getattr(f, name)
    if f.reason:
        clauses.append(f"regexp_matches({_REASONS_TEXT}, $reason)")
        params["reason"] = "(?m)" + KIND_PATTERNS.get(f.reason, "^$")
    if f.since:
        clauses.append("event_time >= $since")
        params["since"] = f.since
    if f.until:
        clauses.append("event_time < $until")
        params["until"] = f.until
    if f.status in ("open", "reviewed"):
        clauses.append("reviewed" if f.status == "reviewed" else "NOT reviewed")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def queue(con: duckdb.DuckDBPyConnection, f: QueueFilters, *, page_size: int = PAGE_SIZE) -> QueuePage:
    """The page `f.page` of the queue under `f`, its total, and the counts per facet (`_facets`).

    The page is found on short columns first (the order's and the filters'), and only its rows' long ones
    (the review reasons) are read after: sorting the reasons of the whole queue along cost more than all else."""
    where, params = _where(f)
    order = "ORDER BY risk_rank, event_time, response_id"
    picked = f"""{_BASE} SELECT response_id, event_time FROM q {where}
        {order} LIMIT {int(page_size)} OFFSET {int(f.page) * int(page_size)}"""
    keys = con.execute(picked, params).fetchall()
    items: list[dict[str, Any]] = []
    if keys:
        times = [t for _, t in keys]
        rows = f"""{_BASE} SELECT * FROM q WHERE response_id IN (SELECT unnest($ids))
            AND event_time BETWEEN $first AND $last {order}"""
        cursor = con.execute(rows, {"ids": [k for k, _ in keys], "first": min(times), "last": max(times)})
        names = [d[0] for d in cursor.description]
        items = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    total, counts = _facets(con, f)
    return QueuePage(items, total, counts)


REASON_COUNT_HEAD = 5_000
"""Reason counts are taken over at most this many responses at the head of the queue: reasons are long text,
and classifying every one of a queue of hundreds of thousands would take the page seconds."""


def _facets(con: duckdb.DuckDBPyConnection, f: QueueFilters) -> tuple[int, dict[str, list[tuple[str, int]]]]:
    """How many responses the queue holds under `f`, and per facet (tenant, risk, verifier version) each value
    and how many of them have it, in one scan of short columns; and per reason kind, how many of the first
    `REASON_COUNT_HEAD` have a reason of that kind (a response in review for two reasons counts for both)."""
    where, params = _where(f)
    sql = f"""{_BASE} SELECT grouping(tenant, risk_level, verifier_version), tenant, risk_level, verifier_version,
        count(*) FROM q {where} GROUP BY GROUPING SETS ((tenant), (risk_level), (verifier_version), ())"""
    counts: dict[str, list[tuple[str, int]]] = {"tenant": [], "risk": [], "verifier_version": [], "reason": []}
    total = 0
    for grouping, tenant, risk, version, n in con.execute(sql, params).fetchall():
        if grouping == 0b011:
            counts["tenant"].append((tenant, n))
        elif grouping == 0b101:
            counts["risk"].append((risk, n))
        elif grouping == 0b110:
            counts["verifier_version"].append((version, n))
        else:
            total = n
    kinds = reason_patterns()
    by_kind = ", ".join(f"count_if(regexp_matches(reasons, '(?m){p}'))" for p in kinds.values())
    head = f"""{_BASE}, head AS (SELECT {_REASONS_TEXT} AS reasons FROM q {where}
        ORDER BY risk_rank, event_time, response_id LIMIT {REASON_COUNT_HEAD}) SELECT {by_kind} FROM head"""
    found = con.execute(head, params).fetchall()[0]
    counts["reason"] = [(kind, n) for kind, n in zip(kinds, found, strict=True) if n]
    for values in counts.values():
        values.sort(key=lambda item: (-item[1], str(item[0])))
    return total, counts


def next_in_queue(con: duckdb.DuckDBPyConnection, after: dict[str, Any]) -> tuple[str, datetime] | None:
    """The open response that follows `after` (a queue item) in queue order, as (id, event_time)."""
    sql = f"""{_BASE} SELECT response_id, event_time FROM q WHERE NOT reviewed
        AND (risk_rank, event_time, response_id) > ($rank, $time, $id)
        ORDER BY risk_rank, event_time, response_id LIMIT 1"""
    row = con.execute(sql, {"rank": after["risk_rank"], "time": after["event_time"], "id": after["response_id"]})
    found = row.fetchone()
    return (found[0], found[1]) if found else None


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: dict) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def load_response(con: duckdb.DuckDBPyConnection, response_id: str, when: datetime | None) -> dict[str, Any] | None:
    """Everything the response page shows: the response, its sentences, passages, citations, claims and
    latest labels; None when the lake has no such response. `when`: its event time, to read one hour only."""
    at = " AND event_time = $when" if when is not None else ""
    params: dict[str, Any] = {"id": response_id, **({"when": when} if when is not None else {})}
    found = _rows(con, f"SELECT *, {_RISK_RANK} AS risk_rank FROM responses WHERE response_id = $id{at}", params)
    if not found:
        return None
    response = found[0]
    params = {"id": response_id, "when": response["event_time"]}
    one = " WHERE response_id = $id AND event_time = $when"
    hour = "date_trunc('hour', CAST($when AS TIMESTAMPTZ))"
    passages = _rows(
        con,
        f"SELECT passage_sha256, any_value(content) AS content FROM passages WHERE partition_hour = {hour}"
        " AND passage_sha256 IN (SELECT unnest($hashes)) GROUP BY 1",
        {"when": response["event_time"], "hashes": list(response.get("evidence_sha256") or [])},
    )
    return {
        "response": response,
        "sentences": _rows(con, f"SELECT * FROM sentences{one} ORDER BY sentence_index", params),
        "citations": _rows(con, f"SELECT * FROM citations{one} ORDER BY citation_index", params),
        "claims": _rows(con, f"SELECT * FROM claims{one} ORDER BY claim_index", params),
        "passages": {p["passage_sha256"]: p["content"] for p in passages},
        "labels": {
            r["sentence_index"]: r
            for r in _rows(con, "SELECT * FROM reviews_latest WHERE response_id = $id", {"id": response_id})
        },
    }
