"""The input contract: one logged RAG response, as the generating system writes it.

A producer logs one JSON object per answer (a Kafka message or a JSONL line)::

    {
      "schema_version": 1,
      "response_id": "resp-0001",
      "timestamp": "2026-11-29T16:40:00Z",          # or epoch milliseconds
      "query": "What was the patient prescribed?",
      "answer": "The patient received 50mg of metoprolol on March 3, 2024 [1].",
      "evidence": [{"doc_id": "1", "content": "The patient was prescribed ..."}],
      "claims": [...],                                # optional
      "citations": [...],                             # optional explicit citation list
      "metadata": {"tenant": "acme", "risk_level": "high", "retriever_version": "r7"}
    }

`LoggedResponse.model_validate_json(raw)` is the only way bytes become a response.

Strict where we own both ends, tolerant where others write the data: producers add fields
without asking, so the contract is read the way Avro and Protobuf readers read a newer writer.

- Unknown fields, at the top level or inside `metadata`, an evidence passage, a claim or a
  citation, are kept, never a reason to reject: `LoggedResponse.unknown_fields()` returns them
  nested as they were logged (`{"latency_ms": 12, "metadata": {"region": "eu"}}`; a list field
  gives a list parallel to it, null where an item had none), and the lake keeps them as JSON in
  the `extra` column of `responses`.
- `null` for a field that may be absent means absent (`"metadata": null` is no metadata).
- Enum values (`risk_level`, a claim's confidence label) match whatever their case.
- A required field that is missing or of the wrong type is still an error.
- Timestamps are ISO 8601 with a zone (`Z` or `+hh:mm`) or epoch milliseconds, as a JSON number
  or as a string of digits (`"1764432000"` is the same instant as `1764432000`: milliseconds,
  whatever the magnitude). A timestamp without a zone is rejected (`timestamp_without_zone`),
  not read in some default zone: an audit trail must not guess when an event happened, and a
  wrong guess shifts every window and every rate by hours without anyone seeing it.
"""

from __future__ import annotations

import json
import re
import typing
from collections import Counter
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from schemas.base import Confidence, NonEmptyStr

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "EARLIEST_EVENT_TIME",
    "LATEST_EVENT_TIME",
    "MAX_ANSWER_CHARS",
    "TIMESTAMP_WITHOUT_ZONE",
    "ConfidenceLabel",
    "EvidencePassage",
    "InputModel",
    "LoggedCitation",
    "LoggedClaim",
    "LoggedResponse",
    "ResponseMetadata",
    "RiskLevel",
    "SUPPORTED_SCHEMA_VERSIONS",
]

CURRENT_SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = frozenset({1})
MAX_ANSWER_CHARS = 200_000
"""Answers longer than this are rejected: no real RAG answer is that long, and one would stall a worker."""

EARLIEST_EVENT_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_EVENT_TIME = datetime(2200, 1, 1, tzinfo=UTC)
"""Event times outside [1970, 2200) are rejected: they are corrupt, and windows near datetime's limits overflow."""

TIMESTAMP_WITHOUT_ZONE = "timestamp_without_zone"
"""The pydantic error type (and dead-letter reason) of a timestamp that names no time zone."""


class RiskLevel(str, Enum):
    """How much an unsupported answer costs; HIGH routes any failure to a human."""

    low = "low"
    medium = "medium"
    high = "high"


class ConfidenceLabel(str, Enum):
    """The attributed-answer generator's categorical confidence (spec 004)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    UNSUPPORTED = "UNSUPPORTED"


def _any_case(enum: type[Enum]) -> BeforeValidator:
    """A validator that reads a string as the member of `enum` whose value it is, whatever the case."""
    members = {member.value.casefold(): member for member in enum}

    def match(value: Any) -> Any:
        return members.get(value.strip().casefold(), value) if isinstance(value, str) else value

    return BeforeValidator(match)


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _epoch_ms(value: Any) -> Any:
    """Numbers, and strings that are numbers, as the aware UTC instant of that many epoch milliseconds."""
    # Always milliseconds: pydantic would guess seconds or milliseconds by magnitude, and would read the
    # string "1764432000" as seconds but the number 1764432000 as milliseconds here.
    if isinstance(value, bool):
        raise PydanticCustomError("timestamp_type", "timestamp must be an ISO 8601 string or epoch milliseconds")
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        text = value.strip()
        value = int(text) if text.lstrip("+-").isdigit() else float(text)
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value / 1000.0, tz=UTC)
        except (OverflowError, OSError, ValueError):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise PydanticCustomError(
                "timestamp_out_of_range", "epoch milliseconds {value} are out of range", {"value": shown}
            ) from None
    return value


def _zoned_utc(value: Any, handler: ValidatorFunctionWrapHandler) -> datetime:
    parsed: datetime = handler(_epoch_ms(value))  # the handler is pydantic's datetime validator
    if parsed.tzinfo is None:
        seen = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise PydanticCustomError(
            TIMESTAMP_WITHOUT_ZONE,
            "{seen} has no time zone; expected a zone (Z or +hh:mm) or epoch milliseconds "
            "(an audit trail does not guess the zone of an event)",
            {"seen": seen},
        )
    return parsed.astimezone(UTC)


Timestamp = Annotated[datetime, WrapValidator(_zoned_utc)]
"""An instant: ISO 8601 with a zone, or epoch milliseconds (number or digits); normalised to UTC."""

RetrieverRank = Annotated[int, Field(ge=1, strict=True)]
"""A passage's rank: a JSON integer from 1 (the best); `true`, `1.5` or `"2"` are a producer's bug, not a rank."""
RetrieverScore = Annotated[float, Field(allow_inf_nan=False, strict=True)]
"""A retriever's score: any finite JSON number; NaN, infinities, strings and booleans are rejected."""


class InputModel(BaseModel):
    """Base of the input contract's models: unknown fields are kept, a null where a field may be absent is absent."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict) or None not in data.values():
            return data
        optional = _shape(cls)[0]
        return {k: v for k, v in data.items() if v is not None or k not in optional}

    def unknown_fields(self) -> dict[str, Any]:
        """The fields the contract does not know, nested as logged; empty when there are none.

        A known field holding a model gives its own unknown fields under its name, a list of models a list
        parallel to it (None for an item without any)."""
        found = dict(self.__pydantic_extra__ or {})
        for name in _shape(type(self))[1]:
            value = getattr(self, name)
            nested: dict[str, Any] | list[dict[str, Any] | None] | None
            if isinstance(value, InputModel):
                nested = value.unknown_fields()
            elif isinstance(value, list):
                items = [(v.unknown_fields() or None) if isinstance(v, InputModel) else None for v in value]
                nested = items if any(items) else None
            else:
                continue
            if nested:
                found[name] = nested
        return found

    def unknown_fields_json(self) -> str | None:
        """`unknown_fields()` as compact JSON with sorted keys (the lake's `extra` column), None when empty."""
        found = self.unknown_fields()
        if not found:
            return None
        return json.dumps(found, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


_SHAPES: dict[type, tuple[frozenset[str], tuple[str, ...]]] = {}


def _shape(model: type[InputModel]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The model's optional fields, and those that hold input models (parsing is hot: computed once)."""
    if model not in _SHAPES:
        fields = model.model_fields
        optional = frozenset(name for name, info in fields.items() if not info.is_required())
        nested = tuple(name for name, info in fields.items() if _holds_models(info.annotation))
        _SHAPES[model] = (optional, nested)
    return _SHAPES[model]


def _holds_models(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, InputModel):
        return True
    return any(_holds_models(arg) for arg in typing.get_args(annotation))


class EvidencePassage(InputModel):
    """One retrieved passage the answer was generated from, with its provenance (spec 004)."""

    doc_id: NonEmptyStr
    content: str
    chunk_index: Annotated[int, Field(ge=0)] | None = None
    source_uri: str | None = None
    retrieval_timestamp: Timestamp | None = None
    rank: RetrieverRank | None = None
    """Where the retriever ranked the passage, 1 the best; ties allowed. Used only when every passage has one."""
    score: RetrieverScore | None = None
    """The retriever's own score of the passage, on its own scale; stored, never compared across retrievers."""


class LoggedClaim(InputModel):
    """A claim as an attributed-answer generator logged it, with its sources and confidence."""

    claim_text: NonEmptyStr
    source_doc_ids: list[str] = Field(default_factory=list)
    confidence: Annotated[ConfidenceLabel | Confidence | None, _any_case(ConfidenceLabel)] = None
    attribution_span: str | None = None
    low_confidence_reason: str | None = None
    missing_source: bool | None = None


class LoggedCitation(InputModel):
    """An explicit citation the generator logged beside the answer (markers in the text also count)."""

    citation_id: NonEmptyStr
    doc_id: NonEmptyStr
    quote: str | None = None
    claim_text: str | None = None


class ResponseMetadata(InputModel):
    """What monitoring slices by."""

    tenant: str = "default"
    risk_level: Annotated[RiskLevel, _any_case(RiskLevel)] = RiskLevel.medium
    retriever_version: str | None = None
    generator_model: str | None = None
    prompt_version: str | None = None


class LoggedResponse(InputModel):
    """One logged answer with the evidence it was generated from: the input contract."""

    schema_version: int = CURRENT_SCHEMA_VERSION
    response_id: Annotated[str, Field(min_length=1, max_length=256)]
    timestamp: Timestamp
    query: str = ""
    answer: Annotated[str, Field(max_length=MAX_ANSWER_CHARS)]
    evidence: list[EvidencePassage]
    claims: list[LoggedClaim] | None = None
    citations: list[LoggedCitation] | None = None
    metadata: ResponseMetadata = Field(default_factory=ResponseMetadata)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value not in SUPPORTED_SCHEMA_VERSIONS:
            supported = ", ".join(str(v) for v in sorted(SUPPORTED_SCHEMA_VERSIONS))
            raise ValueError(f"unknown schema_version {value!r}; this groundwatch reads version(s) {supported}")
        return value

    @model_validator(mode="after")
    def _unique_doc_ids(self) -> LoggedResponse:
        counts = Counter(p.doc_id for p in self.evidence)
        duplicates = sorted(doc_id for doc_id, n in counts.items() if n > 1)
        if duplicates:
            raise ValueError(f"evidence doc_ids must be unique; repeated: {', '.join(duplicates)}")
        return self

    @property
    def passages_by_id(self) -> dict[str, EvidencePassage]:
        return {p.doc_id: p for p in self.evidence}
