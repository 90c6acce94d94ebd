"""The benchmark's synthetic lake (`scripts/bench_lake.py`, written through the lake's writer), small: the lake
of the compaction, rollup and bucket tests.

Three hours of each table, each hour 1/50 of the benchmark's; two files an hour and a third holding 5% of the
responses again, audited later, as a stream restarted from its last commit writes them. It is built once per
session (`built_small_lake`); a test that changes it takes its own copy (`small_lake`).
"""

from __future__ import annotations

import shutil

import pytest

from tests.support.scripts import load_script

__all__ = ["FIGURES", "SENTENCES", "build_small_lake", "built_small_lake", "small_lake"]

bench = load_script("bench_lake")
SENTENCES = 3 * bench.SENTENCES_PER_HOUR // 50
"""The sentence rows of the lake, one per key (the files hold 5% of the responses' sentences twice)."""

FIGURES = (
    "SELECT count(*), count(DISTINCT (response_id, sentence_index)), round(sum(confidence), 6), max(audited_at) "
    "FROM sentences"
)
"""What the `sentences` view says of the lake; compaction must not change it."""


def build_small_lake(lake: str) -> dict[str, int]:
    """Write the small lake at `lake` (a folder or an `s3://` prefix); returns the files and rows per table."""
    return bench.build_lake(lake, SENTENCES, duplicates=0.05, sentences_per_hour=bench.SENTENCES_PER_HOUR // 50)


@pytest.fixture(scope="session")
def built_small_lake(tmp_path_factory) -> str:
    """The small lake, as written; never changed (copy it with `small_lake`)."""
    lake = str(tmp_path_factory.mktemp("bench-lake") / "lake")
    build_small_lake(lake)
    return lake


@pytest.fixture
def small_lake(built_small_lake, tmp_path) -> str:
    """A copy of the small lake for one test to change."""
    copy = str(tmp_path / "lake")
    shutil.copytree(built_small_lake, copy)
    return copy
