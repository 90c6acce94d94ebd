"""`groundwatch query` makes only the views its SQL names: a query of one table does not list or read the others.

The lake is real (rows through the lake's writer, a real DuckDB); a file DuckDB cannot read in one table shows
which views a query made, since making that table's view reads the file's footer.
"""

from __future__ import annotations

import os

import pytest

from dashboards.readonly import open_readonly
from dashboards.views import VIEWS, views_named
from pipelines.cli import main as groundwatch
from tests.support.lake_rows import dead_letter_row
from transforms.io.lake.writer import write_table

ALL = list(VIEWS)


@pytest.fixture()
def lake(tmp_path):
    """Two dead letters, and a `sentences` partition whose one file is not Parquet."""
    rows = [dead_letter_row(i) for i in range(2)]
    write_table(str(tmp_path), "dead_letters", rows)
    broken = tmp_path / "sentences" / "date=2026-11-29" / "hour=09"
    broken.mkdir(parents=True)
    (broken / "part-broken.parquet").write_bytes(b"not a parquet file")
    return str(tmp_path)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", []),
        ("SELECT count(*) FROM dead_letters", ["dead_letters"]),
        ('select * from "Sentences" s join main.responses r using (response_id)', ["responses", "sentences"]),
        ("SELECT * FROM sentences_awaiting_review_top", ["sentences_awaiting_review_top"]),
        ("SUMMARIZE alerts", ["alerts"]),
        ("SELECT 'claims' AS word", ["claims"]),  # a name in a string: a view made for nothing, never one missing
        ("SHOW TABLES", ALL),
        ("DESCRIBE", ALL),
        ("DESCRIBE alerts", ALL),  # a DESCRIBE that names a view can still list them all, as the next two do
        ("SELECT name FROM (SHOW ALL TABLES) WHERE name <> 'alerts'", ALL),
        ("SHOW TABLES -- all but alerts", ALL),
        ("SELECT view_name FROM duckdb_views()", ALL),
        ("SELECT * FROM information_schema.tables", ALL),
        ("SELECT * FROM query('SELECT * FROM ' || 'alerts')", ALL),
        ("SELECT * FROM query_table('dead_letters')", ALL),
    ],
)
def test_the_views_a_query_can_read(sql, expected):
    assert views_named(sql) == expected


def test_open_readonly_makes_the_views_it_is_given(lake):
    with open_readonly(lake, ["dead_letters"]) as con:
        made = con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()
    assert made == [("dead_letters",)]


def test_a_query_of_one_table_reads_no_other(lake, capsys):
    assert groundwatch(["query", "--lake", lake, "--format", "csv", "SELECT count(*) AS n FROM dead_letters"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "2"]
    assert groundwatch(["query", "--lake", lake, "SELECT 1"]) == 0


def test_a_table_that_cannot_be_read_is_named_in_one_line(lake, capsys):
    assert groundwatch(["query", "--lake", lake, "SELECT count(*) FROM sentences"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("groundwatch query: a table of the lake cannot be read: ")
    assert os.path.join("sentences", "date=2026-11-29", "hour=09", "part-broken.parquet") in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1", sorted(VIEWS)),
        ("SELECT name FROM (SHOW TABLES) WHERE name <> 'alerts' ORDER BY 1", sorted(set(VIEWS) - {"alerts"})),
    ],
)
def test_the_catalog_lists_every_view(tmp_path, capsys, sql, expected):
    assert groundwatch(["query", "--lake", str(tmp_path), "--format", "csv", sql]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == expected


def test_a_view_named_at_run_time_is_found(tmp_path, capsys):
    """The text never spells `sentences`: DuckDB's unknown table runs the query again with every view."""
    sql = "SELECT count(*) AS n FROM pragma_table_info('sent' || 'ences') WHERE name = 'attribution_verdict'"
    assert groundwatch(["query", "--lake", str(tmp_path), "--format", "csv", sql]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "1"]


def test_a_misspelt_view_gets_the_closest_name(tmp_path, capsys):
    """The text names no view, so none is made; DuckDB's unknown name runs the query again with every view."""
    assert groundwatch(["query", "--lake", str(tmp_path), "SELECT count(*) FROM sentence"]) == 2
    err = capsys.readouterr().err
    assert 'Did you mean "sentences"?' in err and len(err.splitlines()) == 1
