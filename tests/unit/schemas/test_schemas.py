"""The input contract and the derived Arrow schemas."""

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pydantic import ValidationError

from schemas import (
    TABLES,
    LoggedResponse,
    ResponseRow,
    RiskLevel,
    SentenceRow,
    SentenceVerdict,
    arrow_schema,
)

BASE = {
    "response_id": "r-1",
    "timestamp": "2026-11-29T16:40:00+01:00",
    "answer": "The patient received 50mg of metoprolol [1].",
    "evidence": [{"doc_id": "1", "content": "The patient was prescribed 50mg of metoprolol."}],
}


def parse(**changes):
    return LoggedResponse.model_validate({**BASE, **changes})


def test_iso_timestamp_with_zone_is_normalised_to_utc():
    assert parse().timestamp == datetime(2026, 11, 29, 15, 40, tzinfo=UTC)


def test_numeric_timestamp_is_epoch_milliseconds():
    assert parse(timestamp=1_000).timestamp == datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)


def test_timestamp_without_zone_is_rejected_with_reason():
    with pytest.raises(ValidationError, match="no time zone"):
        parse(timestamp="2026-11-29T16:40:00")


def test_absent_schema_version_means_current_and_unknown_is_rejected():
    assert parse().schema_version == 1
    with pytest.raises(ValidationError, match="unknown schema_version 2"):
        parse(schema_version=2)


def test_unknown_fields_are_kept_and_duplicate_doc_ids_are_rejected():
    assert parse(surprise=True).unknown_fields() == {"surprise": True}
    passage = {"doc_id": "a", "content": "x"}
    with pytest.raises(ValidationError, match="repeated: a"):
        parse(evidence=[passage, passage])


def test_metadata_defaults_and_claim_confidence_forms():
    response = parse(
        claims=[
            {"claim_text": "c1", "source_doc_ids": ["1"], "confidence": "HIGH"},
            {"claim_text": "c2", "source_doc_ids": [], "confidence": 0.4},
        ]
    )
    assert response.metadata.risk_level is RiskLevel.medium
    assert response.metadata.tenant == "default"
    with pytest.raises(ValidationError):
        parse(claims=[{"claim_text": "c", "confidence": 1.5}])


def test_confidence_outside_unit_interval_or_nan_is_rejected():
    for bad in (1.01, -0.1, float("nan")):
        with pytest.raises(ValidationError):
            SentenceVerdict(sentence_index=0, sentence_text="s", attribution_verdict="ungrounded", confidence=bad)


def test_arrow_schemas_follow_the_models_field_for_field():
    sentence_schema = arrow_schema(SentenceRow)
    assert sentence_schema.names[: len(SentenceVerdict.model_fields)] == list(SentenceVerdict.model_fields)
    assert sentence_schema.field("unsupported_spans").type == pa.list_(pa.string())
    response_schema = arrow_schema(ResponseRow)
    assert response_schema.field("event_time").type == pa.timestamp("us", tz="UTC")
    assert response_schema.field("mean_confidence").nullable
    assert not response_schema.field("response_id").nullable


def test_every_registered_table_has_a_derivable_schema_and_a_key_in_it():
    for spec in TABLES.values():
        schema = spec.schema
        assert spec.time_column in schema.names
        assert set(spec.key) <= set(schema.names)
