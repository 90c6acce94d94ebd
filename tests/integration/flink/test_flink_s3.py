"""groundwatch on Apache Flink with its lake in a bucket (marker `flink`; moto's S3 server of
`tests.support.s3_fixtures`, the cluster of `tests.support.flink_fixtures`).

- `groundwatch audit` of the sample traffic on the standalone cluster at parallelism 2, LOOPBACK, with
  `--lake s3://bucket/lake`, leaves in the bucket, table by table, the rows the FnApiRunner leaves in a local
  folder (floats within 1e-9; the wall-clock stamps excluded), and nothing but published Parquet objects and
  the lake manifest's entries;
- `groundwatch query` over the bucket answers as it does over the folder;
- the credentials reach the SDK harness through the environment of the launching process (LOOPBACK: that process
  is the harness) and appear in no log line and no object.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from schemas import TABLES
from tests.support.flink_fixtures import audit_process, finished, flink_argv, log_tail
from tests.support.lake_compare import assert_same_tables
from tests.support.s3_fixtures import S3_SECRET, bucket_keys, bucket_of, get_object
from transforms.io.lake.manifest import ENTRY_NAME

pytestmark = [pytest.mark.flink]


def _query(lake: str, sql: str) -> list[dict]:
    command = [sys.executable, "-m", "pipelines.cli", "query", "--lake", lake, "--format", "json", sql]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert S3_SECRET not in done.stdout + done.stderr
    return json.loads(done.stdout)


def test_audit_on_flink_into_a_bucket_gives_the_rows_of_the_fnapirunner(
    flink_cluster, sample_lake_fnapi, s3_lake, tmp_path
):
    log = tmp_path / "audit.log"
    audit = audit_process(s3_lake, *flink_argv(flink_cluster, parallelism=2), log_path=log)
    assert finished(audit, log) == 0, log_tail(log)
    assert f"lake           {s3_lake}" in log_tail(log, 300)

    bucket = bucket_of(s3_lake)
    keys = bucket_keys(bucket)
    entries = [k for k in keys if k.startswith("lake/_manifest/")]  # the lake's manifest: one entry per file
    assert entries and all(ENTRY_NAME.match(k.rsplit("/", 1)[1]) for k in entries), entries
    assert all(k.startswith("lake/") and k.endswith(".parquet") for k in set(keys) - set(entries)), keys
    # responses, sentences, citations, claims, window metrics and dead letters: not empty
    assert assert_same_tables(sample_lake_fnapi, s3_lake, TABLES) > 3000

    sql = "SELECT tenant, count(*) AS n, round(avg(overall_faithfulness_score), 9) AS f FROM responses GROUP BY 1"
    in_bucket = _query(s3_lake, sql + " ORDER BY 1")
    assert in_bucket and in_bucket == _query(sample_lake_fnapi, sql + " ORDER BY 1")

    assert S3_SECRET not in log.read_text(errors="replace")
    assert not any(S3_SECRET.encode() in get_object(bucket, key) for key in keys)
