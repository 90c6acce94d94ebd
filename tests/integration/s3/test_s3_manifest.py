"""The lake's manifest in a bucket (marker `s3`): entries are created with `If-None-Match: *`, so a taken
number is detected; a lake written, compacted and given metrics in a bucket verifies, as does one audited,
drift-checked and reviewed there; tampering with its objects is named.
"""

from __future__ import annotations

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main
from pipelines.demo import sample_traffic_path
from tests.support.bench_lakes import build_small_lake
from tests.support.s3_fixtures import bucket_keys, bucket_of, get_object, s3_client
from transforms.io.lake.manifest import MANIFEST_FOLDER
from transforms.io.lake.manifest_store import create_exclusive

pytestmark = pytest.mark.s3


def test_an_entry_number_once_taken_cannot_be_written_again(s3_lake):
    location = f"{s3_lake}/{MANIFEST_FOLDER}/000000000000.json"
    assert create_exclusive(location, b'{"kind":"add"}')
    assert not create_exclusive(location, b'{"kind":"replace"}')  # a second writer's try
    stored = get_object(bucket_of(s3_lake), f"lake/{MANIFEST_FOLDER}/000000000000.json")
    assert b'"kind":"add"' in stored


def test_a_bucket_lake_verifies_after_writes_and_compaction_and_names_tampering(s3_lake, capsys):
    build_small_lake(s3_lake)
    assert main(["compact", "--lake", s3_lake]) == 0
    assert main(["metrics", "--lake", s3_lake]) == 0
    capsys.readouterr()
    assert main(["verify-lake", "--lake", s3_lake]) == 0
    assert capsys.readouterr().out.rstrip().endswith("unaltered")

    bucket = bucket_of(s3_lake)
    keys = [k for k in bucket_keys(bucket) if k.endswith(".parquet")]
    victim, removed = keys[0], keys[-1]
    data = bytearray(get_object(bucket, victim))
    data[len(data) // 2] ^= 1
    client = s3_client()
    client.put_object(Bucket=bucket, Key=victim, Body=bytes(data))
    client.delete_object(Bucket=bucket, Key=removed)
    client.put_object(Bucket=bucket, Key="lake/claims/date=2026-11-01/hour=00/part-forged.parquet", Body=b"x")
    assert main(["verify-lake", "--lake", s3_lake]) == 1
    out = capsys.readouterr().out
    assert f"modified: {victim.removeprefix('lake/')} (its SHA-256 differs" in out
    assert f"missing: {removed.removeprefix('lake/')}" in out
    assert "foreign: claims/date=2026-11-01/hour=00/part-forged.parquet" in out


def test_a_bucket_lake_verifies_after_audit_drift_and_reviews(s3_lake, tmp_path, capsys):
    traffic = tmp_path / "traffic.jsonl"
    with open(sample_traffic_path(), "rb") as f:
        traffic.write_bytes(b"".join(f.readlines()[:40]))
    assert main(["audit", "--input", str(traffic), "--lake", s3_lake]) == 0
    assert main(["drift", "--lake", s3_lake, "--min-responses", "5"]) == 0
    sql = "SELECT response_id FROM sentences WHERE sentence_index = 1 ORDER BY response_id LIMIT 2"
    first, second = (row[0] for row in connect_lake(s3_lake).execute(sql).fetchall())
    label = ["review", "label", "--lake", s3_lake, "--response-id", first, "--sentence", "0"]
    assert main([*label, "--label", "contradicted", "--reviewer", "ana"]) == 0
    labels = tmp_path / "labels.jsonl"
    labels.write_text(f'{{"response_id": "{second}", "sentence_index": 1, "label": "ungrounded", "reviewer": "bo"}}\n')
    assert main(["review", "import", "--lake", s3_lake, str(labels)]) == 0
    capsys.readouterr()
    assert main(["verify-lake", "--lake", s3_lake]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.rstrip().endswith("unaltered")

    bucket = bucket_of(s3_lake)
    reviews = [k for k in bucket_keys(bucket) if k.startswith("lake/reviews/") and k.endswith(".parquet")]
    assert len(reviews) == 2
    s3_client().put_object(Bucket=bucket, Key=reviews[0], Body=get_object(bucket, reviews[1]))
    assert main(["verify-lake", "--lake", s3_lake]) == 1
    assert f"modified: {reviews[0].removeprefix('lake/')} (" in capsys.readouterr().out
