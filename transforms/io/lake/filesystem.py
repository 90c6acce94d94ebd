"""Where the lake lives: a local folder or object storage (`s3://bucket/prefix`, `gs://...`, `hdfs://...`).

The writer, the cleanup, the reader, the DuckDB views, the Kafka offset commit, `groundwatch compact` and the
Evidently workspace of a bucket lake reach the lake only through the few operations here, so each works the
same on a folder and on a bucket:

    write_parquet(join(lake, "responses", "date=2026-11-29", "hour=09", "part-1.parquet"), table)
    list_files(join(lake, "responses"), ".parquet")      # full locations, URIs for a remote lake
    read_parquet(location, columns=["origin_offset"])
    attach_duckdb(con, lake)                             # read_parquet('s3://...') then works on `con`
    file_signature(location)                             # (size, mtime ns): has the file changed since?
    remove_file(location); write_bytes(location, data); read_bytes(location)

A location with a scheme other than `file://` is remote; it is resolved by pyarrow
(`pyarrow.fs.FileSystem.from_uri`), so any filesystem pyarrow reaches works, and one filesystem object is kept
per bucket and process (Beam workers resolve it themselves, from the lake location their DoFn holds).

Publishing is all-or-nothing per file. On a folder the file is written to a hidden `.<stem>.<uuid>.tmp` beside
its final name and renamed into place (`transforms.io.lake.cleanup` removes the ones a killed run leaves). An
object store has no rename, but an object appears only when its upload completes: the Parquet bytes are built
in memory first and then sent as one object under the final name, so no reader ever lists a partial or
temporary object, and a failed upload leaves nothing.

Credentials come from the environment or the provider's standard chain, as pyarrow reads them
(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_PROFILE, instance roles...).
A custom S3 endpoint (MinIO, a test server) is AWS_ENDPOINT_URL, or GROUNDWATCH_S3_ENDPOINT when only
groundwatch should use it. Credentials written into the lake URI (`s3://KEY:SECRET@bucket`) are refused, as
the lake location is printed and stored; error messages raised here have any secret of the environment masked.

DuckDB reads a remote lake through fsspec's wrapper of the same pyarrow filesystem, registered on the
connection (`attach_duckdb`): DuckDB's own S3 support (the httpfs extension) is downloaded on first use, which
an offline machine cannot do, and s3fs would add a second S3 client to configure. The views' SQL is the same
for a folder and a bucket, and DuckDB's `allowed_directories` confines a read-only connection to the lake's
prefix as it does to the lake's folder.
"""

from __future__ import annotations

import functools
import os
import posixpath
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # pyarrow loads only when a lake file is touched: `groundwatch query` starts without it
    import pyarrow as pa
    import pyarrow.fs as pafs

__all__ = [
    "ENDPOINT_VARIABLE",
    "attach_duckdb",
    "check_location",
    "ensure_folder",
    "file_signature",
    "is_dir",
    "is_remote",
    "join",
    "list_files",
    "normalize",
    "read_bytes",
    "read_parquet",
    "relative",
    "remove_file",
    "remove_tree",
    "write_bytes",
    "write_parquet",
]

ENDPOINT_VARIABLE = "GROUNDWATCH_S3_ENDPOINT"
"""An S3 endpoint (`http://127.0.0.1:9000`) for groundwatch only; AWS_ENDPOINT_URL works too, for every tool."""

_SECRET_VARIABLES = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS_JSON")


def is_remote(location: str) -> bool:
    """Whether `location` names object storage or another remote filesystem rather than a local path."""
    return "://" in location and not location.startswith("file://")


def _local(location: str) -> str:
    return os.path.abspath(location.removeprefix("file://"))


def normalize(location: str) -> str:
    """The lake location as the lake's files name it: an absolute local path, or the URI without a trailing
    slash. ValueError for a URI holding credentials."""
    if not is_remote(location):
        return _local(location)
    parts = urlsplit(location)
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"the lake URI {parts.scheme}://...@{parts.hostname}{parts.path} holds credentials; give them in the "
            "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) instead"
        )
    if not parts.netloc:
        raise ValueError(f"the lake URI {location!r} names no bucket or host")
    return location.rstrip("/")


def join(base: str, *parts: str) -> str:
    """`base` (a local path or a URI) with `parts` appended."""
    return posixpath.join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def _scrub(text: str) -> str:
    """`text` with the value of every secret variable of the environment masked."""
    for name in _SECRET_VARIABLES:
        secret = os.environ.get(name)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


@functools.lru_cache(maxsize=64)
def _filesystem(scheme: str, netloc: str, endpoint: str | None) -> pafs.FileSystem:
    import pyarrow.fs as pafs

    if scheme in ("s3", "s3a") and endpoint:
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        return pafs.S3FileSystem(endpoint_override=endpoint, region=region)
    filesystem, _ = pafs.FileSystem.from_uri(f"{'s3' if scheme == 's3a' else scheme}://{netloc}")
    return filesystem


def _resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem of a remote location and the path in it (`bucket/prefix/...`)."""
    import pyarrow as pa

    parts = urlsplit(normalize(location))
    try:
        filesystem = _filesystem(parts.scheme, parts.netloc, os.environ.get(ENDPOINT_VARIABLE) or None)
    except (OSError, pa.ArrowException) as e:
        raise OSError(f"cannot reach {parts.scheme}://{parts.netloc}: {_scrub(str(e))}") from None
    if parts.scheme == "hdfs":  # pyarrow's HDFS paths are absolute paths on the cluster
        return filesystem, parts.path or "/"
    return filesystem, parts.netloc + parts.path


def _uri(location: str, path: str) -> str:
    """The URI of `path` (a path in the filesystem of the remote `location`)."""
    parts = urlsplit(location)
    return f"{parts.scheme}://{path}" if parts.scheme != "hdfs" else f"hdfs://{parts.netloc}{path}"


def _info(location: str) -> pafs.FileInfo:
    import pyarrow as pa
    import pyarrow.fs as pafs

    if not is_remote(location):
        return pafs.LocalFileSystem().get_file_info(_local(location))
    filesystem, path = _resolve(location)
    try:
        return filesystem.get_file_info(path)
    except (OSError, pa.ArrowException) as e:
        raise OSError(_scrub(str(e))) from None


def is_dir(location: str) -> bool:
    """Whether the location is a folder (remote: a prefix some object lies under)."""
    if not is_remote(location):
        return os.path.isdir(_local(location))
    import pyarrow.fs as pafs

    return _info(location).type == pafs.FileType.Directory


def check_location(location: str) -> None:
    """Raise ValueError, on one line and without secrets, when a lake cannot be at `location`: credentials in
    the URI, a scheme pyarrow does not know, a bucket that does not exist or is not reachable, or a file where
    the lake's folder should be."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    lake = normalize(location)
    if not is_remote(lake):
        return
    try:
        info = _info(lake)
        if info.type == pafs.FileType.NotFound:
            parts = urlsplit(lake)
            root = _info(f"{parts.scheme}://{parts.netloc}")
            if root.type == pafs.FileType.NotFound:
                raise ValueError(f"the bucket of {lake} does not exist (create it first; the lake creates none)")
    except (OSError, pa.ArrowException) as e:
        raise ValueError(f"cannot reach {lake}: {_scrub(str(e))}") from None
    if info.type == pafs.FileType.File:
        raise ValueError(f"{lake} is an object, not a prefix the lake's files can go under")


def list_files(location: str, suffix: str = "") -> list[str]:
    """Every file under `location` (at any depth) whose name ends with `suffix`, as full locations; none when
    the location does not exist."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    if not is_remote(location):
        selector_base, filesystem = _local(location), pafs.LocalFileSystem()
    else:
        filesystem, selector_base = _resolve(location)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(selector_base, recursive=True, allow_not_found=True))
    except (OSError, pa.ArrowException) as e:
        raise OSError(_scrub(str(e))) from None
    found = [i.path for i in infos if i.type == pafs.FileType.File and i.base_name.endswith(suffix)]
    return sorted(_uri(location, p) for p in found) if is_remote(location) else sorted(found)


def ensure_folder(location: str) -> None:
    """Create a local folder (and its parents); object storage needs none, a prefix exists with its objects."""
    if not is_remote(location):
        os.makedirs(_local(location), exist_ok=True)


def _publish_local(
    location: str, write: Callable[[str], None], before_rename: Callable[[str], None] | None = None
) -> str:
    """Publish a local file whole: `write` fills a temporary file beside it, renamed to its final name
    (after `before_rename(temp)`, which records it in the lake's manifest)."""
    final = location.removeprefix("file://")
    folder = os.path.dirname(os.path.abspath(final))
    os.makedirs(folder, exist_ok=True)
    stem = os.path.basename(final).removesuffix(".parquet")
    # Hidden and not ending in .parquet: no glob a reader uses matches it while it is incomplete.
    temp = os.path.join(folder, f".{stem}.{uuid.uuid4().hex}.tmp")
    try:
        write(temp)
        if before_rename is not None:
            before_rename(temp)
        os.replace(temp, final)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return final


def write_bytes(location: str, data: bytes | pa.Buffer) -> str:
    """Publish `data` as the file `location`, whole or not at all (see the module's docstring)."""
    import pyarrow as pa

    if not is_remote(location):

        def write(temp: str) -> None:
            with open(temp, "wb") as f:
                f.write(data)

        return _publish_local(location, write)
    filesystem, path = _resolve(location)
    try:
        # One upload of the whole file: the object appears when close() completes it, never before.
        stream = filesystem.open_output_stream(path)
        stream.write(data)
        stream.close()
    except (OSError, pa.ArrowException) as e:
        raise OSError(f"writing {location}: {_scrub(str(e))}") from None
    return normalize(location)


def write_parquet(location: str, table: pa.Table, *, record: Callable[[Any], None] | None = None) -> str:
    """Publish `table` as the Parquet file `location`, whole or not at all (see the module's docstring).

    `record` is called with the file's content before it appears (the temporary file's path, or the bytes
    to upload): `transforms.io.lake.manifest.write_lake_parquet` lists the file in the lake's manifest so."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not is_remote(location):  # streamed to the disk, not held in memory
        return _publish_local(location, lambda temp: pq.write_table(table, temp, compression="zstd"), record)
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer, compression="zstd")
    if record is not None:
        record(buffer.getvalue())
    return write_bytes(location, buffer.getvalue())  # an Arrow buffer: no copy


def read_bytes(location: str) -> bytes:
    """The whole content of the file at `location`."""
    import pyarrow as pa

    if not is_remote(location):
        with open(_local(location), "rb") as f:
            return f.read()
    filesystem, path = _resolve(location)
    try:
        with filesystem.open_input_stream(path) as stream:
            return stream.read()
    except (OSError, pa.ArrowException) as e:
        raise OSError(f"reading {location}: {_scrub(str(e))}") from None


def read_parquet(location: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The Parquet file at `location` (only `columns`, when given)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not is_remote(location):
        return pq.read_table(_local(location), columns=list(columns) if columns is not None else None)
    filesystem, path = _resolve(location)
    try:
        return pq.read_table(path, filesystem=filesystem, columns=list(columns) if columns is not None else None)
    except (OSError, pa.ArrowException) as e:
        raise OSError(f"reading {location}: {_scrub(str(e))}") from None


def file_signature(location: str) -> tuple[int, int] | None:
    """(size in bytes, modification time in ns) of the file at `location`, None when there is none: what
    `groundwatch compact` compares to know a file is unchanged since it read it.

    A folder gives the filesystem's own modification time (ns on Linux). S3 gives the object's Last-Modified,
    to the second: an object replaced within the second it was written, by one of the same size, keeps its
    signature (the lake's names are hashes of the rows' keys, so such a replacement holds the same keys).
    """
    import pyarrow.fs as pafs

    info = _info(location)
    if info.type != pafs.FileType.File:
        return None
    return info.size, info.mtime_ns or 0


def remove_file(location: str) -> bool:
    """Remove one file (or object); False when it was already gone."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    if not is_remote(location):
        try:
            os.remove(_local(location))
        except FileNotFoundError:
            return False
        return True
    filesystem, path = _resolve(location)
    try:
        # An S3 delete of a missing key succeeds: ask first, so the answer means something.
        if filesystem.get_file_info(path).type != pafs.FileType.File:
            return False
        filesystem.delete_file(path)
    except FileNotFoundError:
        return False
    except (OSError, pa.ArrowException) as e:
        raise OSError(f"removing {location}: {_scrub(str(e))}") from None
    return True


def relative(location: str, base: str) -> str:
    """`location` (a path or URI under `base`) relative to `base`, with `/` between its parts."""
    if not is_remote(base):
        return os.path.relpath(_local(location), _local(base))
    return normalize(location).removeprefix(normalize(base) + "/")


def remove_tree(location: str) -> None:
    """Remove the folder (or every object under the prefix) at `location`; nothing when it does not exist."""
    import pyarrow.fs as pafs

    if not is_remote(location):
        import shutil

        shutil.rmtree(_local(location), ignore_errors=True)
        return
    filesystem, path = _resolve(location)
    if filesystem.get_file_info(path).type == pafs.FileType.Directory:
        filesystem.delete_dir(path)


@functools.cache
def _fsspec_class(scheme: str) -> type:
    from fsspec.implementations.arrow import ArrowFSWrapper

    # DuckDB routes a path to a registered filesystem by its protocol: the wrapper must claim the lake's scheme.
    return type(f"GroundwatchArrowFS_{scheme}", (ArrowFSWrapper,), {"protocol": (scheme,)})


def attach_duckdb(con, location: str) -> None:
    """Let `con` read the files of a remote lake (`read_parquet('s3://...')`); nothing to do for a local one.

    Call it before `SET enable_external_access = false`; with the lake's prefix in `allowed_directories`, the
    connection then reads the lake and nothing else.
    """
    if not is_remote(location):
        return
    scheme = urlsplit(location).scheme
    if any(name == scheme or scheme in name.split(",") for name in con.list_filesystems()):
        return
    filesystem, _ = _resolve(location)
    con.register_filesystem(_fsspec_class(scheme)(filesystem))
