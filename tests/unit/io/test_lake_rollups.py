"""Rollups kept beside clean partitions give the figures of the queries they replace, in every state of a lake.

The lakes are the benchmark's synthetic lakes (`scripts/bench_lake.py`), small, with 5% of the responses
written twice (audited later): as written (every partition aggregated live, its duplicates ranked), compacted
(every partition's rollups read from their files), and mixed (a newer copy of a sentence written into a
compacted partition, and a clean partition whose rollups are gone). In each, the ready-made queries over the
rollups equal the queries as they were written before the rollups, straight over the `sentences` view. The
review queue's rollup (each hour's first rows and count, over `sentences` and `responses`) is tested the same
way, with fewer rows kept per hour than an hour's queue holds, so that keeping only an hour's first ones bites.
"""

from __future__ import annotations

import glob
import os
import shutil
from datetime import timedelta
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pytest

from dashboards.readonly import open_readonly
from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.compact import compact_table
from tests.support.bench_lakes import SENTENCES
from transforms.io.lake import review_rollup
from transforms.io.lake.review_rollup import REVIEW_VIEW, review_sql
from transforms.io.lake.rollups import ROLLUP_SUFFIX, ROLLUPS, rollup_sql
from transforms.io.lake.writer import write_table

QUERIES = Path(__file__).resolve().parents[3] / "dashboards" / "queries"

WORST_RETRIEVERS = """
SELECT s.retriever_version,
       count(DISTINCT s.response_id) AS responses,
       count(*) AS sentences,
       round(avg(CASE WHEN s.attribution_verdict = 'fully_grounded' THEN s.confidence ELSE 1 - s.confidence END), 3)
           AS mean_attribution_confidence,
       round(avg(s.confidence), 3) AS mean_verdict_confidence,
       round(avg(CASE WHEN s.attribution_verdict IN ('ungrounded', 'contradicted') THEN 1.0 ELSE 0.0 END), 3)
           AS unsupported_share
FROM sentences s
GROUP BY s.retriever_version
ORDER BY mean_attribution_confidence, s.retriever_version
"""
UNSUPPORTED_SPANS = """
SELECT span,
       count(*) AS occurrences,
       count(DISTINCT response_id) AS responses,
       count(DISTINCT tenant) AS tenants,
       min(response_id) AS example_response_id
FROM (SELECT unnest(unsupported_spans) AS span, response_id, tenant FROM sentences)
WHERE length(trim(span)) > 0
GROUP BY span
ORDER BY occurrences DESC, span
LIMIT 25
"""
AWAITING_REVIEW = """
SELECT r.risk_level, s.response_id, s.sentence_index, s.attribution_verdict, round(s.confidence, 2) AS confidence,
       round(CASE WHEN s.attribution_verdict = 'fully_grounded' THEN s.confidence ELSE 1 - s.confidence END, 2)
           AS grounded_probability,
       r.tenant, s.retriever_version, left(s.sentence_text, 120) AS sentence
FROM sentences s JOIN responses r USING (response_id)
WHERE r.needs_review
  AND (s.attribution_verdict IN ('ungrounded', 'contradicted') OR s.confidence < 0.7)
ORDER BY CASE r.risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END,
         CASE WHEN s.attribution_verdict = 'fully_grounded' THEN s.confidence ELSE 1 - s.confidence END,
         s.response_id, s.sentence_index
"""
"""The three queries as they were before the rollups and the review queue's LIMIT: the reference."""


@pytest.fixture
def lake(small_lake) -> str:
    return small_lake


def _all_rollups(lake: str) -> list[str]:
    return sorted(glob.glob(os.path.join(lake, "sentences", "**", f"*{ROLLUP_SUFFIX}"), recursive=True))


def _rollups(lake: str) -> list[str]:
    """The per-partition rollups of `sentences` (not the review queue's)."""
    return [path for path in _all_rollups(lake) if f".{REVIEW_VIEW}-" not in path]


def _review_rollups(lake: str) -> list[str]:
    return [path for path in _all_rollups(lake) if f".{REVIEW_VIEW}-" in path]


def _assert_queries_match(lake: str) -> None:
    with open_readonly(lake) as con:
        for name, reference in (("worst_retrievers", WORST_RETRIEVERS), ("unsupported_spans", UNSUPPORTED_SPANS)):
            expected = con.execute(reference).fetchall()
            assert expected and con.execute((QUERIES / f"{name}.sql").read_text()).fetchall() == expected, name
        queue = con.execute(AWAITING_REVIEW).fetchall()
        top = (QUERIES / "sentences_awaiting_review.sql").read_text().replace("LIMIT 500", "LIMIT 20")
        rows = con.execute(top).fetchall()
    assert len(queue) > 20  # the limit bites on this lake
    assert [row[:-1] for row in rows] == queue[:20]  # the top of the same queue, in the same order
    assert {row[-1] for row in rows} == {len(queue)}  # and how many there are in all


def _late_copy(lake: str) -> None:
    """A newer copy of one sentence, another verdict and a new unsupported span, into its compacted partition."""
    with connect_lake(lake) as con:
        first = con.execute("SELECT * EXCLUDE (date, hour) FROM sentences ORDER BY response_id LIMIT 1").df()
    row = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in first.iloc[0].to_dict().items()}
    row = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    row.update(
        attribution_verdict="contradicted",
        confidence=0.99,
        unsupported_spans=["a span only the late copy has"] * 3,
        audited_at=row["audited_at"] + timedelta(days=1),
    )
    write_table(lake, "sentences", [row], name="late-copy")


def test_rollup_queries_equal_the_queries_over_the_rows_as_written_compacted_and_mixed(lake, capsys):
    _assert_queries_match(lake)  # as written: every partition aggregated live, duplicates ranked first
    assert not _rollups(lake)

    assert groundwatch(["compact", "--lake", lake, "--table", "sentences"]) == 0
    assert "; 6 rollups written" in capsys.readouterr().out  # two rollups for each of three partitions
    assert len(_rollups(lake)) == 6
    sql = rollup_sql(duckdb.connect(), ROLLUPS["sentences_by_retriever"], lake)
    assert ROLLUP_SUFFIX in sql and "row_number" not in sql  # read from the rollup files, nothing ranked
    _assert_queries_match(lake)

    _late_copy(lake)  # its partition holds two files again: its rollups (still there) must not be read
    [gone, *_] = _rollups(lake)[-2:]  # and a clean partition loses a rollup: aggregated live
    os.remove(gone)
    _assert_queries_match(lake)
    with open_readonly(lake) as con:
        sql = (QUERIES / "unsupported_spans.sql").read_text().replace("LIMIT 25", "")
        spans = {row[0]: row[1:3] for row in con.execute(sql).fetchall()}
    assert spans["a span only the late copy has"] == (3, 1)  # three occurrences in one response

    assert groundwatch(["compact", "--lake", lake, "--table", "sentences"]) == 0
    # the mixed partition compacted (2 rollups), the one missing its rollup given it back (1)
    assert "1 compacted, 2 already clean" in capsys.readouterr().out
    assert len(_rollups(lake)) == 6  # the compacted partition's old rollups are removed
    _assert_queries_match(lake)


def test_rollups_stay_out_of_a_plain_readers_way(lake):
    compact_table(lake, "sentences")
    assert _rollups(lake)
    glob_sql = f"SELECT count(*) FROM read_parquet('{lake}/sentences/**/*.parquet', hive_partitioning = true)"
    assert duckdb.connect().execute(glob_sql).fetchone()[0] == SENTENCES
    assert ds.dataset(os.path.join(lake, "sentences"), format="parquet", partitioning="hive").count_rows() == SENTENCES


def test_a_rollup_of_another_definition_is_not_read(lake):
    compact_table(lake, "sentences")
    for path in _rollups(lake):  # as if written by an older definition: another fingerprint in the name
        stem, _, _ = path.rpartition("-")
        os.rename(path, f"{stem}-00000000{ROLLUP_SUFFIX}")
    sql = rollup_sql(duckdb.connect(), ROLLUPS["unsupported_spans_by_tenant"], lake)
    assert ROLLUP_SUFFIX not in sql  # every partition aggregated live
    _assert_queries_match(lake)


def _assert_review_queue_matches(lake: str, top: int) -> None:
    """The ready-made query, with the LIMIT the rollup keeps per hour, gives the reference's first rows and
    length; and some hour's queue is longer than that, so the per-hour cut is tested."""
    with open_readonly(lake) as con:
        queue = con.execute(AWAITING_REVIEW).fetchall()
        hours = con.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM sentences s JOIN responses r USING (response_id) "
            "WHERE r.needs_review AND (s.attribution_verdict IN ('ungrounded', 'contradicted') OR s.confidence < 0.7) "
            "GROUP BY s.date, s.hour)"
        ).fetchone()[0]
        sql = (QUERIES / "sentences_awaiting_review.sql").read_text().replace("LIMIT 500", f"LIMIT {top}")
        rows = con.execute(sql).fetchall()
    assert hours > top  # an hour holds more than the rollup keeps of it
    assert [row[:-1] for row in rows] == queue[:top]
    assert {row[-1] for row in rows} == {len(queue)}


def _late_response(lake: str, hour: int) -> str:
    """A newer copy of a response of `hour` not routed to review, now routed there at high risk; its id."""
    with connect_lake(lake) as con:
        frame = con.execute(
            "SELECT * EXCLUDE (date, hour) FROM responses r WHERE hour = ? AND NOT needs_review AND EXISTS "
            "(SELECT 1 FROM sentences s WHERE s.response_id = r.response_id AND s.confidence < 0.7) "
            "ORDER BY response_id LIMIT 1",
            [hour],
        ).df()
    row = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in frame.iloc[0].to_dict().items()}
    row = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    row.update(needs_review=True, risk_level="high", audited_at=row["audited_at"] + timedelta(days=1))
    write_table(lake, "responses", [row], name="late-response")
    return row["response_id"]


def test_review_queue_rollup_gives_the_joins_queue_as_written_compacted_and_mixed(lake, monkeypatch, capsys):
    top = 8
    monkeypatch.setattr(review_rollup, "TOP", top)
    _assert_review_queue_matches(lake, top)  # as written: every hour computed from its ranked rows
    assert groundwatch(["compact", "--lake", lake]) == 0
    assert "review queue: 3 hourly rollups written" in capsys.readouterr().out
    assert len(_review_rollups(lake)) == 3
    sql = review_sql(duckdb.connect(), lake)
    assert ROLLUP_SUFFIX in sql and "row_number" not in sql  # every hour read from its rollup
    _assert_review_queue_matches(lake, top)

    _late_copy(lake)  # hour 0: a sentence's newer copy, so its sentences partition holds two files
    flipped = _late_response(lake, 2)  # hour 2: a response routed to review later; its rollup lacks it
    with open_readonly(lake) as con:
        first = con.execute((QUERIES / "sentences_awaiting_review.sql").read_text()).fetchall()
    assert flipped in {row[1] for row in first}  # high risk: at the top of the queue, so a stale rollup shows
    sql = review_sql(duckdb.connect(), lake)
    assert sql.count(ROLLUP_SUFFIX) == 1  # only hour 1's rollup is still read
    _assert_review_queue_matches(lake, top)

    assert groundwatch(["compact", "--lake", lake]) == 0
    assert "review queue: 2 hourly rollups written" in capsys.readouterr().out
    assert len(_review_rollups(lake)) == 3  # the two hours' rollups named after their old files are gone
    _assert_review_queue_matches(lake, top)


def test_a_review_rollup_of_another_responses_file_is_not_read(lake, monkeypatch):
    """A rollup names both files: one whose responses partition was compacted again since is ignored."""
    monkeypatch.setattr(review_rollup, "TOP", 8)
    assert groundwatch(["compact", "--lake", lake]) == 0
    [path, *_] = _review_rollups(lake)
    sentences_stem, _, rest = os.path.basename(path).split(".", 2)
    os.rename(path, os.path.join(os.path.dirname(path), f"{sentences_stem}.compacted-gone.{rest}"))
    assert len(_review_rollups(lake)) == 3  # still a review rollup by its name, of a responses file gone
    assert review_sql(duckdb.connect(), lake).count(ROLLUP_SUFFIX) == 2
    _assert_review_queue_matches(lake, 8)
    # The next compaction writes that hour's rollup again and removes the one named after a file gone.
    assert groundwatch(["compact", "--lake", lake]) == 0
    assert len(_review_rollups(lake)) == 3 and not [p for p in _review_rollups(lake) if "compacted-gone" in p]
    assert review_sql(duckdb.connect(), lake).count(ROLLUP_SUFFIX) == 3
    _assert_review_queue_matches(lake, 8)


def test_within_one_listing_a_table_is_listed_once_and_outside_it_afresh(lake):
    from transforms.io.lake.reader import one_listing, table_files

    before = table_files(lake, "sentences")
    extra = os.path.join(os.path.dirname(before[0]), "part-late.parquet")
    with one_listing():
        first = table_files(lake, "sentences")
        shutil.copy(before[0], extra)  # a file published while the views are being created
        assert table_files(lake, "sentences") == first == before  # the views of one connection agree
    assert table_files(lake, "sentences") == sorted([*before, extra])  # the next connection sees it
