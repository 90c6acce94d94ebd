"""`sentences.grounded_probability`: stored by every sentence row, derived by the reader for files written before.

A lake whose older files have no such column is the lake every user upgrading has: the table view, the rollups,
the ready-made queries, compaction and the window metrics computed again must give the figures of the same lake
written whole by today's writer.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.traffic.scenarios import ScenarioSpec, scenario_responses
from schemas import TABLES, AttributionVerdict, LoggedResponse, Origin, ParsedResponse, SentenceRow
from schemas import grounded_probability as derived
from transforms.audit.stages import audit_response
from transforms.io.lake.manifest import write_lake_parquet
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import partition_of, table_path, write_table
from transforms.monitoring.lake_frames import load_lake_frames
from transforms.verify.heuristic.verifier import HeuristicVerifier

QUERIES = Path(__file__).resolve().parents[3] / "dashboards" / "queries"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def rows() -> list[tuple[str, dict]]:
    """The lake rows of two hours of flawed traffic (every verdict occurs), audited by the heuristic."""
    spec = ScenarioSpec("stable", windows=4, window_seconds=1800, per_window=8, seed=11, flaw_rate=0.3)
    out: list[tuple[str, dict]] = []
    for i, message in enumerate(scenario_responses(spec)):
        response = LoggedResponse.model_validate(message)
        start = response.timestamp.replace(second=0, microsecond=0)
        parsed = ParsedResponse(response=response, origin=Origin(source="test", offset=i))
        audited = audit_response(
            parsed, verifier=HeuristicVerifier(), window_start=start, window_end=start + timedelta(minutes=1), now=NOW
        )
        out.extend(to_lake_rows(audited))
    return out


def _sentences(rows) -> list[dict]:
    return [row for table, row in rows if table == "sentences"]


def test_every_sentence_row_stores_the_grounded_probability_of_its_verdict(rows):
    sentences = _sentences(rows)
    assert {s["attribution_verdict"] for s in sentences} == {v.value for v in AttributionVerdict}
    for s in sentences:
        assert s["grounded_probability"] == derived(s["attribution_verdict"], s["confidence"])
    assert TABLES["sentences"].schema.field("grounded_probability").type == pa.float64()


def test_a_row_read_back_with_a_stale_value_derives_it_again(rows):
    row = dict(_sentences(rows)[0], grounded_probability=0.123456, confidence=0.8, attribution_verdict="ungrounded")
    assert SentenceRow.model_validate(row).grounded_probability == pytest.approx(0.2)


def _write(lake: str, rows, *, old_shaped) -> None:
    """Write the rows with today's writer; the sentences of responses `old_shaped` picks go in files of their
    own, published as a writer before the column published them (the same rows, without it)."""
    by_table: dict[str, list[dict]] = {}
    for table, row in rows:
        by_table.setdefault(table, []).append(row)
    old = [s for s in by_table["sentences"] if old_shaped(s["response_id"])]
    by_table["sentences"] = [s for s in by_table["sentences"] if not old_shaped(s["response_id"])]
    for table, table_rows in by_table.items():
        write_table(lake, table, table_rows)
    schema = TABLES["sentences"].schema
    old_schema = schema.remove(schema.get_field_index("grounded_probability"))
    by_hour: dict[tuple[str, str], list[dict]] = {}
    for s in old:
        by_hour.setdefault(partition_of("sentences", s), []).append(s)
    for (date, hour), hour_rows in by_hour.items():
        frame = pa.Table.from_pylist(hour_rows, schema=schema).select(old_schema.names)
        write_lake_parquet(os.path.join(table_path(lake, "sentences", date, hour), "before-the-column.parquet"), frame)


def _figures(lake: str) -> dict[str, list]:
    with connect_lake(lake) as con:
        figures = {
            "sentences": con.execute(
                "SELECT response_id, sentence_index, attribution_verdict, confidence, grounded_probability "
                "FROM sentences ORDER BY ALL"
            ).fetchall(),
            "by_retriever": con.execute(
                "SELECT date, hour, retriever_version, round(grounded_probability_sum, 9) "  # sums in any order
                "FROM sentences_by_retriever ORDER BY ALL"
            ).fetchall(),
        }
        for name in ("worst_retrievers", "sentences_awaiting_review"):
            figures[name] = con.execute((QUERIES / f"{name}.sql").read_text()).fetchall()
    frames = load_lake_frames(lake)
    figures["frames"] = sorted(
        frames.responses[["response_id", "mean_attribution_confidence"]].itertuples(index=False, name=None)
    )
    return figures


def test_old_files_without_the_column_read_as_if_written_today(rows, tmp_path, capsys):
    hours = sorted({partition_of("sentences", s) for s in _sentences(rows)})
    assert len(hours) >= 2
    first_hour = {s["response_id"] for s in _sentences(rows) if partition_of("sentences", s) == hours[0]}
    every_third = {s["response_id"] for s in _sentences(rows)}
    every_third = set(sorted(every_third)[::3])
    # The first hour only in old files (a partition whose files lack the column), every third response of the
    # others too (partitions mixing old files and new ones: union_by_name gives NULL there).
    new, mixed = str(tmp_path / "new"), str(tmp_path / "mixed")
    _write(new, rows, old_shaped=lambda rid: False)
    _write(mixed, rows, old_shaped=lambda rid: rid in first_hour or rid in every_third)
    expected = _figures(new)
    assert all(expected.values())
    for s in expected["sentences"]:
        assert s[4] == derived(s[2], s[3])
    assert _figures(mixed) == expected

    for lake in (new, mixed):
        assert groundwatch(["compact", "--lake", lake]) == 0
        assert groundwatch(["metrics", "--lake", lake]) == 0
    capsys.readouterr()
    assert _figures(mixed) == expected == _figures(new)
    for path in (tmp_path / "mixed" / "sentences").rglob("*.parquet"):  # compaction stored the derived values
        assert "grounded_probability" in pq.read_schema(path).names
    metrics = "SELECT * EXCLUDE (computed_at) FROM window_metrics ORDER BY ALL"
    with connect_lake(new) as a, connect_lake(mixed) as b:
        assert a.execute(metrics).fetchall() == b.execute(metrics).fetchall()
