"""Rollups: aggregates of a clean partition, kept beside its compacted file, for queries a scan makes slow.

At 100 million sentences two ready-made queries cost more than any lake layout removes: DuckDB's
`count(DISTINCT response_id)` over every sentence (`worst_retrievers`), and the unnest of every sentence's
unsupported spans with two distinct counts (`unsupported_spans`), each 13-21 s on the raw files. Their
figures add up over partitions, so `groundwatch compact` aggregates each partition once, when it makes it
clean, and the queries add the partitions' rows up:

    con.execute(f"CREATE VIEW sentences_by_retriever AS {rollup_sql(con, ROLLUPS['sentences_by_retriever'], lake)}")
    con.sql("SELECT retriever_version, sum(responses) FROM sentences_by_retriever GROUP BY 1")

A rollup view has one row per partition (`date`, `hour`) and value of its dimensions. For a clean partition
(one `compacted-` file: `reader.is_clean`) it reads the rollup file named after that file,
`_<compacted file's stem>.<rollup>-<fingerprint>.rollup`; for every other partition (several files, or a
rollup not written yet) it aggregates the partition's rows, one per key (`reader.files_sql`), with the same
SQL (`Rollup.aggregate_sql`). The name is the record: a rollup named after a file that is no longer the
partition's only file is ignored, so no marker can disagree with the files, and a rollup of an older
definition (another fingerprint) is ignored too. The leading `_` and the suffix keep the files out of every
plain reader's way: DuckDB's `*.parquet` glob does not match them and pyarrow's datasets skip names starting
with `_`.

Distinct counts add up over partitions because every row of a response lies in one partition: a sentence
row carries its response's `event_time` (the table's time column, which places it) and tenant, and a copy
written again keeps them (`TableSpec.partition_local`).
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb

from schemas import TABLES, ReviewRoute
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import write_lake_parquet
from transforms.io.lake.reader import (
    PARTITION_COLUMNS,
    files_sql,
    is_clean,
    parquet_source,
    partitions,
    sql_ident,
    table_files,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "REVIEW_QUEUE_ITEMS",
    "HeldRollup",
    "RISK_RANK_SQL",
    "ROLLUPS",
    "ROUTE_BITS_SQL",
    "ROLLUP_SUFFIX",
    "Rollup",
    "rollup_files",
    "rollup_path",
    "rollup_sql",
    "route_bit",
    "rollups_of",
    "write_rollups",
]

ROLLUP_SUFFIX = ".rollup"
"""How a rollup file's name ends (a Parquet file that no `*.parquet` glob of the lake's tables matches)."""


@dataclass(frozen=True)
class Rollup:
    """One rollup: the rows of `table` (`source`, SQL over `{rows}`) grouped by `dimensions`, with `measures`."""

    name: str
    """The view's name, and part of each rollup file's name."""
    table: str
    source: str
    """SELECT over `{rows}` (the table's rows, one per key, with `date` and `hour`) of what is aggregated."""
    dimensions: tuple[str, ...]
    measures: tuple[tuple[str, str], ...]
    """(column, aggregate SQL) pairs; each must add up over partitions (counts, sums, min, max)."""

    def __post_init__(self) -> None:
        if not TABLES[self.table].partition_local:
            raise ValueError(f"{self.table}: a key's copies may lie in several partitions; it cannot be rolled up")

    @property
    def fingerprint(self) -> str:
        """A short hash of the definition: a rollup file of another definition is not read."""
        return hashlib.sha256(repr((self.source, self.dimensions, self.measures)).encode()).hexdigest()[:8]

    @property
    def columns(self) -> list[str]:
        return [*PARTITION_COLUMNS, *self.dimensions, *(name for name, _ in self.measures)]

    def aggregate_sql(self, rows: str, *, per_partition: bool = True) -> str:
        """The aggregate of `rows` (a SELECT of the table's rows): per partition and dimensions, or (for the
        file of one partition) per dimensions only."""
        group = [*(PARTITION_COLUMNS if per_partition else ()), *self.dimensions]
        keys = ", ".join(sql_ident(c) for c in group)
        measures = ", ".join(f"{sql} AS {sql_ident(name)}" for name, sql in self.measures)
        return f"SELECT {keys}, {measures} FROM ({self.source.format(rows=f'({rows})')}) GROUP BY {keys}"


RISK_RANK_SQL = "CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END"
"""The review queue's first order: high risk first."""


def route_bit(route: str) -> int:
    """The bit of a review route (`schemas.ReviewRoute`) in `route_bits`; 0, matching nothing, for another name."""
    names = [r.value for r in ReviewRoute]
    return 1 << names.index(route) if route in names else 0


ROUTE_BITS_SQL = " + ".join(
    f"CASE WHEN list_contains(review_routes, '{r.value}') THEN {route_bit(r.value)} ELSE 0 END" for r in ReviewRoute
)
"""A response's review routes (`responses.review_routes`, written by the audit) as an integer, a bit per
route: short stored values, where matching the reasons' text against patterns made an hour not compacted yet
cost seconds a page (over a million responses the queue took 45-112 s)."""
REVIEW_QUEUE_ITEMS = "review_queue_items"
"""The review app's queue: one row per response in review with the short columns it orders, filters and counts
by, and its routes as bits (`ROUTE_BITS_SQL`): over a million responses the queue's scans of the `responses`
view (its rows ranked) took seconds a page."""

ROLLUPS: dict[str, Rollup] = {
    rollup.name: rollup
    for rollup in (
        Rollup(
            "sentences_by_retriever",
            "sentences",
            "SELECT * FROM {rows}",
            ("retriever_version",),
            (
                ("responses", "count(DISTINCT response_id)"),
                ("sentences", "count(*)"),
                ("confidence_count", "count(confidence)"),
                ("confidence_sum", "sum(confidence)"),
                ("grounded_probability_sum", "sum(grounded_probability)"),
                ("unsupported", "count(*) FILTER (WHERE attribution_verdict IN ('ungrounded', 'contradicted'))"),
            ),
        ),
        Rollup(
            "unsupported_spans_by_tenant",
            "sentences",
            "SELECT * FROM (SELECT date, hour, unnest(unsupported_spans) AS span, response_id, tenant FROM {rows}) "
            "WHERE length(trim(span)) > 0",
            ("span", "tenant"),
            (
                ("occurrences", "count(*)"),
                ("responses", "count(DISTINCT response_id)"),
                ("example_response_id", "min(response_id)"),
            ),
        ),
        Rollup(
            REVIEW_QUEUE_ITEMS,
            "responses",
            f"SELECT *, {RISK_RANK_SQL} AS risk_rank, {ROUTE_BITS_SQL} AS route_bits FROM {{rows}} WHERE needs_review",
            (
                "response_id",
                "event_time",
                "tenant",
                "risk_level",
                "verifier_version",
                "overall_faithfulness_score",
                "sentence_count",
                "critical_flag_count",
                "risk_rank",
            ),
            # A measure, not a dimension: over an hour not compacted yet, a query that does not read the
            # routes (a page of the queue) leaves them out of the plan.
            (("copies", "count(*)"), ("route_bits", "bit_or(route_bits)")),
        ),
    )
}
"""Every rollup, by view name."""


def rollups_of(table: str) -> list[Rollup]:
    """The rollups of one lake table (none for most)."""
    return [rollup for rollup in ROLLUPS.values() if rollup.table == table]


def rollup_path(compacted_file: str, rollup: Rollup) -> str:
    """Where the rollup of the partition whose only file is `compacted_file` lives: beside it, named after it."""
    folder, name = os.path.split(compacted_file)
    stem = name.removesuffix(".parquet")
    return lakefs.join(folder, f"_{stem}.{rollup.name}-{rollup.fingerprint}{ROLLUP_SUFFIX}")


def rollup_files(lake_dir: str, table: str) -> list[str]:
    """Every rollup file under a table's folder, sorted."""
    if lakefs.is_remote(lake_dir):
        return lakefs.list_files(lakefs.join(lakefs.normalize(lake_dir), table), ROLLUP_SUFFIX)
    pattern = os.path.join(glob.escape(os.path.abspath(lake_dir)), glob.escape(table), "**", f"_*{ROLLUP_SUFFIX}")
    return sorted(glob.iglob(pattern, recursive=True))


def write_rollups(
    con: duckdb.DuckDBPyConnection, table: str, compacted_file: str, rollups: Sequence[Rollup] | None = None
) -> list[str]:
    """Write the rollups (default: every one of the table) of the partition whose one file is `compacted_file`,
    from that file; returns the paths written. Each is published whole, like the lake's files
    (`filesystem.write_parquet`)."""
    rows = files_sql(con, TABLES[table], [compacted_file])
    written = []
    for rollup in rollups_of(table) if rollups is None else rollups:
        frame = con.sql(rollup.aggregate_sql(rows, per_partition=False)).to_arrow_table()
        written.append(write_lake_parquet(rollup_path(compacted_file, rollup), frame))
    return written


def _split(lake_dir: str, rollup: Rollup) -> tuple[list[str], list[list[str]]]:
    """The rollup files of the clean partitions that have one, and the files of every other partition."""
    present = set(rollup_files(lake_dir, rollup.table))
    stored: list[str] = []
    live: list[list[str]] = []
    for partition_files in partitions(table_files(lake_dir, rollup.table)).values():
        path = rollup_path(partition_files[0], rollup) if is_clean(partition_files) else None
        if path in present:
            stored.append(path)
        else:
            live.append(partition_files)
    return stored, live


def rollup_sql(con: duckdb.DuckDBPyConnection, rollup: Rollup, lake_dir: str) -> str:
    """The SELECT of a rollup's rows over the whole lake: the rollup files of clean partitions, and the same
    aggregate of every other partition's rows, one per key (a UNION ALL of the two)."""
    lakefs.attach_duckdb(con, lake_dir)
    stored, live = _split(lake_dir, rollup)
    aggregated = None
    if live or not stored:
        files = [path for partition_files in live for path in partition_files]
        aggregated = rollup.aggregate_sql(files_sql(con, TABLES[rollup.table], files))
    return _union(rollup, stored, aggregated)


def _union(rollup: Rollup, stored: list[str], aggregated: str | None) -> str:
    columns = ", ".join(sql_ident(c) for c in rollup.columns)
    parts = []
    if stored:  # every column there, by the fingerprint in the name: no footer read before the query
        parts.append(f"SELECT {columns} FROM {parquet_source(stored, by_name=False)}")
    if aggregated is not None:
        parts.append(f"SELECT {columns} FROM ({aggregated})")
    return " UNION ALL ".join(f"({part})" for part in parts) if len(parts) > 1 else parts[0]


class HeldRollup:
    """A rollup for a reader that lives long (the review app), whose partitions not compacted yet are
    aggregated once and held in memory while their files stay the same.

        held = HeldRollup(ROLLUPS[REVIEW_QUEUE_ITEMS], lake)
        held.create_view(con)   # the rollup's view on `con`; again on the next connection: only new files read

    `rollup_sql` aggregates every such partition at each query: over a million responses never compacted, the
    review queue's took 2-3 s a page. A lake's files never change once published (compaction writes new ones
    and removes the old), so a partition's aggregate holds for as long as its list of files does: each
    `create_view` aggregates only the partitions whose files changed since the last (the hour being written)
    and forgets those that are gone (compacted: their rollup file is read instead)."""

    def __init__(self, rollup: Rollup, lake_dir: str):
        self.rollup, self.lake_dir = rollup, lake_dir
        self._held: dict[tuple[str, ...], pa.Table] = {}

    def create_view(self, con: duckdb.DuckDBPyConnection) -> int:
        """Create (or replace) the rollup's view on `con`, over its stored files and the held aggregates (in a
        table of `con`'s database, so its cursors read it too); returns how many partitions it aggregated."""
        lakefs.attach_duckdb(con, self.lake_dir)
        stored, live = _split(self.lake_dir, self.rollup)
        spec = TABLES[self.rollup.table]
        held: dict[tuple[str, ...], pa.Table] = {}
        aggregated_now = 0
        for files in live:
            key = tuple(files)
            if (table := self._held.get(key)) is None:
                table = con.sql(self.rollup.aggregate_sql(files_sql(con, spec, files))).to_arrow_table()
                aggregated_now += 1
            held[key] = table
        self._held = held
        aggregated = None
        if held:
            import pyarrow as pa  # kept lazy: start-up (`groundwatch query` reads rollups without pyarrow)

            name = sql_ident(f"_{self.rollup.name}_held")
            con.register("held_rows", pa.concat_tables(list(held.values()), promote_options="default"))
            con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM held_rows")
            con.unregister("held_rows")
            aggregated = f"SELECT * FROM {name}"
        elif not stored:  # no rows at all: the aggregate of none, for its columns
            aggregated = self.rollup.aggregate_sql(files_sql(con, spec, []))
        view = _union(self.rollup, stored, aggregated)
        con.execute(f"CREATE OR REPLACE VIEW {sql_ident(self.rollup.name)} AS {view}")
        return aggregated_now
