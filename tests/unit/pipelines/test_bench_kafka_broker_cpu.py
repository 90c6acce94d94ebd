"""`scripts/bench_kafka.py` counts the broker's CPU beside the monitor's: over the run when its process lives
from start to end, and says why not otherwise, instead of a figure from half a run or from nothing."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.scripts import load_script

bench = load_script("bench_kafka")


def test_the_broker_spent_is_the_difference_of_two_readings():
    assert bench._broker_spent(1.25, 3.75) == 2.5


def test_a_reading_that_lacks_the_broker_leaves_it_uncounted():
    assert bench._broker_spent(None, 3.0) is None
    assert bench._broker_spent(1.0, None) is None


def test_no_broker_found_says_it_was_not_counted_and_why():
    figure = bench._broker_figure(set(), None, 1000)
    assert figure.startswith("not counted (no process of this user listens")


def test_a_live_broker_gets_seconds_per_response_and_its_name():
    figure = bench._broker_figure({os.getpid()}, 1.5, 500)
    assert figure.startswith("1.5 s = 3.00 ms per response (process ")
    assert f"{os.getpid()} (" in figure


def test_a_broker_that_ended_mid_run_names_its_process_instead_of_a_figure():
    """A real process, read before and after it ended, as a run reads the broker."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        before = bench.pids_cpu({child.pid})
        assert before is not None
    finally:
        child.kill()
        child.wait()
    spent = bench._broker_spent(before, bench.pids_cpu({child.pid}))
    assert spent is None
    figure = bench._broker_figure({child.pid}, spent, 1000)
    assert figure == f"not counted (its process {child.pid} ended during the run)"
