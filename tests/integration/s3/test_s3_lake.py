"""The lake in a bucket (`--lake s3://bucket/lake`) against a real S3-protocol server on 127.0.0.1 (marker `s3`).

- `groundwatch audit` of the sample traffic into a bucket leaves, table by table, the rows it leaves in a local
  folder (wall-clock columns excluded), and a client listing the bucket throughout the run only ever sees
  whole Parquet objects under their final names: no temporary, hidden or partial object;
- `groundwatch query`, `metrics`, `drift` and `report` work on the bucket and agree with the folder; the
  read-only query reads the lake's prefix and nothing else (`compact`, `ui` and `gate --baseline` on a bucket:
  `test_s3_commands.py` and `tests/unit/pipelines/test_gate.py`);
- a bucket that does not exist, an endpoint that does not answer and credentials written into the URI are
  refused with a clear message; the secret key is in no output, no error and no object of the lake.

The Kafka exactly-once tests into a bucket (the bounded catch-up, the catch-up in passes, the streaming
monitor's SIGKILL and broker restart) and the JSONL audit in passes are parametrized over a local and an S3
lake, in `tests/integration/kafka/` and `tests/unit/audit/test_audit_passes.py`.
"""

from __future__ import annotations

import json
import shutil
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.cli import main
from pipelines.demo import sample_traffic_path
from pipelines.runner.bounded import run_audit as audit
from schemas import TABLES
from tests.support.lake_compare import assert_same_tables
from tests.support.s3_fixtures import S3_KEY_ID, S3_SECRET, bucket_keys, bucket_of, get_object, s3_client
from transforms.io.lake.manifest import ENTRY_NAME

pytestmark = pytest.mark.s3


def _audit(lake: str) -> list[str]:
    lines: list[str] = []
    counts = audit(["--input", sample_traffic_path(), f"--lake={lake}"], out=lines.append)
    assert counts.adds_up and counts.audited > 0
    return lines


@pytest.fixture(scope="module")
def local_lake(tmp_path_factory) -> str:
    """The sample traffic audited into a local folder, the reference the bucket is compared with."""
    lake = str(tmp_path_factory.mktemp("local") / "lake")
    _audit(lake)
    return lake


def _assert_same_tables(expected_lake: str, lake: str, tables) -> int:
    return assert_same_tables(expected_lake, lake, tables, tolerance=1e-12)  # one runner: only the filesystem differs


class _BucketWatcher(threading.Thread):
    """Lists the bucket over and over while a run writes it; fetches each object the first time it is listed
    and notes any that is not a whole Parquet file under a final `.parquet` name."""

    def __init__(self, bucket: str):
        super().__init__(daemon=True)
        self.bucket, self.stop, self.listings, self.seen, self.bad = bucket, threading.Event(), 0, set(), []

    def run(self):
        while not self.stop.is_set():
            for key in bucket_keys(self.bucket):
                if key in self.seen:
                    continue
                self.seen.add(key)
                name = key.rsplit("/", 1)[-1]
                if key.startswith("lake/_manifest/") and ENTRY_NAME.match(name):
                    continue  # an entry of the lake's manifest (one whole JSON object, `If-None-Match: *`)
                if not name.endswith(".parquet") or name.startswith("."):
                    self.bad.append(f"{key}: not a published file name")
                    continue
                try:
                    pq.read_table(pa.BufferReader(get_object(self.bucket, key)))
                except (pa.ArrowException, OSError) as e:
                    self.bad.append(f"{key}: {e}")
            self.listings += 1


def test_audit_into_a_bucket_gives_the_folders_rows_and_no_partial_object(s3_lake, local_lake):
    bucket = bucket_of(s3_lake)
    watcher = _BucketWatcher(bucket)
    watcher.start()
    try:
        lines = _audit(s3_lake)
    finally:
        watcher.stop.set()
        watcher.join(timeout=60)
    assert watcher.listings > 3 and not watcher.bad, watcher.bad

    keys = [k for k in bucket_keys(bucket) if not k.startswith("lake/_manifest/")]
    assert keys and all(k.startswith("lake/") and k.endswith(".parquet") for k in keys), keys
    assert set(bucket_keys(bucket)) >= watcher.seen  # nothing listed during the run went away (no temporary object)
    assert f"lake           {s3_lake}" in lines[-1]

    assert _assert_same_tables(local_lake, s3_lake, TABLES) > 3000
    # The secret is in no line the run printed and no object it wrote.
    assert not any(S3_SECRET in line for line in lines)
    assert not any(S3_SECRET.encode() in get_object(bucket, key) for key in keys)


def _query(capsys, lake: str, sql: str) -> tuple[int, str, str]:
    code = main(["query", "--lake", lake, "--format", "json", sql])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_query_metrics_drift_and_report_work_on_the_bucket(s3_lake, local_lake, tmp_path, capsys):
    _audit(s3_lake)
    capsys.readouterr()
    sql = "SELECT tenant, count(*) AS n, round(avg(overall_faithfulness_score), 9) AS f FROM responses GROUP BY 1"
    code, out, err = _query(capsys, s3_lake, sql + " ORDER BY 1")
    assert code == 0, err
    assert json.loads(out) == json.loads(_query(capsys, local_lake, sql + " ORDER BY 1")[1]) and json.loads(out)

    # The read-only connection reads the lake's prefix and nothing else: not a sibling prefix, not another bucket.
    bucket = bucket_of(s3_lake)
    key = next(k for k in bucket_keys(bucket) if k.startswith("lake/responses/"))
    s3_client().copy_object(Bucket=bucket, Key="lake2/x.parquet", CopySource={"Bucket": bucket, "Key": key})
    for outside in (f"s3://{bucket}/lake2/x.parquet", f"s3://{bucket}/{key.replace('lake/', 'lake2/', 1)}"):
        code, _, err = _query(capsys, s3_lake, f"SELECT count(*) FROM read_parquet('{outside}')")
        assert code == 2 and "refused" in err, err
    code, _, err = _query(capsys, s3_lake, f"COPY responses TO '{s3_lake}/responses/forged.parquet'")
    assert code == 2 and "refused" in err
    assert not any("forged" in k for k in bucket_keys(bucket))

    # metrics, drift and report: the same outcome on the bucket as on a copy of the folder.
    folder = str(tmp_path / "lake")
    shutil.copytree(local_lake, folder)
    for lake in (s3_lake, folder):
        assert main(["metrics", "--lake", lake]) == 0
        assert main(["drift", "--lake", lake, "--min-responses", "5", "--no-workspace"]) == 0
    out = capsys.readouterr().out
    assert out.count("window metrics of 30 windows computed again from") == 2, out
    assert _assert_same_tables(folder, s3_lake, ["window_metrics", "drift_checks", "alerts"]) > 30
    # With the workspace (no window left to check: its project only; snapshots in test_s3_commands.py).
    assert main(["drift", "--lake", s3_lake]) == 0
    assert f"Evidently {s3_lake}/evidently" in capsys.readouterr().out
    assert any(k.startswith("lake/evidently/") for k in bucket_keys(bucket))

    report = tmp_path / "report.html"
    assert main(["report", "--lake", s3_lake, "--out", str(report)]) == 0
    page = report.read_text()
    assert page.lower().startswith("<!doctype html>") and s3_lake in page and S3_SECRET not in page


def test_unusable_buckets_and_credentials_in_the_uri_are_refused_without_the_secret(
    s3_env, s3_lake, capsys, monkeypatch
):
    bucket = bucket_of(s3_lake)
    sample = sample_traffic_path()

    assert main(["audit", "--input", sample, "--lake", "s3://gw-no-such-bucket/lake"]) == 2
    err = capsys.readouterr().err
    assert "--lake" in err and "gw-no-such-bucket" in err and "does not exist" in err
    assert S3_SECRET not in err

    assert main(["audit", "--input", sample, "--lake", f"s3://{S3_KEY_ID}:{S3_SECRET}@{bucket}/lake"]) == 2
    err = capsys.readouterr().err
    assert "holds credentials" in err and S3_SECRET not in err and S3_KEY_ID not in err

    code, out, err = _query(capsys, "s3://gw-no-such-bucket/lake", "SELECT 1")
    assert code == 2 and "gw-no-such-bucket" in err and S3_SECRET not in out + err

    # An endpoint where nothing answers: a clear error, on one line, without the secret.
    monkeypatch.setenv("GROUNDWATCH_S3_ENDPOINT", "http://127.0.0.1:9")
    assert main(["audit", "--input", sample, "--lake", f"s3://{bucket}/lake"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundwatch audit: --lake: cannot reach") and S3_SECRET not in err
    monkeypatch.setenv("GROUNDWATCH_S3_ENDPOINT", s3_env)
    assert bucket_keys(bucket) == []  # nothing was written anywhere by the refused runs
