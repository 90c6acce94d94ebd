"""Configuration of the LLM judge: which endpoint, which model, how hard to push it.

A `JudgeConfig` is plain data that pickles into a Beam graph, so it never holds
the API key: only the names of the environment variables the key is read from,
on the worker, when the client is built (`transforms.verify.judge.client`)::

    config = JudgeConfig(base_url="http://127.0.0.1:8000/v1", model="qwen2.5-7b-instruct")
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator

from schemas.base import StrictModel

__all__ = ["API_KEY_ENV_VARS", "JudgeConfig", "ResponseFormat", "endpoint_name"]

API_KEY_ENV_VARS = ("GROUNDWATCH_JUDGE_API_KEY", "OPENAI_API_KEY")
"""Where the key is looked for, first match wins; never a flag, never a file in the repo."""

ResponseFormat = Literal["json_schema", "json_object", "text"]


def endpoint_name(base_url: str) -> str:
    """The endpoint as it may be logged: scheme, host, port and path; user info and query string dropped."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


class JudgeConfig(StrictModel):
    """How to reach an OpenAI-compatible chat-completions endpoint and how to use it."""

    base_url: str
    """Root of the OpenAI-compatible API, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`."""
    model: str = Field(min_length=1)
    """Model name as the endpoint knows it."""
    api_key_env: tuple[str, ...] = API_KEY_ENV_VARS
    """Environment variables tried in order for the key; a local server without auth needs none."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Seconds one HTTP call may take before it counts as failed (and is retried by Beam)."""
    max_concurrency: int = Field(default=4, ge=1, le=256)
    """Judge calls in flight at once per worker."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature; 0 keeps verdicts as repeatable as the endpoint allows."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Upper bound on reply tokens; None leaves it to the endpoint."""
    response_format: ResponseFormat = "json_schema"
    """`json_schema` sends the reply schema; an endpoint that answers 400 to it drops to `text` (schema in prompt)."""
    answers_per_call: int = Field(default=8, ge=1, le=256)
    """How many answers share one call (1 = no batching); each keeps its answer_id and sentence_index."""
    max_attempts: int = Field(default=3, ge=1, le=3)
    """Attempts per answer when replies fail validation; the third failure escalates to review."""
    num_retries: int = Field(default=3, ge=0, le=10)
    """Beam's retries of a call that failed with 429, 5xx, a timeout or a lost connection."""
    redact: bool = False
    """Mask e-mail addresses, phone numbers and ID-like numbers in what the judge log stores."""
    sample_rate: float = Field(default=1.0, ge=0.0, le=1.0)
    """Fraction of responses (by a hash of the response id) whose sentences may go to the judge."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).hostname:
            raise ValueError(f"--judge-base-url must be an http(s) URL, got {value!r}")
        return value

    @property
    def endpoint(self) -> str:
        """The base URL without anything secret in it, for logs and the lake."""
        return endpoint_name(self.base_url)
