"""A small OpenAI-compatible HTTP server on 127.0.0.1 for the judge's tests and benchmark.

It implements `POST /v1/chat/completions` the way the `openai` SDK calls it and
answers with the SDK's response shape (choices, usage). Only the model's
behaviour is scripted: each test queues `Scripted` replies (content, HTTP
status, delay) that are served in order; when the queue is empty a
`responder(request) -> content` answers, by default one that writes a valid
sentence audit for whatever it was sent. Every request is recorded::

    with OpenAIServer() as server:
        server.script(Scripted(content="not json"), Scripted(status=429))
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OpenAIServer", "Scripted", "data_document", "grounded_reply"]

_BLOCK = re.compile(r"BEGIN UNTRUSTED DATA (\w+)\n(.*)\nEND UNTRUSTED DATA \1", re.DOTALL)


@dataclass
class Scripted:
    """One scripted turn: a reply body (or a function of the request), an HTTP status and a delay."""

    content: str | Callable[[dict[str, Any]], str] | None = None
    status: int = 200
    delay_s: float = 0.0
    error_message: str | None = None


def data_document(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON document between the untrusted-data boundaries of a judge request."""
    for message in request["messages"]:
        found = _BLOCK.search(message["content"])
        if found:
            return json.loads(found.group(2))
    raise ValueError("no untrusted data block in the request")


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def grounded_reply(request: dict[str, Any]) -> str:
    """A valid reply to any task: verdicts from word overlap, excerpts cut from the passages themselves."""
    document = data_document(request)
    answers = []
    for answer in document["answers"]:
        passages = [p for p in answer["passages"] if p["text"].strip()]
        if "sentences" in answer:
            verdicts = []
            for s in answer["sentences"]:
                best = max(passages, key=lambda p: len(_words(p["text"]) & _words(s["sentence_text"])), default=None)
                overlap = len(_words(best["text"]) & _words(s["sentence_text"])) if best else 0
                grounded = overlap >= max(2, len(_words(s["sentence_text"])) // 2)
                verdicts.append(
                    {
                        "sentence_index": s["sentence_index"],
                        "sentence_text": s["sentence_text"],
                        "attribution_verdict": "fully_grounded" if grounded else "ungrounded",
                        "confidence": 0.9 if grounded else 0.8,
                        "supporting_evidence_ids": [best["evidence_id"]] if grounded else [],
                        "supporting_evidence_excerpts": [best["text"][:40]] if grounded else [],
                        "unsupported_spans": [],
                        "contradicting_evidence_ids": [],
                        "contradicting_evidence_excerpts": [],
                        "multi_source_flag": False,
                        "provenance_notes": "",
                    }
                )
            answers.append({"answer_id": answer["answer_id"], "sentences": verdicts})
        elif "citations" in answer:
            ids = {p["evidence_id"]: p["text"] for p in answer["passages"]}
            results = []
            for c in answer["citations"]:
                exists = c["cited_evidence_id"] in ids
                results.append(
                    {
                        "citation_id": c["citation_id"],
                        "claim_support_level": "SUPPORTS" if exists else "UNRELATED",
                        "contextual_fidelity_issues": [],
                        "overall_verdict": "PASS" if exists else "FAIL",
                        "verification_status": "accurate" if exists else "fabricated",
                        "source_text_excerpt": ids[c["cited_evidence_id"]][:40] if exists else "",
                        "auditor_notes": "scripted",
                    }
                )
            answers.append({"answer_id": answer["answer_id"], "audit_results": results})
        else:
            claims = []
            for c in answer["claims"]:
                first = passages[0] if passages else None
                claims.append(
                    {
                        "claim_index": c["claim_index"],
                        "attribution_verdict": "fully_grounded" if first else "ungrounded",
                        "confidence": 0.85,
                        "supporting_evidence_ids": [first["evidence_id"]] if first else [],
                        "supporting_evidence_excerpts": [first["text"][:40]] if first else [],
                        "notes": "scripted",
                    }
                )
            answers.append({"answer_id": answer["answer_id"], "claims": claims})
    return json.dumps({"answers": answers})


class OpenAIServer:
    """A threaded HTTP server speaking the chat-completions route; use as a context manager."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], str] = grounded_reply,
        *,
        latency_s: float = 0.0,
        reject_json_schema: bool = False,
    ):
        self.responder = responder
        self.latency_s = latency_s
        self.reject_json_schema = reject_json_schema
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def script(self, *turns: Scripted) -> None:
        with self._lock:
            self._script.extend(turns)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self) -> Scripted:
        with self._lock:
            if self._script:
                return self._script.popleft()
        return Scripted(delay_s=self.latency_s)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as two writes; do not wait for an ACK

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                with server._lock:
                    server.requests.append(request)
                    server.headers.append(dict(self.headers))
                fmt = (request.get("response_format") or {}).get("type")
                if server.reject_json_schema and fmt == "json_schema":
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "response_format json_schema is not supported",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                turn = server._next()
                if turn.delay_s:
                    time.sleep(turn.delay_s)
                if turn.status != 200:
                    message = turn.error_message or f"scripted status {turn.status}"
                    self._send(turn.status, {"error": {"message": message, "type": "scripted"}})
                    return
                content = turn.content if turn.content is not None else server.responder
                text = content(request) if callable(content) else content
                prompt_tokens = sum(len(m["content"]) for m in request["messages"]) // 4
                completion_tokens = max(1, len(text) // 4)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": request.get("model", "scripted"),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                        },
                    },
                )

        return Handler
