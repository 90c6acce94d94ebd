"""Tamper attempts on a signed lake: each must be detected by `verify_lake` and named in its report.

One small real lake is built once for the module through the lake's own writer (the benchmark's synthetic
rows, two hours, duplicates), signed with an HMAC key, then compacted (so the chain holds `replace` entries
and rollups). Each attack works on its own copy of that lake and states the line `verify_lake` must print.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from collections.abc import Callable

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main as groundwatch
from tests.support.scripts import load_script
from transforms.io.lake.manifest import HMAC_VARIABLE, MANIFEST_FOLDER, body_bytes, entry_hash, entry_signature
from transforms.io.lake.manifest_check import parse_head, verify_lake
from transforms.io.lake.writer import write_rows_file, write_table

KEY = b"test-lake-key-0123456789"
bench = load_script("bench_lake")


@pytest.fixture(scope="module")
def signed_lake(tmp_path_factory) -> str:
    """Two hours of four tables (written, then `sentences` and `responses` compacted), signed with KEY."""
    lake = str(tmp_path_factory.mktemp("manifest") / "lake")
    saved = os.environ.get(HMAC_VARIABLE)
    os.environ[HMAC_VARIABLE] = KEY.decode()
    try:
        bench.build_lake(lake, 400, duplicates=0.1, sentences_per_hour=200)
        assert groundwatch(["compact", "--lake", lake, "--table", "sentences", "--table", "responses"]) == 0
    finally:
        if saved is None:
            del os.environ[HMAC_VARIABLE]
        else:
            os.environ[HMAC_VARIABLE] = saved
    return lake


@pytest.fixture
def lake(signed_lake, tmp_path) -> str:
    copy = str(tmp_path / "lake")
    shutil.copytree(signed_lake, copy)
    return copy


def _files(lake: str, pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.join(lake, pattern), recursive=True))


def _rel(lake: str, path: str) -> str:
    return os.path.relpath(path, lake)


def _entries(lake: str) -> list[str]:
    return sorted(glob.glob(os.path.join(lake, MANIFEST_FOLDER, "*.json")))


def _load(path: str) -> dict:
    with open(path, "rb") as f:
        return json.loads(f.read())


def _store(path: str, stored: dict) -> None:
    with open(path, "wb") as f:
        f.write(json.dumps(stored, sort_keys=True, separators=(",", ":")).encode() + b"\n")


def _flip(path: str, offset: int | None = None) -> None:
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        where = len(data) // 2 if offset is None else offset
        data[where] ^= 0x01
        f.seek(0)
        f.write(data)


def _part(lake: str, table: str = "claims", index: int = 0) -> str:
    return _files(lake, f"{table}/**/part-*.parquet")[index]


def _compacted(lake: str, table: str = "sentences") -> str:
    return _files(lake, f"{table}/**/compacted-*.parquet")[0]


def _rebuild(lake: str, key: bytes | None, change: Callable[[list[dict]], None] = lambda bodies: None) -> None:
    """Rewrite every entry with correct hashes (what one who can write the lake can do), signed with `key`."""
    paths = _entries(lake)
    bodies = [_load(p)["body"] for p in paths]
    change(bodies)
    prev_hash, prev_hmac = None, None
    for path, body in zip(paths, bodies, strict=True):
        body["prev"] = prev_hash
        stored: dict = {"body": body}
        if key is not None:
            stored["hmac"] = prev_hmac = entry_signature(key, body, prev_hmac)
        _store(path, stored)
        prev_hash = entry_hash(body)


def _sync_entry_to_file(lake: str, target: str) -> None:
    """Make the chain list `target`'s current bytes (hashes recomputed) without the key."""
    import hashlib

    rel = _rel(lake, target)
    with open(target, "rb") as f:
        data = f.read()

    def change(bodies: list[dict]) -> None:
        for body in bodies:
            for record in body["files"]:
                if record["path"] == rel:
                    record["size"], record["sha256"] = len(data), hashlib.sha256(data).hexdigest()

    _rebuild(lake, None, change)


def _other_rows_same_shape(lake: str) -> str:
    """Replace a claims file by a valid Parquet of other rows, same schema and row count."""
    target, donor = _part(lake, index=0), _part(lake, index=3)
    original = pq.read_table(target)
    other = pq.read_table(donor).slice(0, original.num_rows)
    assert other.num_rows == original.num_rows and other.schema == original.schema
    pq.write_table(other, target, compression="zstd")
    return target


def _move(lake: str, path: str, folder: str) -> str:
    os.makedirs(os.path.join(lake, folder), exist_ok=True)
    moved = os.path.join(lake, folder, os.path.basename(path))
    os.replace(path, moved)
    return moved


def _swap(a: str, b: str) -> None:
    os.replace(a, a + ".x")
    os.replace(b, a)
    os.replace(a + ".x", b)


def _edit_last(lake: str, change: Callable[[dict], None]) -> None:
    path = _entries(lake)[-1]
    stored = _load(path)
    change(stored["body"])
    _store(path, stored)


# Each attack changes the lake and returns the substrings one of the report's problems must hold.
ATTACKS: dict[str, Callable[[str], list[str]]] = {}


def attack(name: str):
    def register(fn):
        ATTACKS[name] = fn
        return fn

    return register


@attack("flip a byte in a Parquet file")
def _(lake):
    _flip(p := _part(lake))
    return ["modified:", _rel(lake, p), "SHA-256"]


@attack("flip a byte in a compacted file")
def _(lake):
    _flip(p := _compacted(lake))
    return ["modified:", _rel(lake, p)]


@attack("flip a byte of a file's footer")
def _(lake):
    _flip(p := _part(lake, "citations"), offset=os.path.getsize(_part(lake, "citations")) - 10)
    return ["modified:", _rel(lake, p)]


@attack("truncate a file")
def _(lake):
    p = _part(lake)
    os.truncate(p, os.path.getsize(p) // 2)
    return ["modified:", _rel(lake, p), "bytes; entry"]


@attack("truncate a file to nothing")
def _(lake):
    os.truncate(p := _compacted(lake, "responses"), 0)
    return ["modified:", _rel(lake, p), "0 bytes"]


@attack("append bytes to a file")
def _(lake):
    with open(p := _part(lake), "ab") as f:
        f.write(b"forged")
    return ["modified:", _rel(lake, p)]


@attack("replace a file by a valid Parquet of other rows, same schema and row count")
def _(lake):
    p = _other_rows_same_shape(lake)
    return ["modified:", _rel(lake, p)]


@attack("replace a file by a copy of another file of its table")
def _(lake):
    target, donor = _part(lake, index=0), _part(lake, index=1)
    shutil.copyfile(donor, target)
    return ["modified:", _rel(lake, target)]


@attack("edit a verdict and write the file again with the same rows")
def _(lake):
    import pyarrow as pa
    import pyarrow.compute as pc

    p = _compacted(lake)
    rows = pq.read_table(p)
    column = rows.schema.get_field_index("attribution_verdict")
    verdicts = pc.if_else(pc.equal(rows["attribution_verdict"], "contradicted"), "fully_grounded", rows[column])
    pq.write_table(rows.set_column(column, "attribution_verdict", pa.array(verdicts)), p, compression="zstd")
    return ["modified:", _rel(lake, p)]


@attack("replace a rollup by a forged one")
def _(lake):
    p = _files(lake, "sentences/**/*.rollup")[0]
    rows = pq.read_table(p)
    pq.write_table(rows.slice(0, max(1, rows.num_rows - 1)), p)
    return ["modified:", _rel(lake, p)]


@attack("delete a file")
def _(lake):
    os.remove(p := _part(lake))
    return ["missing:", _rel(lake, p)]


@attack("delete a compacted file")
def _(lake):
    os.remove(p := _compacted(lake))
    return ["missing:", _rel(lake, p)]


@attack("delete a rollup")
def _(lake):
    os.remove(p := _files(lake, "sentences/**/*.rollup")[0])
    return ["missing:", _rel(lake, p)]


@attack("delete an hour of a table")
def _(lake):
    folder = os.path.dirname(_part(lake))
    shutil.rmtree(folder)
    return ["missing:", _rel(lake, folder)]


@attack("delete a whole table")
def _(lake):
    shutil.rmtree(os.path.join(lake, "citations"))
    return ["missing: citations/"]


@attack("add a file to a partition")
def _(lake):
    p = os.path.join(os.path.dirname(_part(lake)), "part-forged.parquet")
    shutil.copyfile(_part(lake, index=1), p)
    return ["foreign:", _rel(lake, p)]


@attack("add a partition")
def _(lake):
    p = os.path.join(lake, "claims", "date=2026-12-01", "hour=00", "part-new.parquet")
    os.makedirs(os.path.dirname(p))
    shutil.copyfile(_part(lake), p)
    return ["foreign:", _rel(lake, p)]


@attack("add a table")
def _(lake):
    p = os.path.join(lake, "reviews", "date=2026-11-01", "hour=00", "part-x.parquet")
    os.makedirs(os.path.dirname(p))
    shutil.copyfile(_part(lake), p)
    return ["foreign:", _rel(lake, p)]


@attack("add a file at the lake's root")
def _(lake):
    shutil.copyfile(_part(lake), os.path.join(lake, "extra.parquet"))
    return ["foreign: extra.parquet"]


@attack("add a file to the manifest folder")
def _(lake):
    with open(os.path.join(lake, MANIFEST_FOLDER, "notes.txt"), "w") as f:
        f.write("hello")
    return ["foreign:", f"{MANIFEST_FOLDER}/notes.txt"]


@attack("move a file to another partition")
def _(lake):
    p = _part(lake)
    moved = _move(lake, p, os.path.join("claims", "date=2026-11-01", "hour=05"))
    return ["missing:", _rel(lake, p), "foreign:", _rel(lake, moved)]


@attack("move a file to another table")
def _(lake):
    p = _part(lake)
    parts = _rel(lake, p).split(os.sep)
    moved = _move(lake, p, os.path.join("citations", *parts[1:3]))
    return ["missing:", _rel(lake, p), "foreign:", _rel(lake, moved)]


@attack("rename a file in its partition")
def _(lake):
    p = _part(lake)
    os.replace(p, p.replace("part-", "part-0"))
    return ["missing:", _rel(lake, p)]


@attack("swap two files of a table")
def _(lake):
    a, b = _part(lake, index=0), _part(lake, index=3)
    _swap(a, b)
    return ["modified:", _rel(lake, a)]


@attack("restore a file compaction replaced, with other bytes")
def _(lake):
    entry = next(_load(p)["body"] for p in _entries(lake) if _load(p)["body"]["replaced"])
    gone = os.path.join(lake, entry["replaced"][0])
    shutil.copyfile(_compacted(lake), gone)
    return ["foreign:", entry["replaced"][0]]


@attack("edit a file and the entry listing it (no key)")
def _(lake):
    _flip(p := _part(lake))
    _sync_entry_to_file(lake, p)
    return ["break:", "not signed"]


@attack("edit a file and its entry, rebuild the chain signed with another key")
def _(lake):
    _flip(_part(lake))
    _sync_entry_to_file(lake, _part(lake))
    _rebuild(lake, b"a-guessed-key")
    return ["break:", "wrong HMAC"]


@attack("rebuild the chain without the key")
def _(lake):
    _rebuild(lake, None)
    return ["break: entry 0 is not signed"]


@attack("edit a manifest entry")
def _(lake):
    path = _entries(lake)[3]
    stored = _load(path)
    stored["body"]["files"][0]["rows"] += 1
    _store(path, stored)
    return ["break: entry 4 does not chain onto entry 3"]


@attack("edit the last entry")
def _(lake):
    _edit_last(lake, lambda body: body.__setitem__("command", "forged"))
    last = len(_entries(lake)) - 1
    return [f"break: entry {last} has a wrong HMAC"]


@attack("reorder two entries")
def _(lake):
    paths = _entries(lake)
    _swap(paths[5], paths[6])
    return ["break: entry 5 holds seq 6"]


@attack("drop the last entry")
def _(lake):
    body = _load(path := _entries(lake)[-1])["body"]
    os.remove(path)
    listed = body["files"][0]["path"] if body["files"] else body["replaced"][0]
    return ["foreign:" if body["files"] else "", listed]


@attack("drop an entry in the middle")
def _(lake):
    os.remove(_entries(lake)[7])
    return ["break: entry 7 is missing (the next entry is 8)"]


@attack("duplicate an entry as the next one")
def _(lake):
    paths = _entries(lake)
    shutil.copyfile(paths[2], paths[3])
    return ["break: entry 3 holds seq 2"]


@attack("corrupt an entry's JSON")
def _(lake):
    with open(_entries(lake)[4], "r+b") as f:
        f.truncate(20)
    return ["break: entry 4 is not a valid entry"]


@attack("append a forged entry listing an added file")
def _(lake):
    import hashlib

    paths = _entries(lake)
    last = _load(paths[-1])["body"]
    forged = os.path.join(os.path.dirname(_part(lake)), "part-forged.parquet")
    shutil.copyfile(_part(lake, index=1), forged)
    with open(forged, "rb") as f:
        data = f.read()
    record = {"path": _rel(lake, forged), "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    body = dict(last, seq=last["seq"] + 1, prev=entry_hash(last), kind="add", replaced=[])
    body["files"] = [dict(record, table="claims", rows=1)]
    _store(os.path.join(lake, MANIFEST_FOLDER, f"{body['seq']:012d}.json"), {"body": body})
    return [f"break: entry {body['seq']} is not signed"]


@attack("remove a file and record the removal without the key")
def _(lake):
    p = _part(lake)
    rel = _rel(lake, p)
    os.remove(p)
    last = _load(_entries(lake)[-1])["body"]
    body = dict(last, seq=last["seq"] + 1, prev=entry_hash(last), kind="replace", files=[], replaced=[rel])
    _store(os.path.join(lake, MANIFEST_FOLDER, f"{body['seq']:012d}.json"), {"body": body, "hmac": "0" * 64})
    return [f"break: entry {body['seq']} has a wrong HMAC"]


@pytest.mark.parametrize("name", list(ATTACKS))
def test_each_tamper_attempt_is_detected_and_named(lake, name):
    assert verify_lake(lake, key=KEY).problems == []  # the copy is clean before the attack
    expected = [s for s in ATTACKS[name](lake) if s]
    problems = verify_lake(lake, key=KEY).problems
    assert problems, f"{name}: not detected"
    text = "\n".join(problems)
    assert all(part.replace(os.sep, "/") in text for part in expected), f"{name}: {text}"


def test_there_are_at_least_thirty_attacks():
    assert len(ATTACKS) >= 30


def test_without_the_key_a_consistent_rebuild_hides_an_edit_but_the_kept_head_does_not(lake):
    """What the key and the head each add: a writer without the key who rebuilds the chain passes a keyless
    check, fails a keyed one, and fails `--expect-head` of the head kept before."""
    head = verify_lake(lake, key=KEY).head
    _flip(p := _part(lake))
    _sync_entry_to_file(lake, p)
    assert verify_lake(lake).problems == []
    assert any("not signed" in line for line in verify_lake(lake, key=KEY).problems)
    problems = verify_lake(lake, expect_head=parse_head(head)).problems
    assert any("is not the expected head" in line for line in problems)


def test_dropping_the_last_publish_whole_is_caught_by_the_kept_head_only(lake):
    head = parse_head(verify_lake(lake, key=KEY).head)
    body = _load(path := _entries(lake)[-1])["body"]
    os.remove(path)
    for record in body["files"]:
        os.remove(os.path.join(lake, record["path"]))
    assert verify_lake(lake, key=KEY).problems == []
    assert verify_lake(lake, key=KEY, expect_head=head).problems == [
        f"break: the chain ends at entry {head[0] - 1}, before the expected head {head[0]} (dropped)"
    ]


def test_a_later_publish_extends_the_kept_head(lake, monkeypatch):
    monkeypatch.setenv(HMAC_VARIABLE, KEY.decode())
    head = parse_head(verify_lake(lake, key=KEY).head)
    write_table(lake, "claims", [], name="nothing")  # no rows: no file, no entry
    write_rows_file(os.path.dirname(_part(lake)), "later", "claims", pq.read_table(_part(lake)).slice(0, 2))
    report = verify_lake(lake, key=KEY, expect_head=head)
    assert report.problems == [] and parse_head(report.head)[0] == head[0] + 1


def test_entry_bytes_are_canonical():
    assert body_bytes({"b": 1, "a": [1, "x"]}) == b'{"a":[1,"x"],"b":1}'


def test_since_and_sample_hash_fewer_files_but_check_every_size(lake):
    """What `--since` and `--sample` prove: an edit of the same size in a file listed before `since` goes
    unseen (documented), one that changes the size never does."""
    from datetime import UTC, datetime, timedelta

    later = datetime.now(UTC) + timedelta(days=1)
    _flip(flipped := _part(lake, index=0))
    report = verify_lake(lake, key=KEY, since=later)
    assert report.problems == [] and report.hashed == 0
    assert [line.split(" (")[0] for line in verify_lake(lake, key=KEY).problems] == [f"modified: {_rel(lake, flipped)}"]
    os.truncate(cut := _part(lake, index=1), 100)
    assert any(_rel(lake, cut) in line for line in verify_lake(lake, key=KEY, since=later).problems)
    assert any(_rel(lake, cut) in line for line in verify_lake(lake, key=KEY, sample=0.01).problems)
