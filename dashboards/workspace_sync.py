"""The Evidently workspace of a lake in object storage: kept in the bucket, under `<lake>/evidently/`.

Evidently reads and writes a workspace as a local folder. A lake in a bucket keeps its workspace beside its
tables all the same, so that `groundwatch ui` on any machine shows what `groundwatch drift` on another added:

    with local_copy(lake, snapshots=False) as copy:   # the project's objects, fetched into a temporary folder
        board = GroundwatchWorkspace.open(lake, path=copy.folder)
        ...                                  # snapshots added to the copy
        copy.push()                          # the files new or changed since the fetch, one upload each

Each file is uploaded whole (`transforms.io.lake.filesystem.write_bytes`): a reader never gets part of one.
Snapshots go up before the project's own files (deeper paths first), so a copy fetched while a drift run
pushes may miss the newest snapshots, never holds a project naming snapshots it lacks. `groundwatch ui` serves
a copy fetched when it starts: snapshots added later show after a restart.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from evidently.ui.service.storage.local.base import SNAPSHOTS

from dashboards.workspace import workspace_path
from transforms.io.lake import filesystem as lakefs

__all__ = ["WorkspaceCopy", "local_copy"]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass
class WorkspaceCopy:
    """A local copy of a lake's workspace: `folder`, and what each file held when it was fetched."""

    lake_dir: str
    folder: str
    snapshots: bool = True
    """Whether the copy holds the snapshots: a server shows them; adding one needs only the project's files."""
    fetched: dict[str, str] = field(default_factory=dict)
    """Relative path -> sha256 of the file as fetched."""

    def pull(self) -> int:
        """Fetch the objects of the workspace (without the snapshots, unless `snapshots`) into the folder;
        returns how many."""
        location = workspace_path(self.lake_dir)
        for remote in lakefs.list_files(location):
            relative = lakefs.relative(remote, location)
            if not self.snapshots and f"/{SNAPSHOTS}/" in f"/{relative}":
                continue
            data = lakefs.read_bytes(remote)
            local = os.path.join(self.folder, *relative.split("/"))
            os.makedirs(os.path.dirname(local), exist_ok=True)
            with open(local, "wb") as f:
                f.write(data)
            self.fetched[relative] = _digest(data)
        return len(self.fetched)

    def push(self) -> int:
        """Upload the files of the folder that are new or changed since the fetch; returns how many."""
        location = workspace_path(self.lake_dir)
        changed = []
        for root, _, files in os.walk(self.folder):
            for name in files:
                local = os.path.join(root, name)
                relative = os.path.relpath(local, self.folder).replace(os.sep, "/")
                with open(local, "rb") as f:
                    data = f.read()
                if self.fetched.get(relative) != _digest(data):
                    changed.append((relative, data))
        # Deeper paths (snapshots) before the project's files that name them.
        for relative, data in sorted(changed, key=lambda item: (-item[0].count("/"), item[0])):
            lakefs.write_bytes(lakefs.join(location, relative), data)
            self.fetched[relative] = _digest(data)
        return len(changed)


@contextmanager
def local_copy(lake_dir: str, *, snapshots: bool = True) -> Iterator[WorkspaceCopy]:
    """A fetched copy of the workspace of a lake in object storage, in a temporary folder removed afterwards.

    `snapshots=False` leaves the snapshots in the bucket: a drift run adds to them, and fetching every window's
    snapshot on every run (the monitor's drift stage runs every 30 s) would grow with the lake's age."""
    folder = tempfile.mkdtemp(prefix="groundwatch-evidently-")
    try:
        copy = WorkspaceCopy(lake_dir, folder, snapshots)
        copy.pull()
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)
