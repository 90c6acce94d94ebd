"""The verification service started for real (uvicorn on a free port, in a thread) and answers of each verdict.

with running_service(ServeConfig()) as base_url:
    httpx.post(f"{base_url}/v1/verify", json=verdict_message("contradicted"))
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import uvicorn

from pipelines.serving.app import ServeConfig, VerifyApp
from tests.support.audit_messages import message
from tests.support.ports import free_port

__all__ = ["ANSWERS", "free_port", "running_service", "verdict_message", "wait_until_healthy"]

ANSWERS = {
    # against audit_messages.EVIDENCE (doc 1: 50 mg of metoprolol twice daily on March 3, 2024; doc 2: potassium)
    "fully_grounded": "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024 [1].",
    "contradicted": "The patient was prescribed 80 mg of metoprolol twice daily on March 3, 2024 [1].",
    "ungrounded": "The hospital cafeteria serves vegan pizza every Friday afternoon.",
    "fabricated": "Potassium was 4.2 mmol/L on admission [7].",
}
"""Answers the heuristic judges fully grounded, contradicted, ungrounded, and one citing a passage that is not there."""


def verdict_message(kind: str, response_id: str | None = None) -> dict:
    """A logged response whose answer is `ANSWERS[kind]`."""
    return message(response_id or f"resp-{kind}", answer=ANSWERS[kind])


@contextlib.contextmanager
def running_service(config: ServeConfig, *, api_key: str | None = None):
    """The service on uvicorn in a background thread; yields its base URL and stops it afterwards."""
    app = VerifyApp(config, api_key=api_key)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="on", access_log=False, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def wait_until_healthy(base_url: str, process, timeout_s: float = 120.0) -> None:
    """Wait until a `groundwatch serve` started as `process` answers /healthz; raise if it exits or times out."""
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
