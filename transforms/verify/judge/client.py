"""The judge's HTTP client: the `openai` SDK pointed at any OpenAI-compatible endpoint.

`JudgeClient(config)` reads the API key from the environment (never from a flag
or the config), sends one chat-completions call per `complete()` and turns the
SDK's errors into `JudgeUnavailable`, whose `retryable` tells Beam's retry loop
whether to try again (429, 5xx, timeouts, lost connections) or to give up and
dead-letter the batch (other 4xx). Its message says what happened, naming the
endpoint (never the key): "the judge at URL refused the connection" (`refused`:
nothing listens there), "did not answer within N s", "answered HTTP 503: ...".
Structured output degrades by itself: if
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
    """A judge call that produced no reply; `retryable` when a later attempt may succeed, `refused` when the
    endpoint refused the connection at once (nothing listens at its address)."""

    def __init__(self, message: str, *, retryable: bool, status_code: int | None = None, refused: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.status_code = status_code
        self.refused = refused


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
                where, limit = self.config.endpoint, self.config.timeout_s
                message = f"judge call timed out: the judge at {where} did not answer within {limit:g} s"
                raise JudgeUnavailable(message, retryable=True) from None
            except self._openai.APIConnectionError as err:
                raise self._unreachable(err) from None
            except self._openai.APIStatusError as err:
                retryable = err.status_code == 429 or err.status_code >= 500
                message = self.scrub(_describe(err))
                raise JudgeUnavailable(message, retryable=retryable, status_code=err.status_code) from None

    def _unreachable(self, err: Exception) -> JudgeUnavailable:
        """The SDK's bare "Connection error." as what happened underneath: refused, or the socket's own error."""
        where = self.config.endpoint  # scheme, host, port, path: no user info, no query string
        cause = _root_cause(err)
        if isinstance(cause, ConnectionRefusedError):
            message = f"the judge at {where} refused the connection (nothing listens there?)"
            return JudgeUnavailable(message, retryable=True, refused=True)
        detail = " ".join(str(cause).split())[:200] or type(cause).__name__
        return JudgeUnavailable(self.scrub(f"the judge at {where} could not be reached: {detail}"), retryable=True)

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


def _root_cause(err: BaseException) -> BaseException:
    # openai wraps httpx's ConnectError, which wraps httpcore's, which wraps the socket's OSError.
    seen = {id(err)}
    while (inner := err.__cause__ or err.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        err = inner
    return err


def _describe(err: Any) -> str:
    # The SDK's message is the server's error text; it never carries the request's Authorization header.
    message = str(getattr(err, "message", "") or err)
    return f"judge endpoint answered HTTP {err.status_code}: {message[:300]}"
