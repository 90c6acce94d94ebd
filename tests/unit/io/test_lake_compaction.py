"""Duplicates removed once: `groundwatch compact`, views that read clean partitions straight, and pruning.

The lakes here are the benchmark's synthetic lakes (`scripts/bench_lake.py`, written through the lake's
writer), small: three hours of each table, two files an hour and a third holding 5% of the responses again,
audited later, as a stream restarted from its last commit writes them.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from datetime import timedelta

import duckdb
import pyarrow.parquet as pq
import pytest

from dashboards.readonly import open_readonly
from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.compact import compact_table
from schemas import TABLES
from schemas.lake import duckdb_columns
from tests.support.bench_lakes import FIGURES, SENTENCES
from transforms.io.lake.reader import COMPACTED_PREFIX, table_sql
from transforms.io.lake.writer import write_table


@pytest.fixture
def lake(small_lake) -> str:
    return small_lake


def _files(lake: str, table: str) -> list[str]:
    return sorted(glob.glob(os.path.join(lake, table, "**", "*.parquet"), recursive=True))


def _ranks(lake: str, sql: str) -> bool:
    """Whether the query's plan ranks rows (a Window operator), on the read-only connection."""
    with open_readonly(lake) as con:
        return re.search(r"─ Window\b", con.execute(f"EXPLAIN {sql}").fetchall()[0][1]) is not None


def test_compact_leaves_one_file_per_partition_with_the_same_rows_and_no_ranking(lake, capsys):
    with connect_lake(lake) as con:
        before = con.execute(FIGURES).fetchone()
        raw = con.execute(f"SELECT count(*) FROM read_parquet('{lake}/sentences/**/*.parquet')").fetchone()[0]
    assert before[0] == before[1] == SENTENCES < raw  # the duplicates are in the files, not in the view
    assert _ranks(lake, "SELECT count(*) FROM sentences")

    assert groundwatch(["compact", "--lake", lake]) == 0
    out = capsys.readouterr().out
    assert f"sentences: 3 partitions, 3 compacted, 0 already clean; {raw:,} rows -> {SENTENCES:,}" in out
    assert "dead_letters" not in out  # a table whose copies may lie in another hour is left to the views

    files = _files(lake, "sentences")
    assert len(files) == 3 and all(os.path.basename(f).startswith(COMPACTED_PREFIX) for f in files)
    assert (
        duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{lake}/sentences/**/*.parquet')").fetchone()[0]
        == SENTENCES
    )
    with connect_lake(lake) as con:
        assert con.execute(FIGURES).fetchone() == before  # the later copies won: same max(audited_at)
    assert not _ranks(lake, "SELECT count(*) FROM sentences")  # read straight

    assert groundwatch(["compact", "--lake", lake, "--table", "sentences"]) == 0
    assert "3 partitions, 0 compacted, 3 already clean" in capsys.readouterr().out
    assert _files(lake, "sentences") == files


def test_a_file_written_into_a_clean_partition_is_ranked_with_it(lake):
    compact_table(lake, "responses")
    with connect_lake(lake) as con:
        first = con.execute("SELECT * EXCLUDE (date, hour) FROM responses ORDER BY response_id LIMIT 1").df()
    newer = first.iloc[0].to_dict()
    newer["tenant"], newer["audited_at"] = "tenant-rewritten", newer["audited_at"] + timedelta(days=1)
    newer = {k: (None if isinstance(v, float) and v != v else v) for k, v in newer.items()}
    newer = {k: (list(v) if hasattr(v, "tolist") else v) for k, v in newer.items()}
    write_table(lake, "responses", [newer], name="late-copy")
    with connect_lake(lake) as con:
        rows = con.execute(
            "SELECT count(*), count(DISTINCT response_id), count(*) FILTER (WHERE tenant = 'tenant-rewritten') "
            "FROM responses"
        ).fetchone()
    assert rows == (SENTENCES // 5, SENTENCES // 5, 1)


def test_a_compaction_stopped_before_removing_the_old_files_reads_the_same(lake):
    """Killed between publishing its file and removing the old ones: both are there, ranked, same rows."""
    with connect_lake(lake) as con:
        before = con.execute(FIGURES).fetchone()
    originals = _files(lake, "sentences")
    kept = {f: open(f, "rb").read() for f in originals}
    compact_table(lake, "sentences")
    for path, data in kept.items():  # the old files back beside the new ones
        with open(path, "wb") as f:
            f.write(data)
    with connect_lake(lake) as con:
        assert con.execute(FIGURES).fetchone() == before
    compact_table(lake, "sentences")  # and the next compaction converges
    assert len(_files(lake, "sentences")) == 3
    with connect_lake(lake) as con:
        assert con.execute(FIGURES).fetchone() == before


def _scan(lake: str, sql: str) -> tuple[int, int, int, int]:
    """(files read, files present, row groups read, row groups present) of the sentence scans of a query, from
    DuckDB's EXPLAIN ANALYZE run through `groundwatch query`."""
    with open_readonly(lake) as con:
        text = con.execute(f"EXPLAIN (ANALYZE, FORMAT json) {sql}").fetchall()[0][1]
    scans = [node for node in _nodes(json.loads(text)) if node.get("name") == "READ_PARQUET"]
    files_read = sum(int(s["extra_info"]["Total Files Read"]) for s in scans)
    groups = [(s.get("row_groups_scanned", 0), s.get("total_row_groups_to_scan", 0)) for s in scans]
    return files_read, len(_files(lake, "sentences")), sum(g[0] for g in groups), sum(g[1] for g in groups)


def _nodes(tree):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(node.get("children", []))
            stack.extend(v for k, v in node.items() if k == "operator" and isinstance(v, list))
        elif isinstance(node, list):
            stack.extend(node)


HOUR_FILTER = "SELECT count(*) FROM sentences WHERE date = DATE '2026-11-01' AND hour = 2"
TIME_FILTER = "SELECT count(*) FROM sentences WHERE event_time >= TIMESTAMPTZ '2026-11-01 02:00:00+00'"
WINDOW_FILTER = "SELECT count(*) FROM sentences WHERE window_start >= TIMESTAMPTZ '2026-11-01 02:00:00+00'"


@pytest.mark.parametrize("compacted", [False, True], ids=["as-written", "compacted"])
def test_time_filters_read_only_the_partitions_they_need(lake, compacted):
    if compacted:
        compact_table(lake, "sentences")
    per_hour = len(_files(lake, "sentences")) // 3
    files_read, present, _, _ = _scan(lake, HOUR_FILTER)
    assert (files_read, present) == (per_hour, 3 * per_hour)  # hive pruning: only hour 2's files are opened
    filters = [TIME_FILTER] + ([WINDOW_FILTER] if compacted else [])
    for sql in filters:
        # a filter on the time reaches the scan below the ranking; min/max statistics skip the other hours'
        # row groups (their footers are read, their data not)
        _, _, groups_read, groups_present = _scan(lake, sql)
        assert groups_read == per_hour and groups_present == 3 * per_hour, sql
    with connect_lake(lake) as con:
        assert con.execute(TIME_FILTER).fetchone()[0] == SENTENCES // 3


def test_compact_refuses_a_lake_that_does_not_exist(tmp_path, capsys):
    assert groundwatch(["compact", "--lake", str(tmp_path / "nope")]) == 2
    assert re.search(r"does not exist", capsys.readouterr().err)


def test_compacted_files_of_the_current_schema_are_read_without_union_by_name_older_ones_by_name(lake):
    compact_table(lake, "claims")
    con = duckdb.connect()
    sql = table_sql(con, TABLES["claims"], lake)
    assert "union_by_name = false" in sql and "union_by_name = true" not in sql
    # A partition compacted before a column existed: its file lacks the column, and says so by its name.
    [first, *_] = _files(lake, "claims")
    old = os.path.join(os.path.dirname(first), f"{COMPACTED_PREFIX}00000000-{'0' * 24}.parquet")
    pq.write_table(pq.read_table(first).drop_columns(["generator_model"]), old)
    os.remove(first)
    with connect_lake(lake) as view:
        sql = "SELECT count(*) FILTER (WHERE generator_model IS NULL), count(*) FROM claims"
        nulls, total = view.execute(sql).fetchone()
    assert (nulls, total) == (SENTENCES // 5 * 2 // 3, SENTENCES // 5 * 2)


def test_groundwatch_query_draws_no_progress_bar_into_its_output(lake):
    """DuckDB prints a progress bar on stdout for a query of over 2 s: it would land inside the CSV."""
    from dashboards.lake_sql import run_query

    _, rows = run_query(lake, "SELECT current_setting('enable_progress_bar')")
    assert rows == [(False,)]


def test_the_column_types_of_the_views_are_those_duckdb_reads_from_the_arrow_schemas():
    con = duckdb.connect()
    for spec in TABLES.values():
        relation = con.from_arrow(spec.schema.empty_table())
        assert duckdb_columns(spec.row) == dict(zip(relation.columns, map(str, relation.types), strict=True))


def test_groundwatch_query_imports_neither_pandas_nor_pyarrow(tmp_path):
    """They are two fifths of a second of start-up, and a query over the views needs neither."""
    probe = (
        "import sys; from pipelines.cli import main; "
        f"code = main(['query', '--lake', {str(tmp_path)!r}, 'SELECT count(*) FROM sentences']); "
        "print(code, sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "0 []"
