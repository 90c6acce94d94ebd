"""The audit's ScoreRetrieval step: every audited response carries its retrieval scores into the lake.

Real verifier, real lake rows read back with DuckDB: the step's figures, the `responses` columns and the
`retrieved_passages` rows that link each response to its `passages` rows.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import apache_beam as beam
import duckdb
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from dashboards.views import connect_lake
from pipelines.runner.audit_graph import build_pipeline
from schemas import LoggedResponse, Origin, ParsedResponse
from transforms.audit.stages import AUDITED, ScoreRetrieval, audit_response, verify_response
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import write_table
from transforms.retrieval.report import retrieval_report
from transforms.verify.registry import make_verifier

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
QUERY = "How long is the lease term?"
ON_TOPIC = "The lease term is 24 months, beginning on March 1, 2024. Headings are for convenience only."
OFF_TOPIC = "Serum potassium was 4.2 mmol/L on the admission panel. Follow-up was arranged with primary care."
ANSWER = "The lease term is 24 months, beginning on March 1, 2024 [1]. The tenant may sublet freely."


def _message(evidence: list[dict], *, response_id: str = "r-1", answer: str = ANSWER) -> dict:
    return {
        "response_id": response_id,
        "timestamp": "2026-11-29T09:00:30Z",
        "query": QUERY,
        "answer": answer,
        "evidence": evidence,
        "metadata": {"tenant": "acme", "retriever_version": "r7"},
    }


def _parsed(message: dict) -> ParsedResponse:
    return ParsedResponse(response=LoggedResponse.model_validate(message), origin=Origin(source="test"))


def _audit(message: dict):
    return audit_response(
        _parsed(message),
        verifier=make_verifier("heuristic"),
        window_start=START,
        window_end=START + timedelta(minutes=1),
        now=START + timedelta(minutes=1),
    )


RANKED = [
    {"doc_id": "1", "content": ON_TOPIC, "rank": 1, "score": 17.2},
    {"doc_id": "2", "content": OFF_TOPIC, "rank": 2, "score": 3.1},
]


def test_the_audit_scores_relevance_evidence_use_and_the_empty_flag():
    report = _audit(_message(RANKED)).retrieval
    assert report is not None
    by_id = {p.doc_id: p for p in report.passages}
    assert by_id["1"].context_relevance > 0.8 and by_id["2"].context_relevance == 0.0
    assert (by_id["1"].rank, by_id["1"].retriever_score, by_id["1"].used) == (1, 17.2, True)
    assert (by_id["2"].rank, by_id["2"].used) == (2, False)
    assert report.mean_context_relevance == pytest.approx((by_id["1"].context_relevance + 0.0) / 2)
    assert report.max_context_relevance == by_id["1"].context_relevance
    assert report.empty_retrieval is False
    assert report.passages_used_share == 0.5  # p1 of two
    assert report.top_passage_support_share == 0.5  # one of the two claim sentences rests on the rank-1 passage
    assert report.answer_relevance > 0.8


def test_off_topic_passages_are_empty_retrieval():
    evidence = [{"doc_id": "1", "content": OFF_TOPIC}, {"doc_id": "2", "content": "Headings are for convenience."}]
    report = _audit(_message(evidence)).retrieval
    assert report.empty_retrieval is True and report.max_context_relevance < 0.6


def test_ranks_count_only_when_every_passage_has_one():
    partly = [{"doc_id": "1", "content": ON_TOPIC}, {"doc_id": "2", "content": OFF_TOPIC, "rank": 1}]
    report = _audit(_message(partly)).retrieval
    assert report.top_passage_support_share is None  # "2" is not the top passage just because it alone is ranked
    assert [p.rank for p in report.passages] == [None, 1]


def test_the_report_is_a_function_of_the_verified_response_alone():
    verified = verify_response(
        _parsed(_message(RANKED)),
        verifier=make_verifier("heuristic"),
        threshold=0.7,
        window_start=START,
        window_end=START,
        now=START,
    )
    assert retrieval_report(verified) == _audit(_message(RANKED)).retrieval


def test_score_retrieval_composite_fills_every_response():
    verifier = make_verifier("heuristic")
    verified = [
        verify_response(
            _parsed(_message(RANKED, response_id=f"r-{i}")),
            verifier=verifier,
            threshold=0.7,
            window_start=START,
            window_end=START,
            now=START,
        )
        for i in range(3)
    ]
    with BeamPipeline(runner="FnApiRunner") as p:
        scored = p | beam.Create(verified) | "ScoreRetrieval" >> ScoreRetrieval()
        flags = scored[AUDITED] | beam.Map(lambda a: (a.parsed.response.response_id, a.retrieval.empty_retrieval))
        assert_that(flags, equal_to([("r-0", False), ("r-1", False), ("r-2", False)]), label="AllScored")


def _read(lake: str, table: str):
    path = os.path.join(lake, table, "**", "*.parquet")
    return duckdb.connect().execute(f"SELECT * FROM read_parquet('{path}', hive_partitioning = true)").df()


@pytest.mark.parametrize("redact", [False, True])
def test_the_lake_links_each_response_to_its_passages_with_their_scores(tmp_path, redact):
    audited = _audit(_message([*RANKED, {"doc_id": "3", "content": "Call 555-123-4567 about the lease term."}]))
    tables: dict[str, list[dict]] = {}
    for table, row in to_lake_rows(audited, redact=redact):
        tables.setdefault(table, []).append(row)
    lake = str(tmp_path / "lake")
    for table, rows in tables.items():
        write_table(lake, table, rows)

    response = _read(lake, "responses").iloc[0]
    assert response["mean_context_relevance"] == pytest.approx(audited.retrieval.mean_context_relevance)
    assert not response["empty_retrieval"] and response["passages_used_share"] == pytest.approx(1 / 3)
    links = (
        duckdb.connect()
        .execute(
            "SELECT l.passage_index, l.doc_id, l.rank, l.retriever_score, l.context_relevance, l.used, p.content "
            f"FROM read_parquet('{lake}/retrieved_passages/**/*.parquet') l "
            f"JOIN read_parquet('{lake}/passages/**/*.parquet') p USING (passage_sha256) ORDER BY 1"
        )
        .fetchall()
    )
    assert [(i, d, r, u) for i, d, r, _, _, u, _ in links] == [
        (0, "1", 1, True),
        (1, "2", 2, False),
        (2, "3", None, False),
    ]
    assert links[0][3] == 17.2 and links[0][6] == ON_TOPIC
    assert ("555-123-4567" in links[2][6]) is not redact  # the link follows the passage as stored


def test_the_audit_pipeline_writes_retrieval_scores_and_window_figures(tmp_path):
    lake = str(tmp_path / "lake")
    on = [_message(RANKED, response_id=f"on-{i}") for i in range(3)]
    off = [_message([{"doc_id": "1", "content": OFF_TOPIC}], response_id="off-0")]
    inputs = [(json.dumps(m).encode(), Origin(source="test", offset=i)) for i, m in enumerate([*on, *off])]
    with BeamPipeline(options=PipelineOptions([f"--lake={lake}", "--runner=FnApiRunner"])) as p:
        build_pipeline(p, p.options, source=p | beam.Create(inputs))

    con = connect_lake(lake)
    flags = con.execute("SELECT response_id, empty_retrieval FROM responses ORDER BY 1").fetchall()
    assert flags == [("off-0", True), ("on-0", False), ("on-1", False), ("on-2", False)]
    assert con.execute("SELECT count(*) FROM retrieved_passages").fetchone()[0] == 3 * 2 + 1
    rate, relevance = con.execute(
        "SELECT empty_retrieval_rate, mean_context_relevance FROM window_metrics WHERE slice_dimension = 'all'"
    ).fetchone()
    assert rate == pytest.approx(0.25)
    expected = con.execute("SELECT avg(mean_context_relevance) FROM responses").fetchone()[0]
    assert relevance == pytest.approx(expected)
