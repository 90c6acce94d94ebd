"""`groundwatch query` is read-only by the engine: attempts to write, escape the lake or change a setting all fail.

The lake is a real one, written by `groundwatch audit` on sample traffic. Every attempt runs the real command and
must exit 2 with a one-line reason and no traceback, leave every file under the test's folders (the lake, a folder
outside it, the working directory) as it was, and change no setting of the connection it would run on.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile

import duckdb
import pytest

from dashboards.readonly import Refused, check_read_only, open_readonly
from pipelines.cli import main as groundwatch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SAMPLE = os.path.join(ROOT, "pipelines", "data", "sample_traffic.jsonl")
QUERIES = sorted(glob.glob(os.path.join(ROOT, "dashboards", "queries", "*.sql")))


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """A lake audited from 20 sample lines and one malformed line, next to a folder outside it with files to steal."""
    base = tmp_path_factory.mktemp("readonly")
    traffic = base / "traffic.jsonl"
    with open(SAMPLE, "rb") as f:
        traffic.write_bytes(b"".join(f.readlines()[:20]) + b"{not json\n")
    lake = base / "lake"
    assert groundwatch(["audit", "--input", str(traffic), "--lake", str(lake)]) == 0
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('{"token": "s3cr3t"}\n')
    duckdb.execute(f"COPY (SELECT 42 AS answer) TO '{outside / 'other.parquet'}' (FORMAT parquet)")
    part = sorted(glob.glob(str(lake / "responses" / "**" / "*.parquet"), recursive=True))[0]
    return {"base": str(base), "lake": str(lake), "out": str(outside), "part": part}


def _snapshot(*roots: str) -> dict[str, tuple[int, int]]:
    """Path, size and mtime of every file and folder under the roots, and of any spill folder the query left."""
    found = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                stat = os.lstat(path)
                found[path] = (stat.st_size, stat.st_mtime_ns)
    for spill in glob.glob(os.path.join(tempfile.gettempdir(), "groundwatch-query-*")):
        found[spill] = (0, 0)
    return found


def _settings(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall()


# {lake}, {out} (a folder outside the lake, also the working directory) and {part} (a response file of the lake).
ATTEMPTS = [
    # EXPLAIN ANALYZE runs what it explains: the forged audit trail of the issue, and its disguises.
    "EXPLAIN ANALYZE COPY (SELECT * FROM responses) TO '{part}' (FORMAT parquet)",
    "explain analyze copy (select 1 as forged) to '{lake}/responses/date=2026-11-29/hour=09/part-x.parquet'",
    "EXPLAIN (ANALYZE) COPY (SELECT 1) TO '{out}/x.csv'",
    "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
    "/* audit */ EXPLAIN /* c */ ANALYZE -- c\n COPY (SELECT 1) TO '{lake}/x.csv'",
    "EXPLAIN ANALYZE INSERT INTO responses SELECT * FROM responses",
    "EXPLAIN COPY (SELECT 1) TO '{out}/y.csv'",
    "EXPLAIN EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}/z.csv'",
    "EXPLAIN ANALYZE SELECT * FROM read_csv('/etc/passwd')",
    # Writes.
    "COPY (SELECT * FROM responses) TO '{part}' (FORMAT parquet)",
    "copy responses to '{out}/r.csv'",
    "COPY (SELECT 1) TO 'relative.csv'",
    "CREATE TABLE t AS SELECT 1",
    "create or replace view responses as select 1",
    "DROP VIEW responses",
    "ALTER VIEW responses RENAME TO r",
    "CREATE MACRO m(x) AS x + 1",
    "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "INSERT INTO responses SELECT * FROM responses",
    "DELETE FROM responses",
    "UPDATE responses SET tenant = 'x'",
    "EXPORT DATABASE '{out}/export'",
    "IMPORT DATABASE '{out}'",
    "PREPARE p AS SELECT 1",
    "BEGIN TRANSACTION",
    "VACUUM",
    # Other databases, extensions, settings.
    "ATTACH ':memory:' AS m",
    "ATTACH '{out}/x.duckdb' AS x",
    "attach '{lake}/x.duckdb' as x",
    "DETACH memory",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "set lock_configuration=false",
    "RESET enable_external_access",
    "SET GLOBAL allowed_directories = ['/']",
    "USE system",
    "PRAGMA enable_profiling",
    "pragma threads=1",
    "CALL checkpoint()",
    "CHECKPOINT",
    "PIVOT responses ON tenant USING count(*)",
    # Several statements: a harmless query first.
    "SELECT 1; COPY (SELECT 1) TO '{out}/two.csv'",
    "SELECT 1; SELECT 2",
    "select 1 -- comment\n; set threads = 1",
    # Files outside the lake, by every reader.
    "SELECT * FROM read_csv('/etc/passwd')",
    "SeLeCt * FrOm ReAd_CsV_aUtO('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM glob('/etc/*')",
    "SELECT * FROM read_json('{out}/secret.json')",
    "SELECT * FROM read_text('{lake}/../outside/secret.json')",
    "SELECT * FROM read_parquet('{out}/other.parquet')",
    "SELECT * FROM parquet_metadata('{out}/other.parquet')",
    "SELECT * FROM sniff_csv('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "WITH x AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM x",
    "SELECT (SELECT count(*) FROM read_text('/etc/passwd')) FROM responses",
    # Nested SQL and functions that change state.
    "SELECT * FROM query('SELECT * FROM read_csv(''/etc/passwd'')')",
    "SELECT * FROM query('COPY (SELECT 1) TO ''{out}/q.csv''')",
    "SELECT * FROM query('SELECT * FROM query(''SELECT * FROM checkpoint()'')')",
    "SELECT * FROM query('SELECT ' || '1')",
    "SELECT * FROM query_table('{out}/other.parquet')",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM enable_logging(storage := 'file', storage_path := '{lake}/log')",
    "SELECT setseed(0.5)",
]


def test_the_attempts_are_many():
    assert len(ATTEMPTS) >= 40


@pytest.mark.parametrize("template", ATTEMPTS)
def test_attempt_is_refused_and_changes_nothing(place, template, capsys, monkeypatch):
    sql = template.format(**place)
    monkeypatch.chdir(place["out"])
    before = _snapshot(place["base"])
    assert groundwatch(["query", "--lake", place["lake"], sql]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("groundwatch query: ") and "Traceback" not in captured.err
    assert _snapshot(place["base"]) == before
    # The same checks on one connection, whose settings must stay as they were.
    with open_readonly(place["lake"]) as con:
        settings = _settings(con)
        with pytest.raises((Refused, duckdb.Error)):
            con.execute(check_read_only(sql, con)).fetchall()
        assert _settings(con) == settings
    assert _snapshot(place["base"]) == before


def test_the_forged_audit_trail_from_the_shell(place):
    """The issue's case, as a user would type it: exit 2, the file of the lake untouched."""
    before = _snapshot(place["base"])
    sql = f"EXPLAIN ANALYZE COPY (SELECT * FROM responses LIMIT 1) TO '{place['part']}' (FORMAT parquet)"
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", "query", "--lake", place["lake"], sql],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("groundwatch query: refused: EXPLAIN of COPY")
    assert "Traceback" not in result.stderr
    assert _snapshot(place["base"]) == before


# Bypassing the statement check: the engine alone refuses these on the connection, and keeps its settings.
ENGINE_ATTEMPTS = [
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "RESET lock_configuration",
    "SET allowed_directories = ['/']",
    "PRAGMA enable_profiling",
    "SET autoload_known_extensions = true",
    "SELECT * FROM enable_logging(storage := 'file', storage_path := '{lake}/log')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('{lake}/../outside/secret.json')",
    "COPY (SELECT 1) TO '{out}/engine.csv'",
    "ATTACH '{out}/engine.duckdb' AS e",
    "EXPORT DATABASE '{out}/engine'",
    "INSTALL httpfs",
    "LOAD httpfs",
]


@pytest.mark.parametrize("template", ENGINE_ATTEMPTS)
def test_the_engine_refuses_on_its_own(place, template):
    before = _snapshot(place["base"])
    with open_readonly(place["lake"]) as con:
        settings = _settings(con)
        with pytest.raises(duckdb.Error):
            con.execute(template.format(**place)).fetchall()
        assert _settings(con) == settings
        assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 20
    assert _snapshot(place["base"]) == before


READING = [
    ("SELECT count(*) AS n FROM responses", "20"),
    ("select count(*) as n from dead_letters -- the malformed line", "1"),
    ("/* per tenant */ SELECT tenant, count(*) FROM responses GROUP BY ALL ORDER BY 1", "lexbridge"),
    ("WITH t AS (SELECT tenant FROM responses) SELECT count(DISTINCT tenant) AS n FROM t", "n"),
    ("FROM sentences SELECT count(*) AS sentences", "sentences"),
    ("VALUES (1, 'one')", "one"),
    ("DESCRIBE responses", "response_id"),
    ("SHOW TABLES", "sentences"),
    ("SUMMARIZE SELECT overall_faithfulness_score FROM responses", "overall_faithfulness_score"),
    ("EXPLAIN SELECT * FROM sentences", "physical_plan"),
    ("explain analyze select count(*) from responses", "analyzed_plan"),
    ("EXPLAIN (FORMAT json) SELECT 1", "physical_plan"),
    ("EXPLAIN ANALYZE (SELECT 1)", "analyzed_plan"),
    ("SELECT * FROM query('SELECT count(*) AS n FROM claims')", "n"),
    ("SELECT count(*) AS n FROM query_table('citations')", "n"),
    ("SELECT count(*) AS files FROM read_blob('{lake}/**/*.parquet')", "files"),
    ("SELECT count(*) AS n FROM read_parquet('{part}')", "n"),
    ("SELECT current_setting('enable_external_access') AS access, current_setting('lock_configuration')", "False,True"),
]


@pytest.mark.parametrize(("template", "expected"), READING)
def test_reading_queries_still_run(place, template, expected, capsys):
    before = _snapshot(place["base"])
    assert groundwatch(["query", "--lake", place["lake"], "--format", "csv", template.format(**place)]) == 0
    assert expected in capsys.readouterr().out
    assert _snapshot(place["base"]) == before


@pytest.mark.parametrize("path", QUERIES, ids=os.path.basename)
def test_the_ready_made_queries_run(place, path, capsys):
    assert groundwatch(["query", "--lake", place["lake"], "--file", path]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[-1].endswith(("row)", "rows)"))


def test_a_relative_lake_path(place, capsys, monkeypatch):
    monkeypatch.chdir(place["base"])
    assert groundwatch(["query", "--lake", "lake", "--format", "csv", "SELECT count(*) AS n FROM responses"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "20"]
