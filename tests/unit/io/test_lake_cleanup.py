"""A run into the lake removes the temporary files that a killed writer left behind, and says how many."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from transforms.io.lake.cleanup import STALE_TEMP_SECONDS, remove_stale_temporaries

# A writer killed by SIGKILL between writing its temporary file and renaming it into place: os.replace is the
# rename, so the process dies there with the whole temporary file on disk.
_KILLED_WRITER = """
import os, signal, sys
from transforms.io.lake import writer
os.replace = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
writer.write_rows_file(sys.argv[1], "part-killed", "dead_letters", [])
"""


def _killed_writer_leftover(folder: Path) -> Path:
    before = set(folder.iterdir())
    run = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(folder)], capture_output=True)
    assert run.returncode == -9, run.stderr.decode()
    (leftover,) = [p for p in set(folder.iterdir()) - before if p.name.endswith(".tmp")]
    assert not list(folder.glob("*.parquet"))
    return leftover


def _another_leftover(leftover: Path) -> Path:
    """What a second killed writer leaves: the same bytes under its own name (one killed process shows the
    shape; each costs seconds of imports)."""
    stem = leftover.name.rsplit(".", 2)[0]  # ".part-killed"
    other = leftover.with_name(f"{stem}.{uuid.uuid4().hex}.tmp")
    shutil.copyfile(leftover, other)
    return other


def _age(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def test_only_the_writers_stale_temporaries_are_removed(tmp_path):
    folder = tmp_path / "responses" / "date=2026-11-29" / "hour=09"
    folder.mkdir(parents=True)
    stale = _killed_writer_leftover(folder)
    _age(stale, STALE_TEMP_SECONDS + 5)
    fresh = _another_leftover(stale)  # as a writer still running would have it
    published = folder / "part-0123.parquet"
    published.write_bytes(b"PAR1")
    foreign = folder / ".notes.tmp"  # not a name our writer makes
    foreign.write_text("x")
    _age(foreign, 3600)

    assert remove_stale_temporaries(str(tmp_path)) == 1
    assert not stale.exists()
    assert fresh.exists() and published.exists() and foreign.exists()
    assert remove_stale_temporaries(str(tmp_path / "missing")) == 0


def test_the_next_audit_into_the_lake_removes_what_a_killed_run_left(tmp_path, capsys):
    lake = tmp_path / "lake"
    folder = lake / "dead_letters" / "date=2026-11-29" / "hour=09"
    folder.mkdir(parents=True)
    first = _killed_writer_leftover(folder)
    leftovers = [first, _another_leftover(first)]
    for path in leftovers:
        _age(path, STALE_TEMP_SECONDS + 5)

    traffic = tmp_path / "traffic.jsonl"
    with open(sample_traffic_path(), "rb") as sample:
        traffic.write_bytes(b"".join(itertools.islice(sample, 5)))
    assert groundwatch(["audit", f"--input={traffic}", f"--lake={lake}"]) == 0
    assert "removed 2 temporary files that an interrupted run left in the lake" in capsys.readouterr().out
    assert not any(p.exists() for p in leftovers)
    assert not [p for p in lake.rglob("*") if p.name.endswith(".tmp")]
