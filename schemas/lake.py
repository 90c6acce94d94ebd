"""The rows of the audit lake, and the Arrow schemas derived from them.

Each table of the lake has one row model here; `arrow_schema(Model)` derives
the Parquet schema from the model's annotations, so a column is declared once.
A column derived from others is a computed field of the row model (`SentenceRow.grounded_probability`):
stored like the rest, never given; its `TableSpec.derived` SQL gives it for files written before it existed.
`TABLES` maps a table name to its row model and to the column that decides its
`date=/hour=` partition. The lake's reader (`transforms.io.lake.reader`) keeps one row per `key`.
"""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, computed_field, model_validator

from schemas.base import Confidence, StrictModel
from schemas.reports import GROUNDED_PROBABILITY_SQL, SentenceVerdict, grounded_probability
from schemas.responses import RiskLevel

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "TABLES",
    "DeadLetterRow",
    "ResponseRow",
    "SentenceRow",
    "TableSpec",
    "arrow_schema",
    "column_names",
    "duckdb_columns",
    "register_table",
]


_KIND_OF_BASE: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (enum.Enum, "string"),
    (str, "string"),
    (int, "int64"),
    (float, "float64"),
    (bytes, "binary"),
    (datetime, "timestamp"),
    (date, "date"),
)


def _column_kind(annotation: Any) -> tuple[str, bool]:
    """The stored kind of a field annotation (`string`, `int64`, ..., `list:<kind>`), and whether it is
    nullable; Arrow and DuckDB types are both derived from it."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _column_kind(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(annotation))
        if len(args) != 1:
            # e.g. ConfidenceLabel | float: stored as its string form.
            return "string", nullable
        inner, _ = _column_kind(args[0])
        return inner, nullable
    if origin in (list, tuple, set, frozenset):
        (item,) = typing.get_args(annotation)[:1]
        inner, _ = _column_kind(item)
        return f"list:{inner}", False
    if isinstance(annotation, type):
        # bool before int, datetime before date: the first base that matches decides.
        for base, kind in _KIND_OF_BASE:
            if issubclass(annotation, base):
                return kind, False
    raise TypeError(f"no Arrow type for annotation {annotation!r}; keep lake rows flat")


_DUCKDB_TYPES = {
    "bool": "BOOLEAN",
    "string": "VARCHAR",
    "int64": "BIGINT",
    "float64": "DOUBLE",
    "binary": "BLOB",
    "timestamp": "TIMESTAMP WITH TIME ZONE",
    "date": "DATE",
}


def _arrow_of(kind: str) -> pa.DataType:
    import pyarrow as pa

    if kind.startswith("list:"):
        return pa.list_(_arrow_of(kind[5:]))
    makers = {
        "bool": pa.bool_,
        "string": pa.string,
        "int64": pa.int64,
        "float64": pa.float64,
        "binary": pa.binary,
        "timestamp": lambda: pa.timestamp("us", tz="UTC"),
        "date": pa.date32,
    }
    return makers[kind]()


def _duckdb_of(kind: str) -> str:
    return _duckdb_of(kind[5:]) + "[]" if kind.startswith("list:") else _DUCKDB_TYPES[kind]


def _columns(model: type[BaseModel]) -> dict[str, Any]:
    """Each stored column of a row model and its annotation: its fields in declaration order, then its
    computed fields (values derived from the others, written beside them)."""
    columns = {name: info.rebuild_annotation() for name, info in model.model_fields.items()}
    # The return annotation read from the property itself: with `defer_build`, pydantic resolves it only later.
    columns.update(
        {
            name: typing.get_type_hints(info.wrapped_property.fget)["return"]
            for name, info in model.model_computed_fields.items()
        }
    )
    return columns


def column_names(model: type[BaseModel]) -> list[str]:
    """The stored columns of a row model, in the order of its Arrow schema."""
    return list(_columns(model))


def arrow_schema(model: type[BaseModel]) -> pa.Schema:
    """The Parquet schema of a row model, column by column (`column_names`)."""
    import pyarrow as pa

    fields = []
    for name, annotation in _columns(model).items():
        kind, nullable = _column_kind(annotation)
        fields.append(pa.field(name, _arrow_of(kind), nullable=nullable))
    return pa.schema(fields)


def duckdb_columns(model: type[BaseModel]) -> dict[str, str]:
    """The DuckDB type of each column of a row model, as DuckDB reads the model's Arrow schema (without
    importing pyarrow: `groundwatch query` needs only these, and pyarrow is a fifth of a second to import)."""
    return {name: _duckdb_of(_column_kind(annotation)[0]) for name, annotation in _columns(model).items()}


class ResponseRow(StrictModel):
    """One audited response: ids, times, slice metadata, scores, flag counts, routing."""

    response_id: str
    event_time: datetime
    window_start: datetime
    window_end: datetime
    audited_at: datetime
    tenant: str
    risk_level: RiskLevel
    retriever_version: str | None = None
    generator_model: str | None = None
    prompt_version: str | None = None
    origin_source: str
    origin_partition: int | None = None
    origin_offset: int | None = None
    sentence_count: int
    fully_grounded_count: int
    partially_grounded_count: int
    ungrounded_count: int
    contradicted_count: int
    mean_confidence: float | None = None
    min_confidence: float | None = None
    overall_faithfulness_score: Confidence | None
    """The report's score (`SentenceAuditReport.scored_faithfulness`); null when the answer made no claim (every
    sentence a refusal, greeting or lead-in), so that `avg(overall_faithfulness_score)` leaves it out."""
    critical_flag_count: int
    critical_flags: list[str] = Field(default_factory=list)
    insufficient_evidence: bool
    abstention: bool = False
    """A sentence of the answer declines or says the evidence does not tell."""
    citation_total: int | None = None
    citation_passed: int | None = None
    citation_failed: int | None = None
    citation_critical_failures: list[str] = Field(default_factory=list)
    claim_count: int | None = None
    attribution_coverage_rate: float | None = None
    low_confidence_claim_rate: float | None = None
    verifier: str
    verifier_version: str
    calibration_sha256: str | None = None
    calibration_section: str | None = None
    """The calibration file's section that decided this response: its tenant's own, or `default`; null when
    uncalibrated (and in rows written before the column)."""
    decided_by: list[str] = Field(default_factory=list)
    needs_review: bool
    review_reasons: list[str] = Field(default_factory=list)
    review_routes: list[str] = Field(default_factory=list)
    """Why it was sent to review, as kinds: `uncertain`, `disagreement`, `risk`, `flagged` or `sample`."""
    input_flags: list[str] = Field(default_factory=list)
    query_text: str | None = None
    """The user's query as logged (masked when the audit ran with `--redact`); null in rows written before."""
    answer_text: str | None = None
    """The answer as logged (masked when the audit ran with `--redact`); sentence offsets index into it."""
    evidence_doc_ids: list[str] = Field(default_factory=list)
    """The evidence passages' `doc_id`s, in logged order; parallel to `evidence_sha256`."""
    evidence_sha256: list[str] = Field(default_factory=list)
    """Each passage's content hash: its text is the `passages` row of that hash in this response's hour."""
    extra: str | None = None
    """The logged fields the input contract does not know, as JSON (`{"latency_ms": 12, "metadata": {"region":
    "eu"}}`; query with `json_extract(extra, '$.latency_ms')`); null when there were none."""
    # Retrieval quality (`schemas.retrieval.RetrievalReport`; per passage in `retrieved_passages`). Null in
    # rows written before the ScoreRetrieval step, and where there is nothing to measure.
    mean_context_relevance: float | None = None
    """Mean relevance of the response's passages to its query, in [0, 1]."""
    max_context_relevance: float | None = None
    answer_relevance: float | None = None
    """How much the answer's claim sentences address the query, in [0, 1]."""
    empty_retrieval: bool | None = None
    """No passage reached the relevance threshold."""
    passages_used_share: float | None = None
    """Share of the retrieved passages that a supported sentence drew on."""
    top_passage_support_share: float | None = None
    """Share of the claim sentences supported by the top-ranked passage; null unless every passage logged a rank."""


class SentenceRow(SentenceVerdict):
    """One sentence verdict, keyed by its response and carrying the slice it belongs to."""

    response_id: str
    event_time: datetime
    window_start: datetime
    tenant: str
    retriever_version: str | None = None
    decided_by: str
    audited_at: datetime | None = None
    supporting_passage_sha256: list[str] = Field(default_factory=list)
    """The `passages` hash of each supporting evidence id (parallel to `supporting_evidence_ids`)."""
    supporting_starts: list[int] = Field(default_factory=list)
    """Where each supporting excerpt starts in its passage (characters; -1 when it is not found verbatim)."""
    supporting_ends: list[int] = Field(default_factory=list)
    contradicting_passage_sha256: list[str] = Field(default_factory=list)
    contradicting_starts: list[int] = Field(default_factory=list)
    contradicting_ends: list[int] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _derived_not_given(cls, data: Any) -> Any:
        # A row read back from the lake carries `grounded_probability`: derived again, never taken as given.
        if isinstance(data, dict) and "grounded_probability" in data:
            return {k: v for k, v in data.items() if k != "grounded_probability"}
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def grounded_probability(self) -> float:
        """Stored beside `confidence`: the verifier's probability that the sentence is fully grounded
        (`SentenceVerdict.grounded_probability`), so SQL reads it instead of deriving it."""
        return grounded_probability(self.attribution_verdict, self.confidence)


class DeadLetterRow(StrictModel):
    """A message that could not be audited: its original bytes, where it came from, and why."""

    dead_letter_id: str
    received_at: datetime
    stage: str
    error: str
    raw_payload: bytes
    origin_source: str
    origin_partition: int | None = None
    origin_offset: int | None = None
    reason: str | None = None
    """The reason code, `error` up to its first colon (`malformed_json`, `stage_failed`, ...): what to count by.
    Filled from `error` when not given; NULL in lakes written before the column."""

    @model_validator(mode="before")
    @classmethod
    def _reason_from_error(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("reason") and isinstance(data.get("error"), str):
            return {**data, "reason": data["error"].split(":", 1)[0].strip()}
        return data


@dataclass(frozen=True)
class TableSpec:
    """How one lake table is stored: its row model, partition time column, dedup key, and the column that says
    which of two rows with the same key is the newer (when it was audited, computed, checked, ...).

    `prefer`: columns compared before the version, larger first: of two copies of a key, the lake's reader (and
    so every view, the drift stage and the report) keeps the one with the larger value, and the newer only among
    equals (window metrics: the row of more responses).
    """

    name: str
    row: type[BaseModel]
    time_column: str
    key: tuple[str, ...]
    version_column: str
    prefer: tuple[str, ...] = ()
    derived: tuple[tuple[str, str], ...] = ()
    """(column, SQL over the row's other columns) pairs: what the lake's reader gives for a column in files
    written before the table had it (the column is NULL there), so old and new files read alike."""

    @property
    def schema(self) -> pa.Schema:
        return arrow_schema(self.row)

    @property
    def partition_local(self) -> bool:
        """Whether every copy of a key lies in one `date=/hour=` partition, so duplicates can be removed one
        partition at a time (`groundwatch compact`) and a filter on the partition or time column can reach the
        files before the duplicates are ranked.

        True when the time column is part of the key, or is not the version column: a copy written again (a
        re-audit, a stream read again) keeps its time (the logged `event_time`, the window, the alert's start),
        so it falls in the same hour. Where the time is the version (a dead letter received again, a judge
        call made again), a newer copy may lie in a later hour, and the reader ranks the whole table.
        """
        return self.time_column in self.key or self.time_column != self.version_column


TABLES: dict[str, TableSpec] = {}


def register_table(
    name: str,
    row: type[BaseModel],
    *,
    time_column: str,
    key: tuple[str, ...],
    version_column: str,
    prefer: tuple[str, ...] = (),
    derived: tuple[tuple[str, str], ...] = (),
) -> TableSpec:
    """Declare a lake table; other schema modules call this for the tables they own."""
    for column in (version_column, *prefer):
        if column not in row.model_fields:
            raise ValueError(f"table {name!r}: column {column!r} is not a field of {row.__name__}")
    for column, _ in derived:
        if column not in column_names(row):
            raise ValueError(f"table {name!r}: derived column {column!r} is not a column of {row.__name__}")
    spec = TableSpec(name, row, time_column, key, version_column, prefer, derived)
    TABLES[name] = spec
    return spec


register_table("responses", ResponseRow, time_column="event_time", key=("response_id",), version_column="audited_at")
register_table(
    "sentences",
    SentenceRow,
    time_column="event_time",
    key=("response_id", "sentence_index"),
    version_column="audited_at",
    derived=(("grounded_probability", GROUNDED_PROBABILITY_SQL),),
)
register_table(
    "dead_letters", DeadLetterRow, time_column="received_at", key=("dead_letter_id",), version_column="received_at"
)
