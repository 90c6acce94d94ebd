"""`groundwatch compact` and `groundwatch ui` on a lake in a bucket of a real S3-protocol server (marker `s3`).

- compact: the small synthetic lake of `tests/unit/io/test_lake_compaction.py`, written into the bucket by
  the lake's writer, is compacted in place: one object per partition, the duplicates gone, the views' figures
  unchanged; a second run changes no object; the "unchanged since read" check sees a replaced object;
- ui: `groundwatch drift` on the bucket keeps its Evidently workspace in the bucket (`<lake>/evidently/`), and
  `groundwatch ui --lake s3://...` serves it: the project and one snapshot per checked window.

`groundwatch gate --baseline s3://...` is tested in `tests/unit/pipelines/test_gate.py`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from dashboards.views import connect_lake
from dashboards.workspace_sync import local_copy
from pipelines.cli import main
from pipelines.demo import sample_traffic_path
from pipelines.runner.bounded import run_audit as audit
from tests.support.bench_lakes import FIGURES, SENTENCES, build_small_lake
from tests.support.ports import free_port as _free_port
from tests.support.s3_fixtures import S3_SECRET, bucket_keys, get_object, s3_client
from tests.support.s3_fixtures import bucket_of as _bucket
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.reader import COMPACTED_PREFIX

pytestmark = pytest.mark.s3


def _objects(lake: str, table: str, suffix: str = ".parquet") -> dict[str, bytes]:
    """The table's Parquet objects (or its rollups, with `suffix=".rollup"`), by key. pyarrow leaves an empty
    `<folder>/` marker object where it deleted a file (S3 has no folders; the marker keeps one):
    no reader lists it, and the test checks it is empty."""
    bucket = _bucket(lake)
    found = {k: get_object(bucket, k) for k in bucket_keys(bucket) if k.startswith(f"lake/{table}/")}
    assert all(data == b"" for k, data in found.items() if k.endswith("/")), "a folder marker with content"
    return {k: data for k, data in found.items() if k.endswith(suffix)}


def test_compact_on_a_bucket_removes_the_duplicates_once_and_the_views_agree(s3_lake, capsys):
    build_small_lake(s3_lake)
    with connect_lake(s3_lake) as con:
        before = con.execute(FIGURES).fetchone()
        responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
    written = _objects(s3_lake, "sentences")
    raw = sum(lakefs.read_parquet(f"s3://{_bucket(s3_lake)}/{k}").num_rows for k in written)
    assert len(written) == 9 and before[0] == before[1] == SENTENCES < raw  # 3 files an hour, duplicates in them
    dead_letters = _objects(s3_lake, "dead_letters")

    assert main(["compact", "--lake", s3_lake]) == 0
    out = capsys.readouterr().out
    assert f"sentences: 3 partitions, 3 compacted, 0 already clean; {raw:,} rows -> {SENTENCES:,}" in out
    compacted = _objects(s3_lake, "sentences")
    assert len(compacted) == 3 and all(k.rsplit("/", 1)[1].startswith(COMPACTED_PREFIX) for k in compacted)
    assert {k.rsplit("/", 1)[0] for k in compacted} == {k.rsplit("/", 1)[0] for k in written}  # same partitions
    assert _objects(s3_lake, "dead_letters") == dead_letters  # left to the views, as in a folder
    rollups = _objects(s3_lake, "sentences", ".rollup")  # two per compacted file and the review queue's, after it
    assert len(rollups) == 3 * len(compacted)
    assert {k.rsplit("/", 1)[1].split(".")[0] for k in rollups} == {"_" + k.rsplit("/", 1)[1][:-8] for k in compacted}
    with connect_lake(s3_lake) as con:
        assert con.execute(FIGURES).fetchone() == before  # the later copies won: same max(audited_at)
        assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == responses

    every_object = {k: get_object(_bucket(s3_lake), k) for k in bucket_keys(_bucket(s3_lake))}
    assert main(["compact", "--lake", s3_lake]) == 0
    again = capsys.readouterr().out
    assert "sentences: 3 partitions, 0 compacted, 3 already clean" in again and "rollups written" not in again
    assert {k: get_object(_bucket(s3_lake), k) for k in bucket_keys(_bucket(s3_lake))} == every_object
    assert not any(S3_SECRET.encode() in data for data in every_object.values())


def test_the_unchanged_since_read_check_sees_a_replaced_object(s3_lake):
    location = f"{s3_lake}/responses/date=2026-11-01/hour=00/part-x.parquet"
    assert lakefs.file_signature(location) is None
    lakefs.write_bytes(location, b"first")
    first = lakefs.file_signature(location)
    head = s3_client().head_object(Bucket=_bucket(s3_lake), Key=location.split("/", 3)[3])
    assert first == (5, int(head["LastModified"].timestamp()) * 10**9)  # the store's size and Last-Modified
    lakefs.write_bytes(location, b"replaced, longer")  # a writer's new version of the same file
    assert lakefs.file_signature(location) != first
    assert lakefs.remove_file(location) and lakefs.file_signature(location) is None
    assert not lakefs.remove_file(location)  # already gone: said, although S3 deletes a missing key happily


def test_compact_refuses_a_bucket_that_does_not_exist_without_the_secret(s3_env, capsys):
    assert main(["compact", "--lake", "s3://gw-no-such-bucket/lake"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundwatch compact: ") and "gw-no-such-bucket" in err and S3_SECRET not in err


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def test_drift_keeps_its_workspace_in_the_bucket_and_ui_serves_it(s3_lake, tmp_path, capsys):
    assert main(["ui", "--lake", s3_lake]) == 2  # nothing to show yet
    assert "no Evidently workspace" in capsys.readouterr().err
    # The first 60 responses of the sample traffic: six one-minute windows, enough snapshots to count.
    traffic = tmp_path / "traffic.jsonl"
    with open(sample_traffic_path(), "rb") as f:
        traffic.write_bytes(b"".join(f.readlines()[:60]))
    audit(["--input", str(traffic), f"--lake={s3_lake}"], out=lambda _: None)
    assert main(["drift", "--lake", s3_lake, "--min-responses", "5"]) == 0
    out = capsys.readouterr().out
    windows = int(out.split("windows checked")[1].split()[0])
    assert windows >= 5 and f"Evidently {s3_lake}/evidently" in out
    keys = bucket_keys(_bucket(s3_lake))
    workspace = [k for k in keys if k.startswith("lake/evidently/")]
    assert len([k for k in workspace if "/snapshots/" in k]) == windows, workspace  # one per window checked

    port = _free_port()
    log = open(tmp_path / "ui.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "pipelines.cli", "ui", "--lake", s3_lake, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the UI server it starts stops with it
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # a readiness wait, not a speed check
        while True:
            try:
                projects = {p["name"]: p["id"] for p in _get(f"{base}/api/projects")}
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("groundwatch ui did not come up: " + open(tmp_path / "ui.log").read()[-2000:])
                time.sleep(1)
        assert "groundwatch" in projects
        snapshots = _get(f"{base}/api/projects/{projects['groundwatch']}/snapshots")
        assert len(snapshots) == windows
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        log.close()
    text = open(tmp_path / "ui.log", errors="replace").read()
    assert f"workspace {s3_lake}/evidently" in text and S3_SECRET not in text

    # A second drift run checks nothing new and uploads nothing: the workspace in the bucket stays as it was.
    before = {k: get_object(_bucket(s3_lake), k) for k in workspace}
    assert main(["drift", "--lake", s3_lake, "--min-responses", "5"]) == 0
    assert "windows checked  0" in capsys.readouterr().out
    assert {k: get_object(_bucket(s3_lake), k) for k in bucket_keys(_bucket(s3_lake)) if k in before} == before

    # Later traffic: the next run adds its windows' snapshots beside the earlier ones, which it never fetched.
    with local_copy(s3_lake, snapshots=False) as copy:
        assert copy.fetched and not [path for path in copy.fetched if "/snapshots/" in path]
    with open(sample_traffic_path(), "rb") as f:
        traffic.write_bytes(b"".join(f.readlines()[60:90]))
    audit(["--input", str(traffic), f"--lake={s3_lake}"], out=lambda _: None)
    assert main(["drift", "--lake", s3_lake, "--min-responses", "5"]) == 0
    more = int(capsys.readouterr().out.split("windows checked")[1].split()[0])
    after = [k for k in bucket_keys(_bucket(s3_lake)) if k.startswith("lake/evidently/") and "/snapshots/" in k]
    assert more >= 2 and len(after) == windows + more
    assert all(get_object(_bucket(s3_lake), k) == data for k, data in before.items() if "/snapshots/" in k)
