"""The harness that keeps the judge honest: ask, validate, re-ask with the errors, give up after three.

`judge_items(client, task, items)` splits the items into calls of
`answers_per_call` answers, sends up to `max_concurrency` calls at once, and
for each call runs the attempt loop: a reply is validated answer by answer
(`transforms.verify.judge.validate`); answers that pass are final, the others are
sent again with every problem stated, at most `max_attempts` (3) times in
all. What still fails is `judge_validation_failed`: it carries no verdict, so
the caller keeps its fallback verdict and routes the response to review.
Every attempt leaves one `JudgeCallRow` per answer for the `judge_calls` table.

HTTP failures are not handled here: `JudgeUnavailable` propagates so that
Beam's `RemoteModelHandler` retries the call with backoff (429, 5xx, timeouts)
or dead-letters it. `done` lets a retried batch skip calls that already
succeeded. `failed_outcome` is what an item gets when its call never got a
reply: `judge_error`, with one `judge_calls` row saying why (both the Beam path
and the in-process verifier use it).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from schemas.base import utc_now
from schemas.judge import JudgeCallRow
from transforms.verify.judge.client import JudgeClient
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.prompts import build_messages, prompt_version
from transforms.verify.judge.redact import redact_text
from transforms.verify.judge.schema import JudgeItem, JudgeOutcome, Task, reply_json_schema
from transforms.verify.judge.validate import REPLY, validate_reply

__all__ = ["chunk_items", "failed_outcome", "item_key", "judge_items"]

_VERDICT_FIELD = {
    Task.sentences: "sentence_verdicts",
    Task.citations: "citation_judgments",
    Task.claims: "claim_judgments",
}


def item_key(item: JudgeItem) -> str:
    """Identifies an item by content, so a re-sent batch can reuse what already came back."""
    digest = hashlib.sha256(item.model_dump_json().encode()).hexdigest()[:16]
    return f"{item.task.value}:{item.response_id}:{digest}"


def chunk_items(items: Sequence[JudgeItem], size: int) -> list[list[JudgeItem]]:
    """Groups of at most `size` items in arrival order; an answer id appears once per group."""
    chunks: list[list[JudgeItem]] = []
    for item in items:
        home = next((c for c in chunks if len(c) < size and all(i.response_id != item.response_id for i in c)), None)
        if home is None:
            chunks.append([item])
        else:
            home.append(item)
    return chunks


def failed_outcome(
    item: JudgeItem, config: JudgeConfig, error: str, now: datetime, *, answers_in_call: int = 1
) -> JudgeOutcome:
    """The `judge_error` outcome of an item whose judge call got no reply, with its `judge_calls` row (`error`:
    why, already free of the key; redacted like the rest of the row when the config says so)."""
    request = item.model_dump_json()
    row = JudgeCallRow(
        call_id=f"failed-{now.timestamp():.6f}-{item.response_id}",
        response_id=item.response_id,
        task=item.task.value,
        prompt_version=prompt_version(item.task),
        judge_model=config.model,
        judge_endpoint=config.endpoint,
        response_format=config.response_format,
        attempt=1,
        called_at=now,
        answers_in_call=answers_in_call,
        raw_reply="",
        parsed_verdicts="null",
        attempt_status="error",
        status="judge_error",
        error=redact_text(error) if config.redact else error,
        request_json=redact_text(request) if config.redact else request,
        redacted=config.redact,
    )
    return JudgeOutcome(
        response_id=item.response_id, task=item.task, status="judge_error", attempts=0, errors=[error], calls=[row]
    )


class _Log:
    """Builds the judge_calls rows of one chunk; statuses are filled in when the chunk is settled."""

    def __init__(self, client: JudgeClient, task: Task, redact: bool, clock: Callable[[], datetime]):
        self._client, self._task, self._redact, self._clock = client, task, redact, clock
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def _clean(self, text: str) -> str:
        text = self._client.scrub(text)
        return redact_text(text) if self._redact else text

    def record(self, attempt: int, items: Sequence[JudgeItem], reply: Any, validation: Any) -> None:
        call_id, called_at = uuid.uuid4().hex, self._clock()
        for item in items:
            rid = item.response_id
            errors = validation.errors.get(rid, []) + validation.errors.get(REPLY, [])
            self.rows.setdefault(rid, []).append(
                {
                    "call_id": call_id,
                    "response_id": rid,
                    "task": self._task.value,
                    "prompt_version": prompt_version(self._task),
                    "judge_model": self._client.config.model,
                    "judge_endpoint": self._client.config.endpoint,
                    "response_format": reply.response_format,
                    "attempt": attempt,
                    "called_at": called_at,
                    "latency_ms": reply.latency_ms,
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "total_tokens": reply.total_tokens,
                    "answers_in_call": len(items),
                    "raw_reply": self._clean(reply.text),
                    "parsed_verdicts": self._clean(json.dumps(validation.parsed.get(rid), ensure_ascii=False)),
                    "validation_errors": [self._clean(e) for e in errors],
                    "attempt_status": "invalid" if rid in validation.errors else "valid",
                    "request_json": self._clean(item.model_dump_json()),
                    "redacted": self._redact,
                }
            )

    def finish(self, rid: str, status: str) -> list[JudgeCallRow]:
        return [JudgeCallRow(**row, status=status) for row in self.rows.get(rid, [])]


def _judge_chunk(
    client: JudgeClient,
    task: Task,
    items: Sequence[JudgeItem],
    *,
    max_attempts: int,
    redact: bool,
    clock: Callable[[], datetime],
) -> list[JudgeOutcome]:
    log = _Log(client, task, redact, clock)
    schema = reply_json_schema(task)
    accepted: dict[str, list[BaseModel]] = {}
    last_errors: dict[str, list[str]] = {}
    pending = list(items)
    for attempt in range(1, max_attempts + 1):
        messages = build_messages(task, pending, errors=last_errors or None)
        reply = client.complete(messages, f"groundwatch_{task.value}_audit", schema)
        validation = validate_reply(task, reply.text, pending)
        log.record(attempt, pending, reply, validation)
        accepted.update(validation.accepted)
        last_errors = {rid: errs for rid, errs in validation.errors.items() if rid != REPLY}
        if validation.reply_errors:
            last_errors[REPLY] = validation.reply_errors
        pending = [i for i in pending if i.response_id not in validation.accepted]
        if not pending:
            break
    outcomes = []
    for item in items:
        rid = item.response_id
        attempts = len(log.rows.get(rid, []))
        if rid in accepted:
            outcome = JudgeOutcome(response_id=rid, task=task, status="judged", attempts=attempts)
            setattr(outcome, _VERDICT_FIELD[task], accepted[rid])
        else:
            errors = last_errors.get(rid, []) + last_errors.get(REPLY, [])
            outcome = JudgeOutcome(
                response_id=rid, task=task, status="judge_validation_failed", attempts=attempts, errors=errors
            )
        outcome.calls = log.finish(rid, outcome.status)
        outcomes.append(outcome)
    return outcomes


def judge_items(
    client: JudgeClient,
    task: Task,
    items: Sequence[JudgeItem],
    *,
    done: MutableMapping[str, JudgeOutcome] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> list[JudgeOutcome]:
    """One outcome per item, in order; raises `JudgeUnavailable` when a call got no reply at all."""
    config = client.config
    done = {} if done is None else done
    todo = [i for i in items if item_key(i) not in done]
    chunks = chunk_items(todo, config.answers_per_call)

    def run(chunk: list[JudgeItem]) -> None:
        outcomes = _judge_chunk(
            client, task, chunk, max_attempts=config.max_attempts, redact=config.redact, clock=clock
        )
        for item, outcome in zip(chunk, outcomes, strict=True):
            done[item_key(item)] = outcome

    if len(chunks) <= 1 or config.max_concurrency == 1:
        for chunk in chunks:
            run(chunk)
    else:
        with ThreadPoolExecutor(max_workers=min(config.max_concurrency, len(chunks))) as pool:
            futures = [pool.submit(run, chunk) for chunk in chunks]
            errors = [e for f in futures if (e := f.exception()) is not None]
        if errors:
            raise errors[0]
    return [done[item_key(i)] for i in items]
