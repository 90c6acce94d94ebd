"""The lake's manifest: a hash chain of entries, one per publish, that lets `groundwatch verify-lake` prove
that no file of the lake was changed, removed or added behind its back.

Every publish of a lake file (`write_lake_parquet`: the writer's files, compaction's, the rollups) appends
one entry to `<lake>/_manifest/` before the file appears under its final name:

    write_lake_parquet(location, table)              # filesystem.write_parquet, with the entry first
    record = publish_recorder(location, table)      # the hook itself: None outside a lake's table folders
    record(temp_path_or_bytes)                       # appends the entry; then the file is renamed/uploaded
    record_removal(lake, [path, ...])                # before files are removed (compaction, drift --recompute)

An entry is one JSON file, `_manifest/<seq, 12 digits>.json`, holding its `seq`, its `kind` (`add`;
`replace` when it removes files, naming them in `replaced`, as compaction does; `baseline` for the files a
lake held when its first entry was written), each file's path (relative to the lake), size, SHA-256, table
and rows, the run's id and command, the verifier versions of the rows, the time, and `prev`: the SHA-256 of
the previous entry's body. With `GROUNDWATCH_LAKE_HMAC_KEY` set (read from the environment only), an entry
also carries `hmac`: an HMAC-SHA256, under that key, of its body and of the previous entry's `hmac`, so one
who can write the lake but has no key cannot rebuild a consistent chain.

Two writers at once (Beam's workers, two commands) never fork the chain: an entry is created only if its
name is free (a hard link on a folder, which fails when the name exists; an S3 PUT with `If-None-Match: *`),
and a writer that finds its number taken reads that entry and tries the next number (detect and retry). One
chain, rather than one per writer, keeps a single head that a team can store outside the lake
(`verify-lake --print-head`) and a total order of publishes that verification replays.

On a folder the entry is written after the file's bytes are in its hidden temporary file and before the
rename: a writer killed in between leaves an entry naming a file that is still the temporary file, which
`verify-lake` reports as an interrupted publish (not tampering) and the next run's cleanup renames into place
(`roll_forward`). On object storage the entry precedes the upload.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest_store import create_exclusive

__all__ = [
    "COMMAND_VARIABLE",
    "DISABLE_VARIABLE",
    "ENTRY_NAME",
    "HMAC_VARIABLE",
    "MANIFEST_FOLDER",
    "RUN_ID_VARIABLE",
    "TEMP_NAME",
    "Entry",
    "FileRecord",
    "append_entry",
    "body_bytes",
    "data_file_place",
    "entry_hash",
    "entry_signature",
    "file_digest",
    "hmac_key",
    "lake_data_files",
    "parse_entry",
    "publish_recorder",
    "read_entries",
    "record_removal",
    "write_lake_parquet",
]

MANIFEST_FOLDER = "_manifest"
"""The folder of the chain's entries, at the lake's root (its name starts with `_`: no reader reads it)."""
HMAC_VARIABLE = "GROUNDWATCH_LAKE_HMAC_KEY"
"""The environment variable holding the key that signs entries (never a flag, a log line or a lake file)."""
RUN_ID_VARIABLE = "GROUNDWATCH_RUN_ID"
"""The run's id, set by the `groundwatch` command for itself and the workers it starts."""
COMMAND_VARIABLE = "GROUNDWATCH_COMMAND"
"""The command that runs (`audit`, `compact`...), set by the `groundwatch` command."""
DISABLE_VARIABLE = "GROUNDWATCH_LAKE_MANIFEST"
"""`off` writes no entries (the side-by-side cost benchmark); files written so are foreign to verify-lake."""

ENTRY_NAME = re.compile(r"^(\d{12})\.json$")
TEMP_NAME = re.compile(r"^\.(.+)\.[0-9a-f]{32}\.tmp$")
_PARTITION = (re.compile(r"^date=\d{4}-\d{2}-\d{2}$"), re.compile(r"^hour=\d{2}$"))
_PROCESS_RUN_ID = uuid.uuid4().hex


@dataclass(frozen=True)
class FileRecord:
    """One file as an entry lists it."""

    path: str
    """Relative to the lake, with `/` (`sentences/date=2026-11-29/hour=09/part-....parquet`)."""
    size: int
    sha256: str
    table: str
    rows: int


@dataclass(frozen=True)
class Entry:
    """One stored entry: its body (what is hashed), its signature, and the SHA-256 of its body."""

    seq: int
    body: dict[str, Any]
    hmac: str | None
    hash: str


def hmac_key() -> bytes | None:
    """The signing key from the environment, or None."""
    key = os.environ.get(HMAC_VARIABLE)
    return key.encode() if key else None


def body_bytes(body: dict[str, Any]) -> bytes:
    """The canonical bytes of an entry's body: what its hash and its HMAC cover."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def entry_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(body_bytes(body)).hexdigest()


def entry_signature(key: bytes, body: dict[str, Any], prev_hmac: str | None) -> str:
    """HMAC-SHA256 of the body and of the previous entry's HMAC (empty for the first entry)."""
    return hmac.new(key, body_bytes(body) + b"\x1e" + (prev_hmac or "").encode(), hashlib.sha256).hexdigest()


def file_digest(content: str | bytes | memoryview | Any) -> tuple[int, str]:
    """(size, SHA-256) of a local file's path, or of bytes (any buffer: a pyarrow Buffer too)."""
    digest = hashlib.sha256()
    if isinstance(content, str):
        size = 0
        with open(content, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
        return size, digest.hexdigest()
    view = memoryview(content)
    digest.update(view)
    return view.nbytes, digest.hexdigest()


def data_file_place(location: str) -> tuple[str, str] | None:
    """(lake, path relative to it) of a file in a table's partition folder (`<lake>/<table>/date=/hour=/f`),
    None for any other path (not a lake file: nothing to record)."""
    location = lakefs.normalize(location) if lakefs.is_remote(location) else os.path.abspath(location)
    parts = location.split("/")
    if len(parts) < 5 or not all(p.match(v) for p, v in zip(_PARTITION, parts[-3:-1], strict=True)):
        return None
    table = parts[-4]
    if not table or table[0] in "._":
        return None
    lake = "/".join(parts[:-4])
    if lakefs.is_remote(lake) and not urlsplit(lake).netloc:
        return None
    return lake, "/".join(parts[-4:])


def _disabled() -> bool:
    return os.environ.get(DISABLE_VARIABLE, "").lower() in ("off", "0", "false", "no")


def _versions(table: Any) -> list[str]:
    if "verifier_version" not in table.column_names:
        return []
    import pyarrow.compute as pc

    return sorted(str(v) for v in pc.unique(table["verifier_version"]).to_pylist() if v)


def publish_recorder(location: str, table: Any, replaces: Sequence[str] = ()) -> Callable[[Any], None] | None:
    """What `filesystem.write_parquet` calls with the file's content (a temporary file's path, or the bytes to
    upload) before the file appears: it appends the entry that lists it. None when `location` is not a lake
    file or the manifest is turned off."""
    place = None if _disabled() else data_file_place(location)
    if place is None:
        return None
    lake, path = place
    rows, versions = table.num_rows, _versions(table)
    replaced = [rel for p in replaces if (rel := _relative(lake, p))]

    def record(content: Any) -> None:
        size, digest = file_digest(content)
        files = [FileRecord(path, size, digest, path.split("/")[0], rows)]
        append_entry(lake, "replace" if replaced else "add", files, replaced=replaced, versions=versions)

    return record


def write_lake_parquet(location: str, table: Any, *, replaces: Sequence[str] = ()) -> str:
    """Publish a lake file whole (`filesystem.write_parquet`), listed in the lake's manifest before it appears
    (`replaces`: the files it is about to replace, as compaction's file does)."""
    return lakefs.write_parquet(location, table, record=publish_recorder(location, table, replaces))


def _relative(lake: str, location: str) -> str | None:
    place = data_file_place(location)
    return place[1] if place is not None and place[0] == lake else None


def record_removal(lake: str, locations: Iterable[str]) -> None:
    """Append a `replace` entry naming files about to be removed (none when there are none)."""
    if _disabled():
        return
    lake = _lake_root(lake)
    replaced = sorted(rel for p in locations if (rel := _relative(lake, p)))
    if replaced:
        append_entry(lake, "replace", [], replaced=replaced)


def _lake_root(lake: str) -> str:
    return lakefs.normalize(lake) if lakefs.is_remote(lake) else os.path.abspath(lake)


# -- the chain ---------------------------------------------------------------------------------------------


def _entries_folder(lake: str) -> str:
    return lakefs.join(lake, MANIFEST_FOLDER)


def _entry_location(lake: str, seq: int) -> str:
    return lakefs.join(_entries_folder(lake), f"{seq:012d}.json")


def parse_entry(seq: int, data: bytes) -> Entry:
    """An entry from its stored bytes; ValueError when they are not an entry."""
    stored = json.loads(data)
    if not isinstance(stored, dict) or not isinstance(stored.get("body"), dict):
        raise ValueError("not a manifest entry (no body)")
    signature = stored.get("hmac")
    return Entry(seq, stored["body"], signature if isinstance(signature, str) else None, entry_hash(stored["body"]))


def read_entries(lake: str) -> list[tuple[str, bytes]]:
    """Every file of the manifest folder as (name, bytes), sorted by name."""
    return [(loc.rsplit("/", 1)[-1], lakefs.read_bytes(loc)) for loc in lakefs.list_files(_entries_folder(lake))]


_heads: dict[str, Entry | None] = {}
_heads_lock = threading.Lock()


def _load_head(lake: str) -> Entry | None:
    names = [
        n for n in (loc.rsplit("/", 1)[-1] for loc in lakefs.list_files(_entries_folder(lake))) if ENTRY_NAME.match(n)
    ]
    if not names:
        return None
    seq = int(max(names)[:12])
    return parse_entry(seq, lakefs.read_bytes(_entry_location(lake, seq)))


def _read_entry(lake: str, seq: int) -> Entry | None:
    try:
        return parse_entry(seq, lakefs.read_bytes(_entry_location(lake, seq)))
    except (FileNotFoundError, OSError):
        return None


def append_entry(
    lake: str,
    kind: str,
    files: Sequence[FileRecord],
    *,
    replaced: Sequence[str] = (),
    versions: Sequence[str] = (),
) -> Entry:
    """Append one entry at the chain's head (detect and retry when another writer took its number)."""
    lake = _lake_root(lake)
    key = hmac_key()
    with _heads_lock:
        head = _heads[lake] if lake in _heads else _load_head(lake)
        if head is None:  # the lake's first entry: first list the files it already holds, if any
            head = _write_baseline(lake, key)
        while True:
            body = _body(head, kind, files, replaced, versions)
            signature = entry_signature(key, body, head.hmac if head else None) if key else None
            entry = Entry(body["seq"], body, signature, entry_hash(body))
            if _create(lake, entry):
                _heads[lake] = entry
                return entry
            # Another writer took this number: its entry is the new head; chain onto it.
            head = _read_entry(lake, body["seq"]) or _load_head(lake)


def _body(head: Entry | None, kind: str, files, replaced, versions) -> dict[str, Any]:
    return {
        "seq": 0 if head is None else head.seq + 1,
        "kind": kind,
        "files": [asdict(f) for f in files],
        "replaced": list(replaced),
        "run_id": os.environ.get(RUN_ID_VARIABLE) or _PROCESS_RUN_ID,
        "command": os.environ.get(COMMAND_VARIABLE) or "library",
        "verifier_versions": list(versions),
        "time": datetime.now(UTC).isoformat(timespec="microseconds"),
        "prev": head.hash if head is not None else None,
    }


def _write_baseline(lake: str, key: bytes | None) -> Entry | None:
    """The first entry of a lake that already holds files: it lists them, so that they are covered from now
    on (nothing proves what happened to them before). None (no entry) for a lake without files."""
    records = []
    for location in lake_data_files(lake):
        rel = lakefs.relative(location, lake).replace(os.sep, "/")
        size, digest = _digest_location(location)
        records.append(FileRecord(rel, size, digest, rel.split("/")[0], _rows(location)))
    if not records:
        return None
    body = _body(None, "baseline", records, [], [])
    entry = Entry(0, body, entry_signature(key, body, None) if key else None, entry_hash(body))
    if _create(lake, entry):
        return entry
    return _read_entry(lake, 0)


def _rows(location: str) -> int:
    import pyarrow.parquet as pq

    try:
        if lakefs.is_remote(location):
            import pyarrow as pa

            return pq.ParquetFile(pa.BufferReader(lakefs.read_bytes(location))).metadata.num_rows
        return pq.ParquetFile(location).metadata.num_rows
    except Exception:  # noqa: BLE001 - not Parquet: recorded with its hash, rows unknown
        return -1


def _digest_location(location: str) -> tuple[int, str]:
    return file_digest(location if not lakefs.is_remote(location) else lakefs.read_bytes(location))


def lake_data_files(lake: str) -> list[str]:
    """Every file of the lake that the chain covers: all but the manifest, the Evidently workspace and the
    writers' temporary files."""
    found = []
    for location in lakefs.list_files(lake):
        rel = lakefs.relative(location, lake).replace(os.sep, "/")
        top = rel.split("/", 1)[0]
        if top in (MANIFEST_FOLDER, "evidently") or TEMP_NAME.match(rel.rsplit("/", 1)[-1]):
            continue
        found.append(location)
    return found


def _stored_bytes(entry: Entry) -> bytes:
    stored: dict[str, Any] = {"body": entry.body}
    if entry.hmac is not None:
        stored["hmac"] = entry.hmac
    return json.dumps(stored, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def _create(lake: str, entry: Entry) -> bool:
    """Create the entry's file only if its name is free; False when another writer holds it."""
    return create_exclusive(_entry_location(lake, entry.seq), _stored_bytes(entry))
