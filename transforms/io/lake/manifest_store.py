"""Creating a file only if its name is free, on a folder or in a bucket: how the lake's manifest appends an
entry without ever overwriting one (`transforms.io.lake.manifest`).

On a folder the bytes go to a hidden temporary file that is hard-linked to the name (atomic, and it fails
when the name exists); a filesystem without hard links gets an exclusive create (`O_EXCL`). On S3 it is one
PUT with `If-None-Match: *` through boto3 (pyarrow's S3 filesystem has no conditional write); other object
stores check the name and then write (a narrow race: they offer no conditional write through pyarrow).
"""

from __future__ import annotations

import functools
import os
import uuid
from urllib.parse import urlsplit

from transforms.io.lake import filesystem as lakefs

__all__ = ["create_exclusive"]


def create_exclusive(location: str, data: bytes) -> bool:
    """Publish `data` as the file `location` only if no file has that name; False when one has."""
    if not lakefs.is_remote(location):
        folder = os.path.dirname(location)
        os.makedirs(folder, exist_ok=True)
        temp = os.path.join(folder, f".{os.path.basename(location).split('.')[0]}.{uuid.uuid4().hex}.tmp")
        with open(temp, "wb") as f:
            f.write(data)
        try:
            os.link(temp, location)  # atomic, and fails when the name exists: no entry is ever overwritten
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: an exclusive create (its bytes follow at once)
            return _create_exclusive(location, data)
        finally:
            os.remove(temp)
        return True
    return _create_object(location, data)


def _create_exclusive(location: str, data: bytes) -> bool:
    try:
        descriptor = os.open(location, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "wb") as f:
        f.write(data)
    return True


def _create_object(location: str, data: bytes) -> bool:
    parts = urlsplit(location)
    if parts.scheme not in ("s3", "s3a"):
        # No conditional write known for this filesystem: check, then write (a narrow race, documented).
        if lakefs.file_signature(location) is not None:
            return False
        lakefs.write_bytes(location, data)
        return True
    from botocore.exceptions import ClientError

    try:
        endpoint = os.environ.get(lakefs.ENDPOINT_VARIABLE) or os.environ.get("AWS_ENDPOINT_URL") or None
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        _s3_client(endpoint, region).put_object(
            Bucket=parts.netloc, Key=parts.path.lstrip("/"), Body=data, IfNoneMatch="*"
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("PreconditionFailed", "ConditionalRequestConflict"):
            return False
        raise OSError(f"writing {location}: {error.response.get('Error', {}).get('Code')}") from None
    return True


@functools.lru_cache(maxsize=8)
def _s3_client(endpoint: str | None, region: str):
    # boto3, not pyarrow: pyarrow's S3 filesystem has no conditional PUT. Credentials from the same chain.
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name=region)
