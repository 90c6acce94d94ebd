"""The review queue's rollup: each hour's first sentences awaiting review, and how many there are, kept once.

`dashboards/queries/sentences_awaiting_review.sql` lists the first 500 sentences of responses routed to
human review (by risk, then the least supported) and how many the queue holds. Over the table views that
is a join of every sentence to its response: 16.5 s at 100 million sentences. But the first 500 of the
whole queue are the first 500 of the hours' first 500s (the order is total: it ends with the sentence's
key), and the queue's length is the sum of the hours' lengths, because a sentence and its response lie in
the same hour partition: a sentence row carries its response's `event_time` (`transforms.io.lake.rows`),
which places both rows, and a copy written again keeps it (`TableSpec.partition_local`). So
`groundwatch compact` keeps, per hour, the hour's first `TOP` rows of the queue and its length:

    con.execute(f"CREATE VIEW {REVIEW_VIEW} AS {review_sql(con, lake)}")   # dashboards.views does this

The view has the hour's rows (`date`, `hour`, the query's columns, the unrounded `confidence` and
`grounded_probability` and, on each row, `awaiting_in_hour`). An hour whose `sentences` and `responses`
partitions are both clean (one `compacted-` file each: `reader.is_clean`) and that has a rollup named after both files,
`_<sentences file's stem>.<responses file's stem>.<REVIEW_VIEW>-<fingerprint>.rollup` in the sentences
partition, is read from it; every other hour is computed from its rows, one per key (`reader.files_sql`),
by the same SQL (`review_rows_sql`); the two are a UNION ALL. A rollup named after a file that is no longer
its partition's only one, in either table, or of another definition (fingerprint), is not read: the names
are the record, as for the other rollups (`transforms.io.lake.rollups`), and the same `_` prefix and
`.rollup` suffix keep the files out of a plain reader's way.

The view holds at most `TOP` rows an hour: the queue's first `TOP` rows, and its length, are right; rows
after them (an OFFSET past `TOP`) need the join over the table views.
"""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime, timedelta

import duckdb

from schemas import TABLES
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import record_removal, write_lake_parquet
from transforms.io.lake.reader import files_sql, is_clean, parquet_source, partitions, table_files
from transforms.io.lake.rollups import ROLLUP_SUFFIX, rollup_files

__all__ = [
    "REVIEW_COLUMNS",
    "REVIEW_VIEW",
    "TABLES_USED",
    "TOP",
    "review_fingerprint",
    "review_rollup_path",
    "review_rows_sql",
    "review_sql",
    "write_review_rollups",
]

REVIEW_VIEW = "sentences_awaiting_review_top"
TOP = 500
"""Rows kept per hour: the ready-made query's LIMIT."""

REVIEW_COLUMNS = (
    "risk_level",
    "response_id",
    "sentence_index",
    "attribution_verdict",
    "confidence",
    "grounded_probability",
    "tenant",
    "retriever_version",
    "sentence",
    "awaiting_in_hour",
)
"""The columns of a rollup file (the view adds `date` and `hour`, from the folder)."""

# The rows as CTEs: in a join's right side, DuckDB would bind `DATE` in the reader's `hive_types` to `s.date`.

_ROWS = """
WITH s AS ({sentences}), r AS ({responses})
SELECT {columns} FROM (
    SELECT s.date, s.hour, r.risk_level, s.response_id, s.sentence_index, s.attribution_verdict, s.confidence,
           s.grounded_probability, r.tenant, s.retriever_version, left(s.sentence_text, 120) AS sentence,
           count(*) OVER (PARTITION BY s.date, s.hour) AS awaiting_in_hour,
           row_number() OVER (
               PARTITION BY s.date, s.hour
               ORDER BY CASE r.risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END,
                        s.grounded_probability, s.response_id, s.sentence_index
           ) AS position
    FROM s JOIN r ON s.response_id = r.response_id AND s.date = r.date AND s.hour = r.hour
    WHERE r.needs_review
      AND (s.attribution_verdict IN ('ungrounded', 'contradicted') OR s.confidence < 0.7)
) WHERE position <= {top}
"""


_SENTENCE_FILTER = "attribution_verdict IN ('ungrounded', 'contradicted') OR confidence < 0.7"


def review_rows_sql(sentences: str, responses: str, *, with_partition: bool = True) -> str:
    """Each hour's first `TOP` rows of the review queue, and its length, of `sentences` and `responses`
    (SELECTs of the tables' rows with `date` and `hour`, one per key)."""
    names = [*(("date", "hour") if with_partition else ()), *REVIEW_COLUMNS]
    # The join's filters again on each side, after its duplicates are gone (the same rows): DuckDB does not
    # push them below the ranking, and joining only the queue's rows took a quarter off the time (2M rows).
    sentences = f"SELECT * FROM ({sentences}) WHERE {_SENTENCE_FILTER}"
    responses = f"SELECT * FROM ({responses}) WHERE needs_review"
    return _ROWS.format(columns=", ".join(names), sentences=sentences, responses=responses, top=TOP)


def review_fingerprint() -> str:
    """A short hash of the definition: a rollup of another definition (or another `TOP`) is not read."""
    return hashlib.sha256(repr((_ROWS, TOP, REVIEW_COLUMNS)).encode()).hexdigest()[:8]


def review_rollup_path(sentences_file: str, responses_file: str) -> str:
    """Where the rollup of an hour whose only files are these two compacted files lives: beside the first."""
    folder, name = os.path.split(sentences_file)
    stems = f"{name.removesuffix('.parquet')}.{os.path.basename(responses_file).removesuffix('.parquet')}"
    return lakefs.join(folder, f"_{stems}.{REVIEW_VIEW}-{review_fingerprint()}{ROLLUP_SUFFIX}")


TABLES_USED = ("sentences", "responses")


def _hour(folder: str) -> tuple[str, str]:
    """A partition folder's `date=`/`hour=` names: the same hour in every table."""
    return os.path.basename(os.path.dirname(folder)), os.path.basename(folder)


def _hours(lake_dir: str) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """Every hour of the lake with the files of its `sentences` and `responses` partitions."""
    tables = [{_hour(f): files for f, files in partitions(table_files(lake_dir, t)).items()} for t in TABLES_USED]
    hours = sorted(set(tables[0]) | set(tables[1]))
    return {hour: (tables[0].get(hour, []), tables[1].get(hour, [])) for hour in hours}


def review_sql(con: duckdb.DuckDBPyConnection, lake_dir: str) -> str:
    """The SELECT of the review rollup view over the whole lake: the rollup files of hours whose two
    partitions are clean, and the same rows computed from every other hour's rows (a UNION ALL)."""
    lakefs.attach_duckdb(con, lake_dir)
    present = set(rollup_files(lake_dir, "sentences"))
    stored: list[str] = []
    live: tuple[list[str], list[str]] = ([], [])
    for sentence_files, response_files in _hours(lake_dir).values():
        if is_clean(sentence_files) and is_clean(response_files):
            path = review_rollup_path(sentence_files[0], response_files[0])
            if path in present:
                stored.append(path)
                continue
        live[0].extend(sentence_files)
        live[1].extend(response_files)
    columns = ", ".join(("date", "hour", *REVIEW_COLUMNS))
    parts = []
    if stored:  # every column there, by the fingerprint in the name: no footer read before the query
        parts.append(f"SELECT {columns} FROM {parquet_source(stored, by_name=False)}")
    if live[0] or not stored:
        sentences, responses = (files_sql(con, TABLES[t], files) for t, files in zip(TABLES_USED, live, strict=True))
        parts.append(review_rows_sql(sentences, responses))
    return " UNION ALL ".join(f"({part})" for part in parts) if len(parts) > 1 else parts[0]


def write_review_rollups(lake_dir: str, *, since: datetime | None = None) -> int:
    """Write the rollup of every hour whose `sentences` and `responses` partitions are clean and that has
    none yet (from the hour holding `since` on, if given), and remove the same hour's rollups named after
    earlier files; returns how many were written. Each is published whole (`filesystem.write_parquet`)."""
    con = duckdb.connect(":memory:")
    lakefs.attach_duckdb(con, lake_dir)
    present = set(rollup_files(lake_dir, "sentences"))
    stale: dict[str, list[str]] = {}  # the review rollups of each sentences partition, by folder
    for other in present:
        if f".{REVIEW_VIEW}-" in os.path.basename(other):
            stale.setdefault(os.path.dirname(other), []).append(other)
    written = 0
    try:
        for (date, hour), (sentence_files, response_files) in _hours(lake_dir).items():
            if since is not None and _before(date, hour, since):
                continue
            if not (is_clean(sentence_files) and is_clean(response_files)):
                continue
            path = review_rollup_path(*sentence_files, *response_files)
            if path not in present:
                sentences, responses = (
                    files_sql(con, TABLES[t], files)
                    for t, files in zip(TABLES_USED, (sentence_files, response_files), strict=True)
                )
                frame = con.sql(review_rows_sql(sentences, responses, with_partition=False)).to_arrow_table()
                write_lake_parquet(path, frame)
                written += 1
            # Rollups of this hour named after files that are gone (a partition compacted again): never read.
            for other in stale.get(os.path.dirname(path), ()):
                if other != path:
                    record_removal(lake_dir, [other])  # the manifest names it before it goes
                    lakefs.remove_file(other)
    finally:
        con.close()
    return written


def _before(date: str, hour: str, since: datetime) -> bool:
    """Whether the partition `date=`/`hour=` ends at or before `since`."""
    try:
        start = datetime.strptime(f"{date} {hour}", "date=%Y-%m-%d hour=%H").replace(tzinfo=UTC)
    except ValueError:
        return False  # a folder not named so: not skipped
    return start + timedelta(hours=1) <= since
