"""The judge's HTTP client: the `openai` SDK pointed at any OpenAI-compatible endpoint.

`JudgeClient(config)` reads the API key from the environment (never from a flag
or the config), sends one chat-completions call per `complete()` and turns the
SDK's errors into `JudgeUnavailable`, whose `retryable` tells Beam's retry loop
whether to try again (429, 5xx, timeouts, lost connections) or to give up and
dead-letter the batch (other 4xx). Structured output degrades by itself: if
the endpoint rejects a `json_schema` response format with a 400, the client
retries the same call with `json_object`, then with plain text, and keeps using
what worked; in those modes the schema travels inside the prompt instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transforms.verify.judge.config import JudgeConfig, ResponseFormat
from transforms.verify.judge.prompts import schema_instructions

__all__ = ["ChatReply", "JudgeClient", "JudgeUnavailable", "resolve_api_key"]

_LOG = logging.getLogger(__name__)
_NO_KEY = "no-key"  # local servers (vLLM, Ollama, LM Studio) ignore the key, but the SDK insists on one
_FALLBACK: dict[ResponseFormat, ResponseFormat] = {"json_schema": "json_object", "json_object": "text"}


class JudgeUnavailable(RuntimeError):
    """A judge call that produced no reply; `retryable` when a later attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool, status_code: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code


@dataclass(frozen=True)
class ChatReply:
    """What one call returned: the reply text and what it cost."""

    text: str
    latency_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    response_format: str
    model: str


def resolve_api_key(env_vars: Sequence[str]) -> str | None:
    """The first non-empty key among the environment variables, or None."""
    for name in env_vars:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


class JudgeClient:
    """One openai client per worker, with the endpoint's structured-output support remembered."""

    def __init__(self, config: JudgeConfig):
        import httpx
        import openai

        self.config = config
        key = resolve_api_key(config.api_key_env)
        if key is None:
            _LOG.info("no judge API key in %s; sending a placeholder", ", ".join(config.api_key_env))
        # Retries belong to Beam's RemoteModelHandler (backoff + throttling), so the SDK must not retry too.
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=key or _NO_KEY,
            timeout=config.timeout_s,
            max_retries=0,
            http_client=httpx.Client(
                timeout=config.timeout_s,
                limits=httpx.Limits(
                    max_connections=config.max_concurrency, max_keepalive_connections=config.max_concurrency
                ),
            ),
        )
        self._openai = openai
        self._key = key if key and len(key) >= 8 else None
        self._mode: ResponseFormat = config.response_format
        self._slots = threading.BoundedSemaphore(config.max_concurrency)

    def __repr__(self) -> str:
        return f"JudgeClient(endpoint={self.config.endpoint!r}, model={self.config.model!r})"

    @property
    def response_format(self) -> ResponseFormat:
        return self._mode

    def scrub(self, text: str) -> str:
        """The text with the API key masked, for anything stored: a server could echo the key back."""
        return text.replace(self._key, "[API_KEY]") if self._key and self._key in text else text

    def close(self) -> None:
        self._client.close()

    def complete(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any]) -> ChatReply:
        """Send one chat-completions call; falls back to weaker response formats on a 400."""
        while True:
            mode = self._mode
            try:
                return self._call(messages, schema_name, schema, mode)
            except self._openai.BadRequestError as err:
                if mode not in _FALLBACK:
                    raise JudgeUnavailable(self.scrub(_describe(err)), retryable=False, status_code=400) from None
                _LOG.warning("judge endpoint rejected response_format=%s (HTTP 400); trying %s", mode, _FALLBACK[mode])
                self._mode = _FALLBACK[mode]
            except self._openai.APITimeoutError:
                raise JudgeUnavailable(f"judge call timed out after {self.config.timeout_s}s", retryable=True) from None
            except self._openai.APIConnectionError as err:
                raise JudgeUnavailable(f"judge endpoint unreachable: {type(err).__name__}", retryable=True) from None
            except self._openai.APIStatusError as err:
                retryable = err.status_code == 429 or err.status_code >= 500
                message = self.scrub(_describe(err))
                raise JudgeUnavailable(message, retryable=retryable, status_code=err.status_code) from None

    def _call(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any], mode: str) -> ChatReply:
        kwargs: dict[str, Any] = {"model": self.config.model, "temperature": self.config.temperature}
        if self.config.max_tokens is not None:
            kwargs["max_tokens"] = self.config.max_tokens
        if mode == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        else:
            messages = [*messages, {"role": "system", "content": schema_instructions(schema)}]
            if mode == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
        with self._slots:
            started = time.perf_counter()
            completion = self._client.chat.completions.create(messages=messages, **kwargs)
            latency_ms = (time.perf_counter() - started) * 1000.0
        text = ""
        if completion.choices and completion.choices[0].message is not None:
            text = completion.choices[0].message.content or ""
        usage = completion.usage
        return ChatReply(
            text=text,
            latency_ms=latency_ms,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            total_tokens=getattr(usage, "total_tokens", None),
            response_format=mode,
            model=completion.model or self.config.model,
        )


def _describe(err: Any) -> str:
    # The SDK's message is the server's error text; it never carries the request's Authorization header.
    message = str(getattr(err, "message", "") or err)
    return f"judge endpoint answered HTTP {err.status_code}: {message[:300]}"
