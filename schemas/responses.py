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
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from schemas.base import Confidence, NonEmptyStr, StrictModel

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "MAX_ANSWER_CHARS",
    "ConfidenceLabel",
    "EvidencePassage",
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


def _aware_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError(
            "timestamp has no time zone; write it as ISO 8601 with a zone (e.g. 'Z') or epoch milliseconds"
        )
    return value.astimezone(UTC)


def _parse_timestamp(value: Any) -> Any:
    # Numbers are epoch milliseconds, always: pydantic would guess seconds or ms by magnitude.
    if isinstance(value, bool):
        raise ValueError("timestamp must be an ISO 8601 string or epoch milliseconds, not a boolean")
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(value / 1000.0, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"epoch milliseconds {value!r} are out of range") from None
    return value


class EvidencePassage(StrictModel):
    """One retrieved passage the answer was generated from, with its provenance (spec 004)."""

    doc_id: NonEmptyStr
    content: str
    chunk_index: Annotated[int, Field(ge=0)] | None = None
    source_uri: str | None = None
    retrieval_timestamp: datetime | None = None

    @field_validator("retrieval_timestamp", mode="before")
    @classmethod
    def _retrieval_ms(cls, value: Any) -> Any:
        return _parse_timestamp(value)

    @field_validator("retrieval_timestamp")
    @classmethod
    def _retrieval_aware(cls, value: datetime | None) -> datetime | None:
        return None if value is None else _aware_utc(value)


class LoggedClaim(StrictModel):
    """A claim as an attributed-answer generator logged it, with its sources and confidence."""

    claim_text: NonEmptyStr
    source_doc_ids: list[str] = Field(default_factory=list)
    confidence: ConfidenceLabel | Confidence | None = None
    attribution_span: str | None = None
    low_confidence_reason: str | None = None
    missing_source: bool | None = None


class LoggedCitation(StrictModel):
    """An explicit citation the generator logged beside the answer (markers in the text also count)."""

    citation_id: NonEmptyStr
    doc_id: NonEmptyStr
    quote: str | None = None
    claim_text: str | None = None


class ResponseMetadata(StrictModel):
    """What monitoring slices by."""

    tenant: str = "default"
    risk_level: RiskLevel = RiskLevel.medium
    retriever_version: str | None = None
    generator_model: str | None = None
    prompt_version: str | None = None


class LoggedResponse(StrictModel):
    """One logged answer with the evidence it was generated from: the input contract."""

    schema_version: int = CURRENT_SCHEMA_VERSION
    response_id: Annotated[str, Field(min_length=1, max_length=256)]
    timestamp: datetime
    query: str = ""
    answer: Annotated[str, Field(max_length=MAX_ANSWER_CHARS)]
    evidence: list[EvidencePassage]
    claims: list[LoggedClaim] | None = None
    citations: list[LoggedCitation] | None = None
    metadata: ResponseMetadata = Field(default_factory=ResponseMetadata)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> Any:
        if value is None:
            return CURRENT_SCHEMA_VERSION
        if isinstance(value, bool) or not isinstance(value, int) or value not in SUPPORTED_SCHEMA_VERSIONS:
            supported = ", ".join(str(v) for v in sorted(SUPPORTED_SCHEMA_VERSIONS))
            raise ValueError(f"unknown schema_version {value!r}; this groundwatch reads version(s) {supported}")
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp_ms(cls, value: Any) -> Any:
        return _parse_timestamp(value)

    @field_validator("timestamp")
    @classmethod
    def _timestamp_aware(cls, value: datetime) -> datetime:
        return _aware_utc(value)

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
