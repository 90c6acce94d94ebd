"""Temporary files that a killed writer left in the lake, found and removed when the next run starts.

The writer publishes each Parquet file by writing a hidden `.<stem>.<uuid>.tmp` beside it and renaming it into
place. A SIGKILL between the two leaves the temporary file behind; no reader ever sees it (its name matches no
reader's glob), but it would stay forever. A run into the lake calls `remove_stale_temporaries` first.

A temporary file is stale when it was last written more than `STALE_TEMP_SECONDS` before the run started: a
live writer rewrites its temporary file continuously until the rename (a bundle's file takes well under a
second), so one untouched for a minute belongs to no running writer, even when two runs share a lake.

A writer killed after the lake's manifest listed its file but before the rename leaves a temporary file that
holds exactly the bytes the manifest lists: that one is renamed into place instead (the publish completes),
so the lake and its manifest agree again (`transforms.io.lake.manifest_check.roll_forward`).

A lake in object storage has none: each file is one upload under its final name, which appears only once the
upload completes (`transforms.io.lake.filesystem.write_parquet`).
"""

from __future__ import annotations

import os
import re
import time

from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import hmac_key
from transforms.io.lake.manifest_check import ChainState, replay, roll_forward

__all__ = ["STALE_TEMP_SECONDS", "remove_stale_temporaries"]

STALE_TEMP_SECONDS = 60.0
"""How long a temporary file must have been untouched, before the run started, to count as left behind."""

_TEMP_NAME = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


def remove_stale_temporaries(lake_dir: str, *, started_at: float | None = None) -> int:
    """Remove the writer's temporary files under `lake_dir` untouched since `STALE_TEMP_SECONDS` before
    `started_at` (epoch seconds; default now); returns how many were removed (or published, when the lake's
    manifest lists them: see above). A lake that does not exist yet, or one in object storage, has none."""
    if lakefs.is_remote(lake_dir) or not os.path.isdir(lake_dir):
        return 0
    cutoff = (time.time() if started_at is None else started_at) - STALE_TEMP_SECONDS
    removed = 0
    chain = None
    for folder, _, files in os.walk(lake_dir):
        for name in files:
            path = os.path.join(folder, name)
            if not _TEMP_NAME.match(name):
                continue
            try:
                if os.stat(path).st_mtime < cutoff:
                    chain = chain or _chain(lake_dir)
                    if not roll_forward(lake_dir, path, chain):
                        os.remove(path)
                    removed += 1
            except FileNotFoundError:  # another run removed or published it meanwhile
                continue
    return removed


def _chain(lake_dir: str) -> ChainState:
    """The lake's manifest replayed (read once per cleanup, and only when a stale temporary file exists)."""
    return replay(os.path.abspath(lake_dir), hmac_key())
