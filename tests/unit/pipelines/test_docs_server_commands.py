"""The documented commands that start a server run as written (marker `server`): `groundwatch serve`,
`groundwatch review --lake ./groundwatch-lake` and `groundwatch ui --lake lake --port 8000`, each started as a
user types it (the installed `groundwatch`, in a folder of its own, on the page's address), answering on the
address its page gives, and stopping on Ctrl-C with exit 0, even when started with SIGINT ignored (as a script's
background job starts it).

A page that assumes a lake (after `groundwatch demo`, or the page's audit and drift) gets one audited from the
first lines of the sample traffic, and drift-checked where the page's server shows drift.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from tests.support.audit_messages import message
from tests.support.documented import ROOT, commands
from tests.support.model_answers import MODEL_SURE
from tests.support.openai_server import OpenAIServer
from tests.unit.pipelines.test_cli_usage import _command

pytestmark = pytest.mark.server

DOCUMENTED_JUDGE = "http://127.0.0.1:8000/v1"

SERVERS = [
    # page, the command's words after `groundwatch`, the lake to prepare (drift-checked?), the page's address
    ("docs/serve-and-gate.md", ["serve"], None, "http://127.0.0.1:8321/healthz"),
    ("docs/review.md", ["review", "--lake", "./groundwatch-lake"], ("./groundwatch-lake", False),
     "http://127.0.0.1:8300/queue"),
    ("docs/drift-and-dashboards.md", ["ui", "--lake", "lake", "--port", "8000"], ("lake", True),
     "http://127.0.0.1:8000/"),
]  # fmt: skip


def _prepare(lake: str, drift: bool, folder: Path) -> None:
    traffic = folder / "traffic.jsonl"
    with open(sample_traffic_path(), "rb") as sample:
        traffic.write_bytes(b"".join(sample.readlines()[:60]))
    assert groundwatch(["audit", "--input", str(traffic), "--lake", str(folder / lake)]) == 0
    if drift:
        assert groundwatch(["drift", "--lake", str(folder / lake), "--min-responses", "5"]) == 0


def _answers(url: str, process: subprocess.Popen, timeout_s: float = 120.0) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return httpx.get(url, timeout=5, follow_redirects=True)
        except httpx.TransportError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _ignores_sigint(pid: int) -> bool | None:
    """Whether process `pid` ignores SIGINT (its `SigIgn` mask; a process started with SIGINT ignored keeps
    ignoring it, and Python then installs no KeyboardInterrupt handler); None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            mask = next(line.split()[1] for line in status if line.startswith("SigIgn:"))
    except (OSError, StopIteration):
        return None
    return bool(int(mask, 16) & (1 << (signal.SIGINT - 1)))


def _stopped_by_ctrl_c(process: subprocess.Popen, log: Path) -> int:
    """Send the server SIGINT, as Ctrl-C does, and return its exit status. One that is still running 60 s later
    is killed with its children (its session), so that it holds no port for the tests after it, and the test
    fails saying whether it ignored SIGINT."""
    ignored = _ignores_sigint(process.pid)
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        tail = log.read_text(errors="replace")[-2000:]
        pytest.fail(f"the server did not stop within 60 s of SIGINT (SIGINT ignored: {ignored}); its log:\n{tail}")


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(("page", "words", "lake", "url"), SERVERS, ids=[s[0] for s in SERVERS])
def test_a_documented_server_command_answers_where_its_page_says(page, words, lake, url, tmp_path):
    """Each server starts with SIGINT ignored, as a background job of a non-interactive shell (a script, a CI
    runner) starts it, where Python installs no KeyboardInterrupt: Ctrl-C must stop it all the same (uvicorn sets
    its own handler in `serve` and `review`; `ui`, a parent waiting on Evidently's server, sets Python's). A
    terminal's Ctrl-C reaches a server started with SIGINT at its default through the same handlers."""
    assert ["groundwatch", *words] in commands(ROOT / page), f"{page} no longer documents it"
    if lake:
        _prepare(*lake, tmp_path)
    log = open(tmp_path / "server.log", "wb")
    process = subprocess.Popen(
        [*_command(), *words],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_sigint_ignored,
    )
    try:
        reply = _answers(url, process)
        assert reply.status_code == 200, reply.text[:2000]
    finally:
        code = _stopped_by_ctrl_c(process, tmp_path / "server.log")
        log.close()
    assert code == 0, (tmp_path / "server.log").read_text(errors="replace")[-2000:]


def test_the_documented_cascade_server_asks_the_judge_where_the_heuristic_is_unsure(tmp_path):
    """serve-and-gate.md's `serve --verifier cascade --judge-base-url http://127.0.0.1:8000/v1 ...`, with the
    page's judge replaced by an OpenAI-compatible server whose replies are scripted: a sentence inside the
    cascade's band reaches the judge, which decides it."""
    cascade = [c for c in commands(ROOT / "docs" / "serve-and-gate.md") if c[1] == "serve" and "cascade" in c]
    assert len(cascade) == 1, "serve-and-gate.md no longer documents the cascade server"
    with OpenAIServer() as judge:
        words = [judge.base_url if word == DOCUMENTED_JUDGE else word for word in cascade[0][1:]]
        assert words != cascade[0][1:]  # the page's judge address was there to replace
        log = open(tmp_path / "server.log", "wb")
        env = {**os.environ, "GROUNDWATCH_JUDGE_API_KEY": "test-key"}  # the page: the key from the environment
        process = subprocess.Popen(
            [*_command(), *words], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            assert _answers("http://127.0.0.1:8321/healthz", process).status_code == 200
            unsure = message("r-judge", answer=MODEL_SURE)  # heuristic confidence 0.55: inside (0.5, 0.8)
            reply = httpx.post("http://127.0.0.1:8321/v1/verify", json=unsure, timeout=60)
        finally:
            code = _stopped_by_ctrl_c(process, tmp_path / "server.log")
            log.close()
        assert reply.status_code == 200, reply.text[:2000]
        assert judge.requests and "openai" in reply.json()["decided_by"]
    assert code == 0, (tmp_path / "server.log").read_text(errors="replace")[-2000:]
