"""The review queue from its rollup: the same page and counts from the rows as written and once compacted (read
from the rollup files), reasons as the bits of the routes the audit stored, pages cut by risk level,
and a response page that reads only its hour."""

from __future__ import annotations

import glob
import json
import shutil
from dataclasses import replace

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main
from pipelines.reviewing.queries import QueueFilters, _page_ranks, load_response, queue
from pipelines.reviewing.store import create_latest_view
from tests.support.audit_messages import message
from tests.support.review_lake import EVIDENCE, HIGH, LOW, build_lake
from transforms.io.lake.rollups import REVIEW_QUEUE_ITEMS, ROLLUPS, HeldRollup

WRONG = "Metoprolol 80 mg twice daily was prescribed on March 3, 2024 [kb-1]."


def _session(lake: str):
    con = connect_lake(lake)
    create_latest_view(con)
    return con


def _snapshot(lake: str, f: QueueFilters, page_size: int = 3):
    page = queue(_session(lake), f, page_size=page_size)
    return [(i["response_id"], tuple(i["review_reasons"])) for i in page.items], page.total, page.counts


@pytest.fixture(scope="module")
def lakes(tmp_path_factory):
    """The same responses, as written and compacted: three risk levels, two hours, several reasons."""
    folder = tmp_path_factory.mktemp("queue-rollup")
    more = [
        message(f"r-{i}", answer=WRONG, evidence=EVIDENCE, timestamp=f"2026-11-29T{9 + i % 2:02d}:0{i}:00Z",
                metadata={"tenant": "legal" if i % 3 else "clinic", "risk_level": ("low", "medium", "high")[i % 3]})
        for i in range(7)
    ]  # fmt: skip
    raw = build_lake(str(folder / "raw"), [HIGH, LOW, *more])
    compacted = build_lake(str(folder / "compacted"), [HIGH, LOW, *more])
    assert main(["compact", "--lake", compacted]) == 0
    return raw, compacted


FILTERS = [
    QueueFilters(),
    QueueFilters(page=1),
    QueueFilters(page=2),
    QueueFilters(tenant="legal"),
    QueueFilters(reason="flagged"),
    QueueFilters(reason="risk", status="all"),
    QueueFilters(risk="medium", status="all"),
]


@pytest.mark.parametrize("f", FILTERS, ids=repr)
def test_the_queue_reads_the_same_from_its_rollup_as_from_the_rows(lakes, f):
    raw, compacted = lakes
    assert glob.glob(f"{compacted}/responses/**/_*.{REVIEW_QUEUE_ITEMS}-*.rollup", recursive=True)
    assert not glob.glob(f"{raw}/responses/**/*.rollup", recursive=True)
    assert _snapshot(compacted, f) == _snapshot(raw, f)


def test_pages_follow_risk_then_time_across_levels(lakes):
    raw, _ = lakes
    everything = _snapshot(raw, QueueFilters(), page_size=100)[0]
    pages = [item for p in range(4) for item in _snapshot(raw, QueueFilters(page=p), page_size=3)[0]]
    assert pages == everything and len(everything) == 9
    con = _session(raw)
    order = con.sql(
        f"SELECT response_id FROM {REVIEW_QUEUE_ITEMS} ORDER BY risk_rank, event_time, response_id"
    ).fetchall()
    assert [item[0] for item in everything] == [row[0] for row in order]


@pytest.mark.parametrize("which", ["raw", "compacted"])
def test_reason_counts_and_filters_are_the_stored_routes(lakes, which):
    lake = dict(zip(["raw", "compacted"], lakes, strict=True))[which]
    page = queue(_session(lake), replace(QueueFilters(), status="all"), page_size=100)
    expected: dict[str, int] = {}
    for item in page.items:
        for route in item["review_routes"]:
            expected[route] = expected.get(route, 0) + 1
    assert dict(page.counts["reason"]) == expected and len(expected) >= 2
    for route, n in expected.items():
        only = queue(_session(lake), QueueFilters(reason=route, status="all"), page_size=100)
        assert only.total == n and all(route in item["review_routes"] for item in only.items)


def test_page_ranks_cut_a_page_across_risk_levels():
    levels = {"high": 10, "medium": 5, "low": 100}
    assert _page_ranks(levels, 8, 50) == [(0, 8, 2), (1, 0, 5), (2, 0, 43)]
    assert _page_ranks(levels, 100, 50) == [(2, 85, 15)]
    assert _page_ranks(levels, 200, 50) == []


def test_a_response_page_reads_its_hour_and_finds_the_response_with_or_without_its_time(lakes):
    _, compacted = lakes
    con = _session(compacted)
    when = con.execute("SELECT event_time FROM responses WHERE response_id = 'r-high'").fetchone()[0]
    with_time, without = load_response(con, "r-high", when), load_response(con, "r-high", None)
    assert with_time["sentences"] and with_time["passages"] and with_time["citations"]
    assert json.dumps(with_time, default=str) == json.dumps(without, default=str)
    assert load_response(con, "r-high", when.replace(year=2020)) is None


def test_the_app_can_say_how_many_hours_are_not_compacted(lakes):
    from pipelines.reviewing.serve import uncompacted_hours

    raw, compacted = lakes
    assert uncompacted_hours(raw) == (2, 2)
    assert uncompacted_hours(compacted) == (0, 2)


def test_an_hour_not_compacted_reads_no_reason_text(lakes):
    """The raw path computes the queue from stored short columns: matching every reason's text against
    patterns made a lake never compacted take a minute a page at a million responses."""
    import duckdb

    from transforms.io.lake.rollups import ROLLUPS, rollup_sql

    raw, _ = lakes
    sql = rollup_sql(duckdb.connect(), ROLLUPS[REVIEW_QUEUE_ITEMS], raw)
    assert "list_contains(review_routes" in sql and "regexp" not in sql


def test_a_held_queue_aggregates_an_hour_once_and_again_only_when_its_files_change(lakes, tmp_path):
    raw, _ = lakes
    lake = str(shutil.copytree(raw, tmp_path / "lake"))
    held = HeldRollup(ROLLUPS[REVIEW_QUEUE_ITEMS], lake)

    def snapshot(f: QueueFilters):
        page = queue(_held_session(lake, held), f, page_size=3)
        return [(i["response_id"], tuple(i["review_reasons"])) for i in page.items], page.total, page.counts

    assert held.create_view(_session(lake)) == 2  # hours 9 and 10, neither compacted
    assert held.create_view(_session(lake)) == 0  # nothing new: both held
    assert all(snapshot(f) == _snapshot(lake, f) for f in FILTERS)
    late = message("r-late", answer=WRONG, evidence=EVIDENCE, timestamp="2026-11-29T10:30:00Z")
    build_lake(lake, [late])  # a new file in hour 10
    assert held.create_view(_session(lake)) == 1
    assert "r-late" in [item["response_id"] for item in queue(_held_session(lake, held), QueueFilters()).items]
    assert all(snapshot(f) == _snapshot(lake, f) for f in FILTERS)
    assert main(["compact", "--lake", lake]) == 0
    assert held.create_view(_session(lake)) == 0  # compacted: read from the rollup files, nothing held
    assert all(snapshot(f) == _snapshot(lake, f) for f in FILTERS)


def _held_session(lake: str, held: HeldRollup):
    con = _session(lake)
    held.create_view(con)
    return con
