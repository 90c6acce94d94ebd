"""A real S3-protocol server on 127.0.0.1 for the tests of a lake in object storage (marker `s3`).

`s3_server` starts moto's standalone server (`moto_server`, from PyPI's `moto[server]`, the `test` extra) once
per session as a process of its own, on a free port, and stops it at the end (without moto installed, the tests
fail and name the extra to install: `pip install -e .[test]`). moto was chosen over MinIO because it is pure
Python and installs in seconds, while MinIO is a large Go build; both speak the S3 protocol over HTTP, which is
all the lake uses (PUT, GET, ranged GET, LIST, DELETE).

`s3_env` points the process (and the pipelines and commands it starts) at the server through the documented
GROUNDWATCH_S3_ENDPOINT, with test credentials whose secret, `S3_SECRET`, a test can look for in logs, errors
and the lake's objects. `s3_lake` is `s3://<a fresh bucket>/lake`; `bucket_of(lake)` is its bucket;
`folder_or_bucket_lake` runs a test twice, its lake in a local folder and then (marker `s3`) in a bucket;
`bucket_keys(bucket)` lists the bucket with boto3, independently of the code under test.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

from tests.support.ports import free_port

__all__ = [
    "S3_KEY_ID",
    "S3_SECRET",
    "bucket_keys",
    "bucket_of",
    "export_s3_env",
    "folder_or_bucket_lake",
    "get_object",
    "s3_client",
    "s3_env",
    "s3_lake",
    "s3_server",
]

S3_KEY_ID = "groundwatch-test-key"
S3_SECRET = "gw-secret-" + "7f3a9c1e5b"
"""The test secret access key: it must never appear in a log, an error message or the lake."""

MOTO_REQUIREMENT = "moto[server]>=5,<6"


def _ensure_moto() -> None:
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        pytest.fail(f"the S3 tests need {MOTO_REQUIREMENT}: pip install -e '.[test]' (scripts/test.sh does)")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """The endpoint URL (`http://127.0.0.1:PORT`) of a moto S3 server running for the session."""
    _ensure_moto()
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"moto's S3 server did not start on port {port} (see {log.name})")
                time.sleep(0.2)
        yield endpoint
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def export_s3_env(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """Set what a user of an S3-protocol store exports: credentials, region and groundwatch's endpoint."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", S3_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", S3_SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("GROUNDWATCH_S3_ENDPOINT", endpoint)


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The environment a user of an S3-protocol store sets (`export_s3_env`), for this test."""
    export_s3_env(monkeypatch, s3_server)
    return s3_server


def s3_client(endpoint: str | None = None):
    """A boto3 client of the test server (the one `s3_env` set, by default)."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint or os.environ["GROUNDWATCH_S3_ENDPOINT"],
        aws_access_key_id=S3_KEY_ID,
        aws_secret_access_key=S3_SECRET,
        region_name="us-east-1",
    )


@pytest.fixture
def s3_lake(s3_env) -> str:
    """`s3://<fresh bucket>/lake`: a lake location in a bucket of this test's own."""
    bucket = f"gw-{uuid.uuid4().hex[:12]}"
    s3_client().create_bucket(Bucket=bucket)
    return f"s3://{bucket}/lake"


@pytest.fixture(params=["folder", pytest.param("bucket", marks=pytest.mark.s3)])
def folder_or_bucket_lake(request, tmp_path) -> str:
    """A lake location, once `<tmp>/lake` and once `s3_lake` (a fresh bucket, with `s3_env`'s environment, which a
    process the test starts inherits): a test that takes it checks the same rows in both."""
    if request.param == "bucket":
        return request.getfixturevalue("s3_lake")
    return str(tmp_path / "lake")


def bucket_of(lake) -> str:
    """The bucket of an `s3://bucket/prefix` lake location (a str or anything whose str is one)."""
    return str(lake).removeprefix("s3://").split("/")[0]


def bucket_keys(bucket: str) -> list[str]:
    """Every object key of `bucket`, as the server lists it."""
    keys, token = [], None
    client = s3_client()
    while True:
        page = client.list_objects_v2(Bucket=bucket, **({"ContinuationToken": token} if token else {}))
        keys += [item["Key"] for item in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return keys
        token = page["NextContinuationToken"]


def get_object(bucket: str, key: str) -> bytes:
    """The bytes of one object, as the server returns them."""
    return s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
