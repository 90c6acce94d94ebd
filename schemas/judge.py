"""The `judge_calls` table: one row per answer per judge call attempt, the judge's audit trail.

A call that batches several answers gives one row per answer, all sharing the
call's `call_id`, latency and token counts. `status` is the final outcome for
that answer and task (`judged`, `judge_validation_failed` or `judge_error`),
`attempt_status` the outcome of this attempt. `request_json` holds what the
judge was asked (redacted when redaction is on), so `groundwatch replay` can ask
again. The endpoint is stored without user info or query string; the API key is
never stored.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from schemas.base import StrictModel
from schemas.lake import register_table

__all__ = ["JUDGE_STATUSES", "JudgeCallRow"]

JUDGE_STATUSES = ("judged", "judge_validation_failed", "judge_error")


class JudgeCallRow(StrictModel):
    """One answer's share of one judge call: what was asked, what came back, whether it held up."""

    call_id: str
    response_id: str
    task: str
    prompt_version: str
    judge_model: str
    judge_endpoint: str
    response_format: str
    attempt: int = Field(ge=1, le=3)
    called_at: datetime
    latency_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    answers_in_call: int = Field(ge=1)
    raw_reply: str
    parsed_verdicts: str
    validation_errors: list[str] = Field(default_factory=list)
    attempt_status: str
    status: str
    error: str | None = None
    request_json: str
    redacted: bool = False


register_table(
    "judge_calls",
    JudgeCallRow,
    time_column="called_at",
    key=("call_id", "response_id", "task"),
    version_column="called_at",
)
