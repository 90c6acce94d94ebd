"""`groundwatch query`: read-only SQL over the lake in three formats; bad SQL gets DuckDB's message, no traceback."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from pipelines.cli import main as groundwatch
from tests.support.lake_rows import dead_letter_row
from transforms.io.lake.writer import write_table


@pytest.fixture()
def lake(tmp_path):
    rows = [dead_letter_row(i, reason) for i, reason in enumerate(["malformed_json", "malformed_json", "not_utf8"])]
    write_table(str(tmp_path), "dead_letters", rows)
    return str(tmp_path)


SQL = "SELECT split_part(error, ':', 1) AS reason, count(*) AS n FROM dead_letters GROUP BY 1 ORDER BY 1"


def test_table_format(lake, capsys):
    assert groundwatch(["query", "--lake", lake, SQL]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["reason", "n"]
    assert out[2].split() == ["malformed_json", "2"] and out[3].split() == ["not_utf8", "1"]
    assert out[-1] == "(2 rows)"


def test_csv_and_json_formats(lake, capsys):
    assert groundwatch(["query", "--lake", lake, "--format", "csv", SQL]) == 0
    assert list(csv.reader(io.StringIO(capsys.readouterr().out))) == [
        ["reason", "n"],
        ["malformed_json", "2"],
        ["not_utf8", "1"],
    ]
    assert (
        groundwatch(
            ["query", "--lake", lake, "--format", "json", "SELECT raw_payload, received_at FROM dead_letters LIMIT 1"]
        )
        == 0
    )
    [row] = json.loads(capsys.readouterr().out)
    assert row["raw_payload"] == "{oops" and row["received_at"].startswith("2026-11-29T09:0")


def test_sql_from_file_and_empty_tables(lake, tmp_path, capsys):
    sql_file = tmp_path / "q.sql"
    sql_file.write_text("-- how many audited\nSELECT count(*) AS audited FROM responses;\n")
    assert groundwatch(["query", "--lake", lake, "--file", str(sql_file)]) == 0
    assert capsys.readouterr().out.splitlines()[2].strip() == "0"


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC 1", "Parser Error"),
        ("SELECT * FROM no_such_table", "Catalog Error"),
        ("SELECT no_such_column FROM dead_letters", "Binder Error"),
        ("CREATE TABLE t AS SELECT 1", "refused: a statement of type CREATE; only reading queries"),
        ("COPY (SELECT 1) TO 'out.csv'", "refused: a statement of type COPY; only reading queries"),
    ],
)
def test_bad_or_writing_query_exits_2_with_the_reason(lake, capsys, sql, message):
    assert groundwatch(["query", "--lake", lake, sql]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_bad_query_from_the_shell_prints_no_traceback(lake):
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "query", "--lake", lake, "SELECT FROM WHERE"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Parser Error" in result.stderr and "Traceback" not in result.stderr


def test_a_lake_that_does_not_exist_is_named_not_read_as_empty(tmp_path, capsys):
    missing = str(tmp_path / "no-such-lake")
    assert groundwatch(["query", "--lake", missing, "SELECT count(*) FROM responses"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"groundwatch query: the lake {missing} does not exist (give the folder an audit wrote with --lake)\n"
    )
    assert not (tmp_path / "no-such-lake").exists()


def test_a_lake_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "lake.txt").write_text("not a lake")
    assert groundwatch(["query", "--lake", str(tmp_path / "lake.txt"), "SELECT 1"]) == 2
    assert capsys.readouterr().err == f"groundwatch query: the lake {tmp_path / 'lake.txt'} is not a folder\n"
