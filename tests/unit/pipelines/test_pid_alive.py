"""Whether a process the local clusters started still runs (`scripts/maven_libs.py`, what `stop` waits on): a
zombie has ended, whoever its parent is. A broker's or TaskManager's JVM outlives the command that started it,
so its zombie belongs to init, which in a container may never reap it."""

from __future__ import annotations

import subprocess
import sys

from tests.support.kafka_fixtures import wait_for
from tests.support.scripts import load_script

maven_libs = load_script("maven_libs")

# A parent that forks a child which exits at once, and never reaps it: the child stays a zombie of another process.
_UNREAPED = "import os, time\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nprint(pid, flush=True)\ntime.sleep(60)"


def test_a_zombie_of_another_process_has_ended_and_its_living_parent_runs():
    parent = subprocess.Popen([sys.executable, "-c", _UNREAPED], stdout=subprocess.PIPE, text=True)
    try:
        zombie = int(parent.stdout.readline())
        wait_for(lambda: maven_libs.process_state(zombie) == "Z", timeout_s=10, every_s=0.05, what="the child's exit")
        assert not maven_libs.pid_alive(zombie)
        assert maven_libs.pid_alive(parent.pid)
    finally:
        parent.kill()
        parent.wait()
    assert not maven_libs.pid_alive(parent.pid)
