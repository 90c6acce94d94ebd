"""Checking a lake against its manifest (`transforms.io.lake.manifest`): what `groundwatch verify-lake` runs.

    report = verify_lake("/data/lake", key=hmac_key())        # or s3://bucket/prefix
    report.problems            # one line per modified, missing or foreign file and per break of the chain
    report.notes               # what is not tampering: temporary files, interrupted publishes, pre-manifest files
    report.head                # "SEQ:SHA256" of the last entry

The chain is replayed from entry 0: each entry must be named by its `seq`, hold the SHA-256 of the previous
entry's body in `prev` and, with the key, carry a valid HMAC. Replaying the entries gives the files the lake
must hold now (an `add` lists files, a `replace` first removes the files it names); each must be present with
its size and SHA-256, and every other data file is foreign. A file an entry removed that is still present
with bytes the chain once recorded for it is left over from an interrupted compaction (a note: the next
compaction removes it), and a writer's temporary file is a note too; a temporary file holding the exact
bytes an entry lists for a missing file is an interrupted publish, which the next run's cleanup completes
(`roll_forward`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import (
    ENTRY_NAME,
    MANIFEST_FOLDER,
    TEMP_NAME,
    Entry,
    entry_signature,
    file_digest,
    parse_entry,
    read_entries,
)

__all__ = ["ChainState", "Report", "head_text", "lineage", "parse_head", "replay", "roll_forward", "verify_lake"]

_KINDS = ("add", "replace", "baseline")
_FILE_FIELDS = {"path": str, "size": int, "sha256": str, "table": str, "rows": int}


@dataclass
class ChainState:
    """The chain replayed: its entries by seq, the files it says the lake holds, and what broke."""

    entries: dict[int, Entry] = field(default_factory=dict)
    current: dict[str, tuple[dict, int]] = field(default_factory=dict)
    """Path -> (its file record, the seq of the entry that listed it last)."""
    history: dict[str, dict[str, int]] = field(default_factory=dict)
    """Path -> every SHA-256 the chain recorded for it -> the seq that recorded it."""
    removed_by: dict[str, int] = field(default_factory=dict)
    sources: dict[tuple[str, int], list[tuple[str, int]]] = field(default_factory=dict)
    """(file, seq of the replace entry that listed it) -> the (file, seq) it replaced."""
    breaks: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)
    temporaries: list[str] = field(default_factory=list)

    @property
    def head(self) -> Entry | None:
        return self.entries[max(self.entries)] if self.entries else None


@dataclass
class Report:
    """What verification found: `problems` (exit 1 when any), `notes` (not tampering), the head."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    head: str | None = None
    files: int = 0
    hashed: int = 0
    entries: int = 0


def _valid_body(body: dict) -> str | None:
    """Why a body is not a well-formed entry, or None."""
    if body.get("kind") not in _KINDS:
        return f"unknown kind {body.get('kind')!r}"
    files, replaced = body.get("files"), body.get("replaced")
    if not isinstance(files, list) or not isinstance(replaced, list):
        return "files or replaced is not a list"
    for record in files:
        if not isinstance(record, dict) or any(not isinstance(record.get(k), t) for k, t in _FILE_FIELDS.items()):
            return "a file record lacks a field"
    if not all(isinstance(r, str) for r in replaced):
        return "a replaced path is not a string"
    return None


def replay(lake: str, key: bytes | None) -> ChainState:
    """Walk the chain from entry 0, checking names, links and (with `key`) signatures."""
    state = ChainState()
    expected, prev_hash, prev_hmac = 0, None, None
    for name, data in read_entries(lake):
        if TEMP_NAME.match(name):
            state.temporaries.append(f"{MANIFEST_FOLDER}/{name}")
            continue
        if not ENTRY_NAME.match(name):
            state.foreign.append(f"{MANIFEST_FOLDER}/{name}")
            continue
        seq = int(name[:12])
        if seq != expected:
            state.breaks.append(f"entry {expected} is missing (the next entry is {seq})")
        expected = seq + 1
        try:
            entry = parse_entry(seq, data)
        except (ValueError, UnicodeDecodeError) as error:
            state.breaks.append(f"entry {seq} is not a valid entry ({str(error).splitlines()[0][:80]})")
            prev_hash = prev_hmac = "unreadable"
            continue
        _check_links(state, entry, prev_hash, prev_hmac, key)
        prev_hash, prev_hmac = entry.hash, entry.hmac
        state.entries[seq] = entry
        _apply(state, entry)
    return state


def _check_links(state: ChainState, entry: Entry, prev_hash, prev_hmac, key: bytes | None) -> None:
    seq, body = entry.seq, entry.body
    if body.get("seq") != seq:
        state.breaks.append(f"entry {seq} holds seq {body.get('seq')} (entries moved or reordered)")
    if prev_hash != "unreadable" and body.get("prev") != prev_hash:
        previous = "none" if seq == 0 else f"entry {seq - 1}"
        state.breaks.append(f"entry {seq} does not chain onto {previous} (its prev hash differs: an entry edited)")
    if (reason := _valid_body(body)) is not None:
        state.breaks.append(f"entry {seq} is malformed: {reason}")
    elif body["kind"] == "baseline" and seq != 0:
        state.breaks.append(f"entry {seq} is a baseline entry, which only entry 0 may be")
    if key is not None:
        if entry.hmac is None:
            state.breaks.append(f"entry {seq} is not signed (GROUNDWATCH_LAKE_HMAC_KEY is set)")
        elif prev_hmac != "unreadable" and entry.hmac != entry_signature(key, body, prev_hmac):
            state.breaks.append(f"entry {seq} has a wrong HMAC (edited, or written without the key)")


def _apply(state: ChainState, entry: Entry) -> None:
    if _valid_body(entry.body) is not None:
        return
    replaced = [(p, state.current[p][1]) for p in entry.body["replaced"] if p in state.current]
    for path in entry.body["replaced"]:
        state.current.pop(path, None)
        state.removed_by[path] = entry.seq
    for record in entry.body["files"]:
        state.current[record["path"]] = (record, entry.seq)
        state.removed_by.pop(record["path"], None)
        state.history.setdefault(record["path"], {})[record["sha256"]] = entry.seq
        if replaced:
            state.sources[(record["path"], entry.seq)] = replaced


def parse_head(text: str) -> tuple[int, str]:
    """`SEQ:SHA256` as `--print-head` prints it; ValueError otherwise."""
    seq, _, digest = text.strip().partition(":")
    if not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a head (SEQ:SHA256, as --print-head prints it): {text!r}")
    return int(seq), digest


def head_text(entry: Entry | None) -> str | None:
    return None if entry is None else f"{entry.seq}:{entry.hash}"


def _check_head(state: ChainState, expect: tuple[int, str], report: Report) -> None:
    seq, digest = expect
    if seq not in state.entries:
        last = max(state.entries) if state.entries else -1
        report.problems.append(f"break: the chain ends at entry {last}, before the expected head {seq} (dropped)")
    elif state.entries[seq].hash != digest:
        report.problems.append(f"break: entry {seq} is not the expected head (the chain was rewritten)")


def _lake_files(lake: str) -> tuple[dict[str, str], list[str]]:
    """The lake's data files by relative path, and its writers' temporary files (relative)."""
    data, temporaries = {}, []
    for location in lakefs.list_files(lake):
        rel = lakefs.relative(location, lake).replace(os.sep, "/")
        top, base = rel.split("/", 1)[0], rel.rsplit("/", 1)[-1]
        if top in (MANIFEST_FOLDER, "evidently"):
            continue
        if TEMP_NAME.match(base):
            temporaries.append(rel)
        else:
            data[rel] = location
    return data, temporaries


def _temp_target(rel_temp: str) -> str:
    """The final path a writer's temporary file was to be renamed to."""
    folder, base = rel_temp.rsplit("/", 1) if "/" in rel_temp else ("", rel_temp)
    stem = TEMP_NAME.match(base).group(1)  # type: ignore[union-attr]
    name = stem if stem.endswith(".rollup") else f"{stem}.parquet"
    return f"{folder}/{name}" if folder else name


def _digest(location: str) -> tuple[int, str]:
    return file_digest(location if not lakefs.is_remote(location) else lakefs.read_bytes(location))


def verify_lake(
    lake: str,
    *,
    key: bytes | None = None,
    sample: float | None = None,
    since: datetime | None = None,
    expect_head: tuple[int, str] | None = None,
) -> Report:
    """Check the chain and every file of the lake (only a `sample` fraction, or the files listed since `since`,
    are hashed; every file's presence and size are checked)."""
    lake = lakefs.normalize(lake)
    state = replay(lake, key)
    report = Report(head=head_text(state.head), entries=len(state.entries))
    report.problems += [f"break: {line}" for line in state.breaks]
    report.problems += [f"foreign: {path} (not an entry of the manifest)" for path in state.foreign]
    report.notes += [
        f"temporary: {path} (an entry being written when its writer stopped)" for path in state.temporaries
    ]
    if expect_head is not None:
        _check_head(state, expect_head, report)
    data, temporaries = _lake_files(lake)
    report.files = len(data)
    if not state.entries:
        if data:
            report.notes.append(
                f"no manifest: the lake's {len(data)} files were written before it kept one; nothing proves they "
                "are unchanged (the next run that writes the lake records them in a baseline entry)"
            )
        return report
    _baseline_note(state, report)
    interrupted = _interrupted(lake, state, data, temporaries, report)
    choose = _chooser(state, sample, since)
    for path, (record, seq) in sorted(state.current.items()):
        if path in data:
            _check_file(data[path], path, record, seq, choose(path, seq), report)
        elif path not in interrupted:
            report.problems.append(f"missing: {path} (listed by entry {seq})")
    for path in sorted(set(data) - set(state.current)):
        _unlisted(data[path], path, state, report)
    return report


def _baseline_note(state: ChainState, report: Report) -> None:
    first = state.entries.get(0)
    if first is not None and first.body.get("kind") == "baseline":
        report.notes.append(
            f"baseline: entry 0 ({first.body.get('time')}) lists the {len(first.body['files'])} files the lake held "
            "when its manifest began; they are proven unchanged since then, not before"
        )


def _interrupted(lake: str, state: ChainState, data: dict, temporaries: list[str], report: Report) -> set[str]:
    """Listed files still in their temporary file (a writer killed before its rename); notes for every temp."""
    found = set()
    for rel in sorted(temporaries):
        target = _temp_target(rel)
        listed = state.current.get(target)
        if listed is not None and target not in data:
            if _digest(lakefs.join(lake, rel))[1] == listed[0]["sha256"]:
                found.add(target)
                report.notes.append(
                    f"interrupted publish: {target} (listed by entry {listed[1]}) is still {rel}; "
                    "the next run's cleanup publishes it"
                )
                continue
        report.notes.append(f"temporary: {rel} (left by a stopped writer; the next run's cleanup removes it)")
    return found


def _chooser(state: ChainState, sample: float | None, since: datetime | None) -> Callable[[str, int], bool]:
    """Which files to hash: all; a random `sample` fraction; or those listed at or after `since`."""
    if since is not None:
        after = {seq for seq, e in state.entries.items() if (when := _entry_time(e)) is None or when >= since}
        return lambda path, seq: seq in after
    if sample is not None:
        return lambda path, seq: secrets.randbelow(1_000_000) < sample * 1_000_000
    return lambda path, seq: True


def _entry_time(entry: Entry) -> datetime | None:
    try:
        return datetime.fromisoformat(entry.body.get("time", ""))
    except (TypeError, ValueError):
        return None


def _check_file(location: str, path: str, record: dict, seq: int, hash_it: bool, report: Report) -> None:
    signature = lakefs.file_signature(location)
    size = signature[0] if signature else -1
    if size != record["size"]:
        report.problems.append(f"modified: {path} ({size} bytes; entry {seq} lists {record['size']})")
    elif hash_it:
        report.hashed += 1
        if _digest(location)[1] != record["sha256"]:
            report.problems.append(f"modified: {path} (its SHA-256 differs from entry {seq}'s)")


def _unlisted(location: str, path: str, state: ChainState, report: Report) -> None:
    known = state.history.get(path)
    if known and path in state.removed_by and _digest(location)[1] in known:
        report.notes.append(
            f"left over: {path} was removed by entry {state.removed_by[path]} and is still present with bytes the "
            "chain recorded (an interrupted compaction; the next compaction removes it)"
        )
        return
    report.problems.append(f"foreign: {path} (in no entry of the manifest)")


def lineage(state: ChainState, path: str) -> list[tuple[str, int]]:
    """The files added by `add`/`baseline` entries whose rows a current file holds, through the compactions
    that replaced them: (path, seq of the entry that listed it)."""
    if path not in state.current:
        return []
    leaves: list[tuple[str, int]] = []
    pending = [(path, state.current[path][1])]
    while pending:
        node = pending.pop()
        parents = state.sources.get(node)
        if parents:
            pending.extend(parents)
        elif node[0] != path:
            leaves.append(node)
    return sorted(set(leaves))


def roll_forward(lake: str, temp_location: str, state: ChainState) -> bool:
    """Rename a writer's temporary file into place when the chain lists its final path with exactly its bytes
    and the final file is missing (a writer killed between its entry and its rename). False otherwise."""
    rel_temp = lakefs.relative(temp_location, lake).replace(os.sep, "/")
    target = _temp_target(rel_temp)
    listed = state.current.get(target)
    final = os.path.join(lake, *target.split("/"))
    if listed is None or os.path.exists(final) or file_digest(temp_location)[1] != listed[0]["sha256"]:
        return False
    os.replace(temp_location, final)
    return True
