"""The review workbench in a real browser: Debian's chromium driven through chromedriver (Selenium).

Starts `groundwatch review` on a small audited lake, walks the queue with the keyboard, opens the high-risk
response, corrects one sentence's verdict, adds a note and submits; then the `reviews` table has the row,
`calibrate --from-lake` reads it, and the window's agreement metrics count it. Screenshots of both pages go to
`test-output/`.
Needs `scripts/install-chromium.sh` and Debian's chromium-driver, and selenium (the `test` extra).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from tests.support.ports import free_port
from tests.support.review_lake import build_lake

pytestmark = pytest.mark.browser

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
OUTPUT = Path(__file__).resolve().parents[3] / "test-output"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    return build_lake(str(tmp_path_factory.mktemp("review-browser") / "lake"))


@pytest.fixture(scope="module")
def app(lake):
    """`groundwatch review` serving the lake on 127.0.0.1; yields its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GROUNDWATCH_REVIEW_TOKEN", None)
    command = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "review",
        "--lake",
        lake,
        "--port",
        str(port),
        "--reviewer",
        "ana",
    ]
    process = subprocess.Popen(command, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a readiness wait, not a speed check
        while True:
            try:
                with urllib.request.urlopen(f"{base}/queue", timeout=5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("groundwatch review did not come up") from None
                time.sleep(0.5)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        pytest.fail("chromium and chromium-driver are not installed: run scripts/install-chromium.sh")

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1800", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(10)
    yield driver
    driver.quit()


def test_a_reviewer_corrects_a_verdict_in_the_browser(app, lake, browser, tmp_path, capsys):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    def press(*keys):
        browser.find_element(By.TAG_NAME, "body").send_keys(*keys)

    def arrive(part):
        WebDriverWait(browser, 30).until(lambda d: part in d.current_url)

    OUTPUT.mkdir(exist_ok=True)
    browser.get(f"{app}/queue")
    assert "Review queue" in browser.title
    rows = browser.find_elements(By.CSS_SELECTOR, "tr.item")
    assert [r.find_element(By.TAG_NAME, "a").text for r in rows][:1] == ["r-high"]
    browser.save_screenshot(str(OUTPUT / "review-queue.png"))
    press(Keys.ENTER)  # the first row is selected: Enter opens it
    arrive("/response/r-high")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("r-high")
    browser.save_screenshot(str(OUTPUT / "review-response.png"))

    first = browser.find_element(By.ID, "s0")
    assert first.find_element(By.CSS_SELECTOR, "input[value=contradicted]").is_selected()
    assert first.find_elements(By.CSS_SELECTOR, "mark.contradicts")  # the evidence, highlighted in its passage
    press("2")  # sentence 0 has focus: set partially grounded
    assert first.find_element(By.CSS_SELECTOR, "input[value=partially_grounded]").is_selected()
    assert first.find_element(By.CSS_SELECTOR, ".changed").is_displayed()
    press("e")  # into the note
    browser.switch_to.active_element.send_keys("the dose is 50 mg in kb-1", Keys.ESCAPE)
    press("s")  # submit
    arrive("/queue")
    assert "Saved the review of" in browser.find_element(By.CLASS_NAME, "flash").text

    rows = connect_lake(lake).sql("SELECT sentence_index, label, verifier_verdict, reviewer, note, source FROM reviews")
    labels = {r[0]: r[1:] for r in rows.fetchall()}
    assert labels[0] == ("partially_grounded", "contradicted", "ana", "the dose is 50 mg in kb-1", "web")
    assert labels[1][0] == labels[1][1]  # sentence 1 confirmed as the verifier had it
    assert groundwatch(["calibrate", "--from-lake", lake]) == 0
    assert "2 reviewed sentences" in capsys.readouterr().out
    # ... and in the agreement metrics of the response's window, with no other step: one of two agreed.
    agreement = connect_lake(lake).sql(
        "SELECT reviewed_sentences, review_agreement FROM window_metrics WHERE slice_value = 'clinic'"
    )
    assert agreement.fetchall() == [(2, 0.5)]
