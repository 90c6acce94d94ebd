"""The dashboards in a real browser: `groundwatch ui` on demo data and the HTML report, in headless Chromium.

Needs Debian's chromium (`scripts/install-chromium.sh`); screenshots go to `test-output/`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from pipelines.cli import main as groundwatch
from pipelines.reporting.drift_demo import DEMO_PROJECT, DEMO_SPEC
from tests.support.ports import free_port

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
OUTPUT = Path(__file__).resolve().parents[3] / "test-output"
PANELS = (
    "Open incidents",
    "Alerts firing",
    "Review queue by tenant",
    "Review queue by reason",
    "Mean attribution confidence by generator_model",
    "Responses audited (last window)",
    "Mean attribution confidence and its reference band",
    "Drift test p-value (K-S)",
    "Attribution coverage and low-confidence claim rates",
    "Verdict shares",
    "Alerts",
    "Mean attribution confidence by retriever_version",
)


def _chromium(*args: str) -> subprocess.CompletedProcess:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail("chromium is not installed: run scripts/install-chromium.sh")
    with tempfile.TemporaryDirectory(prefix="gw-chromium-") as profile:
        command = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--window-size=1400,3800", "--virtual-time-budget=30000",
            # The charts animate their lines in; without this a screenshot catches them before they are drawn.
            "--force-prefers-reduced-motion", *args,
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)


@pytest.fixture(scope="module")
def demo(demo_lake):
    """A lake made by `groundwatch demo` (sample traffic, then the regression scenario with drift), once per
    session (`tests.support.scenario_lakes.demo_lake`)."""
    return demo_lake.lake


@pytest.fixture(scope="module")
def ui(demo):
    """`groundwatch ui` serving the demo lake; yields its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "ui", "--lake", demo, "--port", str(port)],
        start_new_session=True,  # its own process group: the UI server it starts stops with it
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # a readiness wait, not a speed check: the server is slow on a busy box
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/projects", timeout=5) as response:
                    json.load(response)
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("groundwatch ui did not come up") from None
                time.sleep(1)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_demo_writes_its_alerts_and_incident_into_its_own_lake(demo):
    for table in ("alerts", "incidents"):
        folder = Path(demo) / table
        assert folder.is_dir() and any(folder.rglob("*.parquet")), table


def test_dashboard_renders_the_project_and_its_panels_with_data(ui):
    with urllib.request.urlopen(f"{ui}/api/projects", timeout=30) as response:
        projects = {p["name"]: p["id"] for p in json.load(response)}
    assert DEMO_PROJECT in projects
    url = f"{ui}/projects/{projects[DEMO_PROJECT]}"
    dom = _chromium("--dump-dom", url).stdout
    for title in PANELS:
        assert title in dom, f"panel {title!r} did not render"
    # Data, not empty frames: a marker per window on the line charts, bars for shares and alerts.
    assert dom.count("MuiMarkElement") >= DEMO_SPEC.windows
    assert dom.count("MuiBarElement") >= DEMO_SPEC.windows
    assert dom.count("MuiLineElement") >= 5
    counter = re.sub(r"<[^>]+>", " ", dom[dom.index("Responses audited (last window)") :])
    assert int(counter.split()[4]) > 0, counter[:200]
    incidents = re.sub(r"<[^>]+>", " ", dom[dom.index("Open incidents") :]).split()
    assert incidents[2] == "1", incidents[:6]  # the regression's one incident, on the counter
    # The K-S panel names its slice, once per series (a threshold per window used to draw each metric 5 times).
    ks_panel = dom[dom.index("Drift test p-value (K-S)") : dom.index("Attribution coverage and low-confidence")]
    ks = re.sub(r"<[^>]+>", " ", ks_panel)
    assert ks.count("all traffic: faithfulness") == 1, ks[:600]

    OUTPUT.mkdir(exist_ok=True)
    shot = OUTPUT / "dashboard.png"
    shot.unlink(missing_ok=True)
    _chromium(f"--screenshot={shot}", url)
    assert shot.stat().st_size > 50_000
    print(f"dashboard screenshot: {shot}")


def test_html_report_renders_offline(demo):
    OUTPUT.mkdir(exist_ok=True)
    report = OUTPUT / "report.html"
    # The demo's own lake: its alerts and incident are there, not in a lake of their own.
    assert groundwatch(["report", "--lake", demo, "--out", str(report)]) == 0
    dom = _chromium("--dump-dom", report.as_uri()).stdout
    assert "groundwatch report" in dom and "responses audited" in dom
    assert dom.count("data:image/png;base64") >= 4  # the charts
    incidents = dom[dom.index("<h2>Open incidents</h2>") : dom.index("<h2>Alerts</h2>")]
    assert incidents.count("<tr>") == 2 and "retriever_version=r9" in incidents and "firing" in incidents
    alerts = dom[dom.index("<h2>Alerts</h2>") : dom.index("<h2>Review queue by tenant and reason</h2>")]
    assert "r9" in alerts and "firing" in alerts
    queue = dom[dom.index("<h2>Review queue by tenant and reason</h2>") : dom.index("<h2>Worst slices by confidence")]
    assert "contradicted sentence" in queue and "st-marys" in queue
    worst = dom[dom.index("<h2>Worst slices by confidence") : dom.index("<h2>Over time</h2>")]
    first_row = worst[worst.index("<td>") :].split("</tr>")[0]
    assert "retriever_version=r9" in first_row  # the regressed retriever is the worst slice
    assert "<iframe" in dom and "Evidently" in dom
    shot = OUTPUT / "report.png"
    shot.unlink(missing_ok=True)
    _chromium(f"--screenshot={shot}", report.as_uri())
    assert shot.stat().st_size > 50_000
    print(f"report screenshot: {shot}")
