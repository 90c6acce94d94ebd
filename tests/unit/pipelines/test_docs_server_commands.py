"""The documented commands that start a server run as written (marker `server`): `groundwatch serve`,
`groundwatch review --lake ./groundwatch-lake` and `groundwatch ui --lake lake --port 8000`, each started as a
user types it (the installed `groundwatch`, in a folder of its own, on the page's address), answering on the
address its page gives, and stopping on Ctrl-C with exit 0.

A page that assumes a lake (after `groundwatch demo`, or the page's audit and drift) gets one audited from the
first lines of the sample traffic, and drift-checked where the page's server shows drift.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from tests.unit.pipelines.test_cli_usage import _command
from tests.unit.test_docs_commands import ROOT, _commands

pytestmark = pytest.mark.server

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


@pytest.mark.parametrize(("page", "words", "lake", "url"), SERVERS, ids=[s[0] for s in SERVERS])
def test_a_documented_server_command_answers_where_its_page_says(page, words, lake, url, tmp_path):
    assert ["groundwatch", *words] in _commands(ROOT / page), f"{page} no longer documents it"
    if lake:
        _prepare(*lake, tmp_path)
    log = open(tmp_path / "server.log", "wb")
    process = subprocess.Popen([*_command(), *words], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    try:
        reply = _answers(url, process)
        assert reply.status_code == 200, reply.text[:2000]
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        log.close()
    assert code == 0, (tmp_path / "server.log").read_text(errors="replace")[-2000:]
