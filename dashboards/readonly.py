"""Read-only SQL over the audit lake: DuckDB itself keeps the connection to the lake, the parser keeps it to queries.

    with open_readonly("./groundwatch-lake") as con:
        statement = check_read_only(sql, con)     # raises Refused, with the reason
        rows = con.execute(statement).fetchall()

The audit lake is an audit trail, so `groundwatch query` must not be a way to
forge it. A prefix check cannot do that (`EXPLAIN ANALYZE COPY ... TO` runs the
copy), so two guards work together:

- The engine. `open_readonly` sets `allowed_directories` to the lake, then
  `enable_external_access = false` (in that order: DuckDB refuses to change
  the allowed directories once access is off, and with access off and no
  allowed directory the views could not read their own files), turns off
  extension auto-install and auto-load, creates the views, and sets
  `lock_configuration = true`, after which no SET, RESET, PRAGMA or
  `enable_logging()` can change a setting. No file outside the lake can be
  read or written (`read_csv('/etc/passwd')` is a Permission Error); spill
  files go to a private folder that is removed on close. A lake in object
  storage (`s3://bucket/lake`) is read through a filesystem registered on the
  connection before access is turned off, and its prefix is the one allowed
  directory (`transforms.io.lake.filesystem.attach_duckdb`).
- The parser. DuckDB can still write inside its allowed directories, so
  `check_read_only` lets through only what reads: exactly one statement (a
  second one could only matter for what it changes, and only the last result
  could be printed), of DuckDB's own type SELECT (which covers WITH, FROM,
  VALUES, DESCRIBE, SHOW, SUMMARIZE), or an EXPLAIN [ANALYZE] whose explained
  statement is itself such a query. Inside a query, the functions that change
  state (`checkpoint()`, `setseed()`, `enable_logging()`...) are refused, and
  the SQL text given to `query('...')` is checked the same way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Collection, Iterator

import duckdb

from dashboards.views import create_views
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.reader import sql_literal

__all__ = ["LakeNotFound", "Refused", "Unreadable", "check_read_only", "open_readonly"]

# Functions a SELECT may call that change the connection or the database instead of reading.
_CHANGES_STATE = frozenset(
    {
        "checkpoint",
        "force_checkpoint",
        "enable_logging",
        "disable_logging",
        "truncate_duckdb_logs",
        "write_log",
        "enable_profiling",
        "disable_profiling",
        "setseed",
        "nextval",
        "setval",
        "json_execute_serialized_sql",
        "create_external_resource",
        "register_external_resource",
        "register_external_resource_type",
        "deregister_external_resource",
        "destroy_external_resource",
        "add_grammar_extension",
        "remove_grammar_extension",
    }
)
_KINDS = "SELECT, WITH, FROM, VALUES, DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN [ANALYZE] of one of them"
_MAX_NESTING = 8


class Refused(ValueError):
    """A statement that could change something or reach outside the lake; the message says why, on one line."""


class LakeNotFound(ValueError):
    """The lake folder given does not exist or is not a folder."""


class Unreadable(ValueError):
    """A file of the lake that DuckDB cannot read (not Parquet, cut short); the message names it, on one line."""


@contextlib.contextmanager
def open_readonly(lake_dir: str, views: Collection[str] | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory connection with the lake's views (`views`, default every one) that can read the lake's files
    and nothing else."""
    try:
        lake = lakefs.normalize(lake_dir)
        found = lakefs.is_dir(lake)
    except (ValueError, OSError) as e:
        raise LakeNotFound(f"the lake {lake_dir}: {e}") from None
    if not found:
        if lakefs.is_remote(lake):
            raise LakeNotFound(f"the lake {lake} holds no files (give the prefix an audit wrote with --lake)")
        if not os.path.exists(lake):
            raise LakeNotFound(f"the lake {lake_dir} does not exist (give the folder an audit wrote with --lake)")
        raise LakeNotFound(f"the lake {lake_dir} is not a folder")
    # DuckDB creates the spill folder only when a query outgrows memory; it is allowed implicitly.
    spill = os.path.join(tempfile.gettempdir(), f"groundwatch-query-{uuid.uuid4().hex}")
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET temp_directory = {sql_literal(spill)}")
        # DuckDB draws its progress bar on stdout once a query runs 2 s, into the CSV or JSON being printed.
        con.execute("SET enable_progress_bar = false")
        con.execute("SET autoinstall_known_extensions = false")
        con.execute("SET autoload_known_extensions = false")
        # Defence in depth: a name that is no view never reads a Python object of the caller that bears it.
        con.execute("SET python_enable_replacements = false")
        # A remote lake is read through a filesystem registered now, while registering is still allowed; its
        # prefix, with the separator, is the one allowed directory (so `s3://bucket/lake2` is not).
        lakefs.attach_duckdb(con, lake)
        allowed = lake + "/" if lakefs.is_remote(lake) else lake
        con.execute(f"SET allowed_directories = [{sql_literal(allowed)}]")
        con.execute("SET enable_external_access = false")
        try:
            create_views(con, lake, views)
        except duckdb.Error as e:  # a file of a table that DuckDB cannot read: making its view reads the footer
            raise Unreadable(f"a table of the lake cannot be read: {str(e).strip().splitlines()[0]}") from None
        con.execute("SET lock_configuration = true")
        yield con
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def check_read_only(sql: str, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """The one reading statement of `sql`, or Refused; a syntax error is DuckDB's own ParserException.

    `con` serializes queries for checking (nothing runs on it); without one, a private connection is opened.
    """
    statements = duckdb.extract_statements(sql)
    if not statements:
        raise Refused("no SQL statement given")
    if len(statements) > 1:
        raise Refused(
            f"{len(statements)} statements given; give one query (only its result is printed, "
            "and a statement before it could only change something)"
        )
    [statement] = statements
    parser = con if con is not None else duckdb.connect(":memory:")
    try:
        _check(statement, parser, 0)
    finally:
        if con is None:
            parser.close()
    return statement.query


def _check(statement: duckdb.Statement, parser: duckdb.DuckDBPyConnection, depth: int) -> None:
    if statement.type == duckdb.StatementType.SELECT:
        _check_functions(statement.query, parser, depth)
    elif statement.type == duckdb.StatementType.EXPLAIN:
        _check_explained(statement.query, parser, depth)
    else:
        raise Refused(f"a statement of type {statement.type.name}; only reading queries run here ({_KINDS})")


def _check_explained(text: str, parser: duckdb.DuckDBPyConnection, depth: int) -> None:
    """EXPLAIN ANALYZE runs what it explains, so the explained statement must be a query too.

    DuckDB's grammar is `EXPLAIN [ANALYZE] stmt` or `EXPLAIN (options) stmt`. The prefix is cut with DuckDB's own
    tokenizer (comments skipped) at every place the statement may begin; each cut that parses must be one query,
    and at least one must parse, so no reading of the prefix can hide a COPY or a CREATE.
    """
    tokens = duckdb.tokenize(text)
    spans = [
        (start, text[start:end].strip().lower())
        for (start, kind), end in zip(tokens, [t[0] for t in tokens[1:]] + [len(text)], strict=True)
        if kind != duckdb.token_type.comment
    ]
    if not spans or spans[0][1] != "explain":
        raise Refused("an EXPLAIN statement this check cannot read; write EXPLAIN [ANALYZE] followed by a query")
    cuts = {1}
    position = 1
    if position < len(spans) and spans[position][1] in ("analyze", "analyse"):
        position += 1
        cuts.add(position)
    if position < len(spans) and spans[position][1].startswith("("):
        level = 0
        for index in range(position, len(spans)):
            level += spans[index][1].count("(") - spans[index][1].count(")")
            if level <= 0:
                cuts.add(index + 1)
                break
    parsed = []
    for cut in sorted(cuts):
        rest = text[spans[cut][0] :] if cut < len(spans) else ""
        try:
            statements = duckdb.extract_statements(rest)
        except duckdb.Error:
            continue
        if statements:  # a cut past the end reads as nothing
            parsed.append(statements)
    if not parsed:
        raise Refused("an EXPLAIN of something that is not a query; only a query may be explained")
    for explained in parsed:
        if len(explained) != 1 or explained[0].type != duckdb.StatementType.SELECT:
            kinds = ", ".join(s.type.name for s in explained)
            raise Refused(f"EXPLAIN of {kinds}; EXPLAIN ANALYZE runs what it explains, so only a query is explained")
        _check_functions(explained[0].query, parser, depth)


def _check_functions(query: str, parser: duckdb.DuckDBPyConnection, depth: int) -> None:
    """Refuse a query that calls a function changing state; check the SQL handed to query('...') like the outer."""
    if depth > _MAX_NESTING:
        raise Refused(f"query(...) nested more than {_MAX_NESTING} deep")
    tree = json.loads(parser.execute("SELECT json_serialize_sql($sql)", {"sql": query}).fetchone()[0])
    if tree.get("error"):
        raise Refused(f"a query DuckDB cannot serialize for checking: {tree.get('error_message', '')}")
    for call in _function_calls(tree):
        name = str(call.get("function_name", "")).lower()
        if name in _CHANGES_STATE:
            raise Refused(f"{name}() changes state; only reading queries run here")
        if name == "query":
            arguments = call.get("arguments") or []
            expression = arguments[0].get("expression", {}) if arguments else {}
            literal = expression.get("literal", {}) if expression.get("class") == "CONSTANT" else {}
            if literal.get("kind") != "STRING":
                raise Refused("query(...) with SQL that is not a plain string literal cannot be checked")
            try:
                inner = duckdb.extract_statements(literal["text"])
            except duckdb.Error as e:
                raise Refused(f"query(...) with SQL that does not parse: {str(e).splitlines()[0]}") from None
            if len(inner) != 1:
                raise Refused(f"query(...) with {len(inner)} statements; it takes one query")
            _check(inner[0], parser, depth + 1)


def _function_calls(node: object) -> Iterator[dict]:
    """Every function call in a serialized statement: scalar, aggregate, window and table functions alike."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "function_name" in item:
                yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
