"""The lake's manifest in use: every command's publish is chained, `groundwatch verify-lake` passes on a clean
lake after audit, compact, metrics and drift, and what is not tampering (a lake older than its manifest, a
writer killed mid-publish, temporary files, two writers at once) is never a false alarm.
"""

from __future__ import annotations

import glob
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from tests.support.scripts import load_script
from transforms.io.lake.cleanup import remove_stale_temporaries
from transforms.io.lake.manifest import DISABLE_VARIABLE, HMAC_VARIABLE, MANIFEST_FOLDER
from transforms.io.lake.manifest_check import parse_head
from transforms.io.lake.writer import file_stem, write_rows_file

bench = load_script("bench_lake")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _entries(lake: str) -> list[dict]:
    bodies = []
    for path in sorted(glob.glob(os.path.join(lake, MANIFEST_FOLDER, "*.json"))):
        with open(path, "rb") as f:
            bodies.append(json.loads(f.read())["body"])
    return bodies


def _verify(lake: str, capsys, *flags: str) -> tuple[int, str]:
    capsys.readouterr()
    code = groundwatch(["verify-lake", "--lake", lake, *flags])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture(scope="module")
def audited_lake(tmp_path_factory) -> str:
    """A lake audited from the first 80 lines of the sample traffic (several windows, every table)."""
    folder = tmp_path_factory.mktemp("audited")
    with open(sample_traffic_path(), "rb") as f:
        (folder / "in.jsonl").write_bytes(b"".join(f.readlines()[:80]))
    lake = str(folder / "lake")
    assert groundwatch(["audit", "--input", str(folder / "in.jsonl"), "--lake", lake]) == 0
    return lake


@pytest.mark.scenario  # drift over the audited windows: tens of seconds
def test_a_lake_verifies_after_audit_compact_metrics_and_drift(audited_lake, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    shutil.copytree(audited_lake, lake)
    code, out = _verify(lake, capsys)
    assert code == 0 and out.rstrip().endswith("unaltered"), out
    for command in (
        ["compact", "--lake", lake],
        ["metrics", "--lake", lake],
        ["drift", "--lake", lake, "--min-responses", "5", "--no-workspace"],
        ["compact", "--lake", lake],
    ):
        assert groundwatch(command) == 0
        code, out = _verify(lake, capsys)
        assert code == 0 and "problems" not in out, (command, out)
    entries = _entries(lake)
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    assert {"audit", "compact", "metrics", "drift"} <= {e["command"] for e in entries}
    audit = [e for e in entries if e["command"] == "audit"]
    assert len({e["run_id"] for e in audit}) == 1
    assert any(e["verifier_versions"] for e in audit)  # the rows' verifier versions are recorded
    compaction = [e for e in entries if e["kind"] == "replace" and e["files"]]
    assert compaction and all(e["replaced"] for e in compaction)
    tables = {f["table"] for e in entries for f in e["files"]}
    assert {"responses", "sentences", "window_metrics", "drift_checks"} <= tables
    code, out = _verify(lake, capsys, "--lineage")
    assert code == 0 and "lineage: sentences/" in out and "audit run" in out


def test_exit_codes_and_lines(audited_lake, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    shutil.copytree(audited_lake, lake)
    code, head = _verify(lake, capsys, "--print-head")
    assert code == 0 and parse_head(head)[0] == len(_entries(lake)) - 1
    assert _verify(lake, capsys, "--expect-head", head.strip())[0] == 0
    victim = sorted(glob.glob(os.path.join(lake, "sentences", "**", "*.parquet"), recursive=True))[0]
    with open(victim, "ab") as f:
        f.write(b"x")
    code, out = _verify(lake, capsys)
    assert code == 1
    assert out.splitlines()[0].startswith(f"modified: {os.path.relpath(victim, lake)} (")
    assert out.rstrip().endswith("1 problems")
    assert _verify(lake, capsys, "--sample", "0.5")[0] == 1  # every file's size is checked whatever the sample

    for flags, reason in [
        (["--expect-head", "nothing"], "not a head"),
        (["--sample", "0"], "must be in (0, 1]"),
        (["--sample", "0.5", "--since", "2026-11-29T00:00Z"], "not allowed with"),
        (["--since", "yesterday"], "not an ISO 8601 time"),
    ]:
        code, out = _verify(lake, capsys, *flags)
        assert code == 2 and reason in out and len(out.strip().splitlines()) == 1, out
    code, out = _verify(str(tmp_path / "nowhere"), capsys)
    assert code == 2 and out.startswith(f"groundwatch verify-lake: --lake {tmp_path / 'nowhere'} does not exist")


def _write(lake: str, table: str, label: str, rows: int = 3, hour: int = 0) -> str:
    source = sorted(glob.glob(os.path.join(_BENCH_LAKE[0], table, "**", "*.parquet"), recursive=True))[hour]
    folder = os.path.dirname(os.path.join(lake, os.path.relpath(source, _BENCH_LAKE[0])))
    return write_rows_file(folder, file_stem(table, label), table, pq.read_table(source).slice(0, rows))


_BENCH_LAKE: list[str] = []


@pytest.fixture(scope="module", autouse=True)
def bench_rows(tmp_path_factory):
    """Rows of every table to write (the benchmark's synthetic ones), written without a manifest."""
    lake = str(tmp_path_factory.mktemp("rows") / "lake")
    os.environ[DISABLE_VARIABLE] = "off"
    try:
        bench.build_lake(lake, 200, duplicates=0.0, sentences_per_hour=100)
    finally:
        del os.environ[DISABLE_VARIABLE]
    _BENCH_LAKE[:] = [lake]
    return lake


def test_a_lake_older_than_its_manifest_is_never_a_false_alarm(bench_rows, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    shutil.copytree(bench_rows, lake)
    code, out = _verify(lake, capsys)
    assert code == 0 and "note: no manifest: the lake's 16 files were written before it kept one" in out
    _write(lake, "claims", "after")
    first = _entries(lake)[0]
    assert first["kind"] == "baseline" and len(first["files"]) == 16 and len(_entries(lake)) == 2
    code, out = _verify(lake, capsys)
    assert code == 0 and "note: baseline: entry 0" in out and "16 files the lake held" in out
    old = sorted(glob.glob(os.path.join(lake, "responses", "**", "*.parquet"), recursive=True))[0]
    os.remove(old)  # a file older than the manifest is covered from the baseline on
    code, out = _verify(lake, capsys)
    assert code == 1 and f"missing: {os.path.relpath(old, lake)} (listed by entry 0)" in out


_KILLED_WRITER = """
import os, signal, sys
import pyarrow.parquet as pq
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import publish_recorder

source, target = sys.argv[1], sys.argv[2]
rows = pq.read_table(source)
record = publish_recorder(target, rows)

def record_then_die(temp):
    record(temp)
    os.kill(os.getpid(), signal.SIGKILL)  # after the entry, before the rename

lakefs._publish_local(target, lambda temp: pq.write_table(rows, temp), record_then_die)
"""


def test_a_writer_killed_mid_publish_is_noted_and_the_next_cleanup_completes_it(bench_rows, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    first = _write(lake, "claims", "first")
    target = os.path.join(os.path.dirname(first), "part-killed.parquet")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, first, target], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}
    )
    assert killed.returncode == -9 and not os.path.exists(target)
    stray = os.path.join(os.path.dirname(first), ".part-other.0123456789abcdef0123456789abcdef.tmp")
    with open(stray, "wb") as f:
        f.write(b"half a file")
    code, out = _verify(lake, capsys)
    assert code == 0, out
    assert f"note: interrupted publish: {os.path.relpath(target, lake)} (listed by entry 1)" in out
    assert f"note: temporary: {os.path.relpath(stray, lake)} (left by a stopped writer" in out

    assert remove_stale_temporaries(lake, started_at=time.time() + 120) == 2
    assert os.path.exists(target) and not os.path.exists(stray)
    code, out = _verify(lake, capsys)
    assert code == 0 and "note:" not in out, out


def _writer(lake: str, rows_lake: str, worker: int, count: int) -> None:
    _BENCH_LAKE[:] = [rows_lake]
    for i in range(count):
        _write(lake, "claims", f"writer-{worker}-{i}", rows=1 + i % 3, hour=i % 2)


def test_writers_at_once_never_fork_the_chain(bench_rows, tmp_path, capsys):
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(lake, bench_rows, w, 12)) for w in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [w.exitcode for w in workers] == [0, 0, 0]
    entries = _entries(lake)
    assert [e["seq"] for e in entries] == list(range(36))
    assert len({f["path"] for e in entries for f in e["files"]}) == 36
    code, out = _verify(lake, capsys)
    assert code == 0, out


def test_the_key_signs_entries_and_never_reaches_the_lake_or_the_output(bench_rows, tmp_path, capsys, monkeypatch):
    key = "a-secret-lake-key-4242"
    monkeypatch.setenv(HMAC_VARIABLE, key)
    lake = str(tmp_path / "lake")
    os.makedirs(lake)
    _write(lake, "claims", "signed")
    _write(lake, "responses", "signed")
    assert all(len(json.loads(open(p, "rb").read())["hmac"]) == 64 for p in glob.glob(f"{lake}/_manifest/*.json"))
    code, out = _verify(lake, capsys)
    assert code == 0 and key not in out
    for path in glob.glob(os.path.join(lake, "**", "*"), recursive=True):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                assert key.encode() not in f.read()
    monkeypatch.setenv(HMAC_VARIABLE, "another-key")
    code, out = _verify(lake, capsys)
    assert code == 1 and "break: entry 0 has a wrong HMAC" in out and key not in out


def test_a_lake_verifies_after_reviews_are_labelled_and_imported(tmp_path, capsys):
    """`review label` and `review import` publish `reviews` files through the writer, so the manifest lists them:
    the lake verifies after each, and a label file edited afterwards is named."""
    from tests.support.review_lake import build_lake

    lake = build_lake(str(tmp_path / "lake"))
    label = ["review", "label", "--lake", lake, "--response-id", "r-high", "--sentence", "0"]
    assert groundwatch([*label, "--label", "contradicted", "--reviewer", "ana"]) == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"response_id": "r-low", "sentence_index": 1, "label": "ungrounded", "reviewer": "bo"}\n')
    assert groundwatch(["review", "import", "--lake", lake, str(labels)]) == 0
    code, out = _verify(lake, capsys)
    assert code == 0 and out.rstrip().endswith("unaltered"), out
    entries = _entries(lake)
    assert {"review"} <= {e["command"] for e in entries}
    reviews = [f["path"] for e in entries for f in e["files"] if f["table"] == "reviews"]
    assert len(reviews) == 2
    victim = os.path.join(lake, reviews[0])
    with open(victim, "r+b") as f:
        f.seek(8)
        f.write(b"\x00" if f.read(1) != b"\x00" else b"\x01")
    code, out = _verify(lake, capsys)
    assert code == 1 and f"modified: {reviews[0]} (" in out, out
