"""The audit lake: Parquet under hive folders, read back with DuckDB, re-runs overwrite, no half files."""

from __future__ import annotations

import glob
import os
from datetime import UTC, datetime, timedelta

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that

from dashboards.views import connect_lake
from schemas import TABLES, LoggedResponse, ParsedResponse
from schemas.monitoring import WindowMetricsRow
from tests.support.audit_messages import at, message
from tests.support.lake_compare import assert_same_tables
from transforms.audit.stages import audit_response
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import WriteAuditLake, write_rows_file, write_table
from transforms.verify.registry import make_verifier

T = datetime(2026, 11, 29, 9, 0, 30, tzinfo=UTC)


def dead_letter(i: int, received_at: datetime = T) -> dict:
    return {
        "dead_letter_id": f"dl-{i}",
        "received_at": received_at,
        "stage": "parse",
        "error": "malformed_json: x",
        "raw_payload": b"\xff{",
        "origin_source": "file:/x.jsonl",
        "origin_offset": i,
    }


def rows_per_response(count: int, *, now: datetime = T) -> list[list[tuple[str, dict]]]:
    """The lake rows of `count` audited responses, one list per response (as `ToLakeRows` emits them)."""
    verifier = make_verifier("heuristic")
    batches = []
    for i in range(count):
        parsed = ParsedResponse(response=LoggedResponse.model_validate(message(f"r-{i}")), origin=at(i + 1))
        audited = audit_response(
            parsed, verifier=verifier, window_start=T, window_end=T + timedelta(minutes=1), now=now
        )
        batches.append(to_lake_rows(audited))
    return batches


def audited_rows(count: int, *, now: datetime = T) -> list[tuple[str, dict]]:
    return [pair for batch in rows_per_response(count, now=now) for pair in batch]


def parquet_files(lake) -> list[str]:
    return sorted(glob.glob(os.path.join(lake, "**", "*.parquet"), recursive=True))


def count(lake, table: str) -> int:
    return connect_lake(str(lake)).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_write_table_partitions_by_time_and_reads_back(tmp_path):
    rows = [dead_letter(1), dead_letter(2, T + timedelta(hours=1)), dead_letter(3, T + timedelta(days=1))]
    paths = write_table(str(tmp_path), "dead_letters", rows)
    assert [os.path.relpath(p, tmp_path).rsplit("/", 1)[0] for p in paths] == [
        "dead_letters/date=2026-11-29/hour=09",
        "dead_letters/date=2026-11-29/hour=10",
        "dead_letters/date=2026-11-30/hour=09",
    ]
    con = connect_lake(str(tmp_path))
    got = con.execute("SELECT dead_letter_id, raw_payload, date, hour FROM dead_letters ORDER BY 1").fetchall()
    assert got[0][:2] == ("dl-1", b"\xff{") and str(got[2][2]) == "2026-11-30" and got[1][3] == 10


def test_writing_the_same_rows_again_does_not_duplicate(tmp_path):
    rows = [dead_letter(i) for i in range(5)]
    first = write_table(str(tmp_path), "dead_letters", rows)
    second = write_table(str(tmp_path), "dead_letters", list(reversed(rows)))
    assert first == second and len(parquet_files(tmp_path)) == 1
    assert count(tmp_path, "dead_letters") == 5


def test_view_keeps_the_latest_audit_of_a_key(tmp_path):
    write_table(str(tmp_path), "responses", [r for t, r in audited_rows(2) if t == "responses"], name="old")
    later = [r for t, r in audited_rows(1, now=T + timedelta(hours=2)) if t == "responses"]
    later[0]["tenant"] = "re-audited"
    write_table(str(tmp_path), "responses", later, name="new")
    con = connect_lake(str(tmp_path))
    assert con.execute("SELECT response_id, tenant FROM responses ORDER BY 1").fetchall() == [
        ("r-0", "re-audited"),
        ("r-1", "acme"),
    ]


def test_view_keeps_the_fullest_window_metrics_then_the_newest_whatever_their_file(tmp_path):
    def metrics(responses: int, computed_at: datetime, sentences: int | None = None) -> dict:
        return WindowMetricsRow(
            window_start=T, window_end=T + timedelta(minutes=1), slice_dimension="all", slice_value="all",
            responses=responses, sentences=sentences or 5 * responses, insufficient_evidence_responses=0,
            needs_review_responses=0, computed_at=computed_at,
        ).model_dump()  # fmt: skip

    def shown() -> list[tuple]:
        return connect_lake(str(tmp_path)).execute("SELECT responses, sentences FROM window_metrics").fetchall()

    # Same key (window and slice): the recomputed figures must win, not whichever file sorts or reads first.
    write_table(str(tmp_path), "window_metrics", [metrics(7, T + timedelta(hours=1))], name="a-recomputed")
    write_table(str(tmp_path), "window_metrics", [metrics(3, T)], name="z-first-pass")
    for _ in range(3):
        assert shown() == [(7, 35)]
    # A stream restarted from its last commit reads 2 of the window's responses again: the fuller row stays.
    write_table(str(tmp_path), "window_metrics", [metrics(2, T + timedelta(hours=2))], name="restart")
    assert shown() == [(7, 35)]
    # The window audited again whole (say, by a newer verifier): as full, and newer, so it is shown.
    write_table(str(tmp_path), "window_metrics", [metrics(7, T + timedelta(hours=3), sentences=30)], name="again")
    assert shown() == [(7, 30)]


def test_rows_are_validated_before_writing(tmp_path):
    bad = dead_letter(1)
    del bad["stage"]
    with pytest.raises(ValueError, match="stage"):
        write_table(str(tmp_path), "dead_letters", [bad])
    with pytest.raises(ValueError, match="unknown lake table"):
        write_table(str(tmp_path), "nope", [])
    assert parquet_files(tmp_path) == []


def test_a_failed_write_leaves_no_file_and_no_temp(tmp_path):
    bad_rows = [{**dead_letter(1), "raw_payload": 12345}]  # not bytes: Arrow refuses it mid-write
    with pytest.raises(Exception):  # noqa: B017 - pyarrow's own conversion error
        write_rows_file(str(tmp_path / "part"), "stem", "dead_letters", bad_rows)
    assert os.listdir(tmp_path / "part") == []


def test_published_files_are_whole_and_temp_files_are_hidden(tmp_path):
    path = write_rows_file(str(tmp_path), "part-x", "dead_letters", [dead_letter(1)])
    assert os.listdir(tmp_path) == ["part-x.parquet"] and path.endswith("part-x.parquet")
    # A temp file that a crashed writer left behind must be invisible to readers.
    (tmp_path / "dead_letters" / "date=2026-11-29" / "hour=09").mkdir(parents=True)
    (tmp_path / "dead_letters" / "date=2026-11-29" / "hour=09" / ".part-y.abc.tmp").write_bytes(b"PAR1 half")
    write_table(str(tmp_path), "dead_letters", [dead_letter(2)])
    assert count(tmp_path, "dead_letters") == 1


def test_empty_lake_has_every_view_with_columns(tmp_path):
    con = connect_lake(str(tmp_path / "nothing-yet"))
    for name, spec in TABLES.items():
        columns = [d[0] for d in con.execute(f"SELECT * FROM {name}").description]
        assert columns[: len(spec.schema.names)] == spec.schema.names
        assert con.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == 0


def test_a_bounded_write_leaves_rows_where_they_are_made_and_writes_them_every_flush_rows(tmp_path):
    dead = [("dead_letters", dead_letter(1)), ("dead_letters", dead_letter(2, T + timedelta(hours=1)))]
    # Passages are content-addressed: the six responses share theirs, stored once per file (a file written
    # again with the same passages has the same name and content), so they are left out of the counts.
    rows = [(t, r) for t, r in audited_rows(6) if t != "passages"] + dead
    per_table = {table: sum(1 for t, _ in rows if t == table) for table, _ in rows}
    lake = str(tmp_path / "lake")

    def are_the_lake_files(paths):
        assert sorted(paths) == parquet_files(lake)

    for _ in range(2):  # the second run writes the same files again, no copies
        with BeamPipeline(runner="FnApiRunner") as p:
            paths = p | beam.Create(rows, reshuffle=False) | WriteAuditLake(lake, per_window=False, flush_rows=4)
            assert_that(paths, are_the_lake_files)
    files = parquet_files(lake)
    con = connect_lake(lake)
    for table, expected in per_table.items():
        assert count(lake, table) == expected
        raw = con.execute(f"SELECT count(*) FROM read_parquet('{lake}/{table}/**/*.parquet')").fetchone()[0]
        assert raw == expected
    sizes = [con.execute(f"SELECT count(*) FROM read_parquet('{f}')").fetchone()[0] for f in files]
    # Whenever the writer held 4 rows it wrote them: files of at most 4 rows, several per table.
    assert max(sizes) <= 4 and sum(sizes) == len(rows)
    assert all(sum(f"/{table}/" in f for f in files) > 1 for table in ("responses", "sentences"))
    with pytest.raises(ValueError, match="flush_rows must be >= 1"):
        WriteAuditLake(lake, per_window=False, flush_rows=0)


@pytest.mark.parametrize("per_window", [False, True])
def test_rows_a_response_at_a_time_make_the_lake_rows_one_by_one_make(tmp_path, per_window):
    batches = rows_per_response(3) + [[("dead_letters", dead_letter(1))]]
    pairs = [pair for batch in batches for pair in batch]
    for name, elements in (
        ("pairs", pairs),
        ("batches", batches),
        ("mixed", [*batches[:2], *batches[2], *batches[3:]]),
    ):
        with BeamPipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create(elements, reshuffle=False) | WriteAuditLake(str(tmp_path / name), per_window=per_window)
    assert count(tmp_path / "pairs", "responses") == 3 and count(tmp_path / "pairs", "dead_letters") == 1
    tables = ["responses", "sentences", "passages", "retrieved_passages", "dead_letters"]
    for name in ("batches", "mixed"):
        assert_same_tables(str(tmp_path / "pairs"), str(tmp_path / name), tables, tolerance=0.0)


def test_write_audit_lake_groups_rows_and_rerun_overwrites(tmp_path):
    rows = audited_rows(6)
    lake = str(tmp_path / "lake")
    for _ in range(2):
        with BeamPipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create(rows) | WriteAuditLake(lake)
    files = parquet_files(lake)
    # one per table (responses, sentences, passages, retrieved_passages) for the one partition, not one per row
    assert len(files) == 4
    assert count(lake, "passages") == 2  # the six responses share their two passages: stored once each
    assert count(lake, "responses") == 6
    assert count(lake, "sentences") == sum(1 for t, _ in rows if t == "sentences")
    raw_count = (
        connect_lake(lake).execute(f"SELECT count(*) FROM read_parquet('{lake}/responses/**/*.parquet')").fetchone()[0]
    )
    assert raw_count == 6  # the re-run replaced its files instead of adding copies
