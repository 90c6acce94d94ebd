"""The input contract is tolerant where producers write the data: real logs are responses, not dead letters.

Unknown fields are kept and counted, nulls of optional fields are absent, enum values match in any case;
what a response needs (a field missing, a wrong type, a timestamp with no zone) is still a dead letter with
its reason. The lake's own models stay strict.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to
from pydantic import ValidationError

from schemas import ConfidenceLabel, DeadLetterRow, ParsedResponse, ResponseRow, RiskLevel
from schemas.responses import TIMESTAMP_WITHOUT_ZONE
from tests.support.audit_messages import at, message, raw
from transforms.ingest.parse import (
    DEAD_LETTERS,
    INVALID_UNICODE,
    METRICS_NAMESPACE,
    PARSED,
    UNKNOWN_FIELDS_COUNTER,
    ParseError,
    ParseResponses,
    parse_message,
)

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _rejected(msg: dict) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_message(raw(msg))
    return caught.value


def test_unknown_top_level_fields_are_kept_not_rejected():
    response = parse_message(raw(message(latency_ms=12, trace_id="t-9f2")))
    assert response.response_id == "r-1"
    assert response.unknown_fields() == {"latency_ms": 12, "trace_id": "t-9f2"}


def test_unknown_metadata_keys_are_kept_and_the_known_ones_still_read():
    response = parse_message(raw(message(metadata={"tenant": "acme", "risk_level": "high", "region": "eu"})))
    assert response.metadata.tenant == "acme" and response.metadata.risk_level is RiskLevel.high
    assert response.unknown_fields() == {"metadata": {"region": "eu"}}


def test_unknown_fields_of_passages_are_kept_in_a_list_parallel_to_the_evidence():
    evidence = [{"doc_id": "1", "content": "a", "reranker": "bge"}, {"doc_id": "2", "content": "b"}]
    response = parse_message(raw(message(evidence=evidence, latency_ms=12, metadata={"region": "eu"})))
    expected = {"latency_ms": 12, "metadata": {"region": "eu"}, "evidence": [{"reranker": "bge"}, None]}
    assert response.unknown_fields() == expected
    assert json.loads(response.unknown_fields_json()) == response.unknown_fields()
    assert parse_message(raw(message())).unknown_fields_json() is None


def test_null_metadata_is_no_metadata():
    response = parse_message(raw(message(metadata=None)))
    assert (response.metadata.tenant, response.metadata.risk_level) == ("default", RiskLevel.medium)
    assert response.unknown_fields() == {}


def test_null_optional_fields_are_absent():
    response = parse_message(raw(message(query=None, claims=None, metadata={"tenant": None, "risk_level": None})))
    assert response.query == "" and response.claims is None
    assert (response.metadata.tenant, response.metadata.risk_level) == ("default", RiskLevel.medium)


@pytest.mark.parametrize("level", ["HIGH", "High", " high "])
def test_risk_level_matches_in_any_case(level):
    assert parse_message(raw(message(metadata={"risk_level": level}))).metadata.risk_level is RiskLevel.high


@pytest.mark.parametrize(
    ("label", "expected"), [("high", "HIGH"), ("Medium", "MEDIUM"), ("unsupported", "UNSUPPORTED")]
)
def test_confidence_labels_match_in_any_case(label, expected):
    claims = [{"claim_text": "c", "source_doc_ids": ["1"], "confidence": label}]
    assert parse_message(raw(message(claims=claims))).claims[0].confidence is ConfidenceLabel(expected)


def test_an_enum_value_that_is_not_one_is_still_rejected_for_that_not_for_an_unknown_field():
    error = _rejected(message(metadata={"risk_level": "extreme", "region": "eu"}, latency_ms=1))
    assert error.reason == "invalid_fields" and "metadata.risk_level" in error.message
    assert "region" not in error.message and "latency_ms" not in error.message


@pytest.mark.parametrize("field", ["response_id", "answer", "evidence", "timestamp"])
def test_a_missing_required_field_is_still_a_dead_letter(field):
    error = _rejected({k: v for k, v in message(latency_ms=3).items() if k != field})
    assert error.reason == "missing_field" and field in error.message


@pytest.mark.parametrize(
    ("field", "value"),
    [("response_id", None), ("response_id", 7), ("answer", None), ("answer", ["a"]), ("evidence", None)],
)
def test_a_required_field_of_the_wrong_type_is_still_a_dead_letter(field, value):
    error = _rejected(message(**{field: value}, region="eu"))
    assert error.reason == "invalid_fields" and field in error.message
    assert "region" not in error.message  # the unknown field beside it is no reason


@pytest.mark.parametrize("timestamp", ["2026-11-29T09:00:00", "2026-11-29 09:00:00.250", "2026-11-29"])
def test_a_timestamp_without_zone_is_dead_lettered_saying_what_was_seen_and_what_is_expected(timestamp):
    error = _rejected(message(timestamp=timestamp))
    assert error.reason == "timestamp_without_zone"
    assert timestamp in error.message and "Z or +hh:mm" in error.message and "epoch milliseconds" in error.message


def test_a_passage_retrieval_timestamp_without_zone_gets_the_same_reason():
    evidence = [{"doc_id": "1", "content": "a", "retrieval_timestamp": "2026-11-29T08:59:00"}]
    error = _rejected(message(evidence=evidence))
    assert error.reason == "timestamp_without_zone" and "evidence.0.retrieval_timestamp" in error.message


def test_a_numeric_string_timestamp_is_the_same_instant_as_the_number():
    # Epoch milliseconds whatever the magnitude: 1764432000 is 20 days after the epoch, not 2025-11-29.
    for number, instant in [(1764432000, "1970-01-21T10:07:12"), (1764432000000, "2025-11-29T16:00:00")]:
        from_number = parse_message(raw(message(timestamp=number))).timestamp
        from_string = parse_message(raw(message(timestamp=str(number)))).timestamp
        assert from_number == from_string == datetime.fromisoformat(instant).replace(tzinfo=UTC), number


def test_a_leading_byte_order_mark_is_not_a_reason_to_reject():
    assert parse_message(b"\xef\xbb\xbf" + raw(message("bom"))).response_id == "bom"
    with pytest.raises(ParseError, match="byte 0xe9 at offset 23"):
        parse_message(b"\xef\xbb\xbf" + b'{"response_id": "caf\xe9"}')


def test_messages_with_unknown_fields_are_counted_and_audited_not_dead_lettered():
    inputs = [
        (raw(message("plain")), at(1)),
        (raw(message("latency", latency_ms=12)), at(2)),
        (raw(message("region", metadata={"region": "eu", "risk_level": "HIGH"})), at(3)),
        (raw(message("null-metadata", metadata=None, trace_id="t")), at(4)),
        (raw(message("naive", timestamp="2026-11-29T09:00:00", latency_ms=1)), at(5)),
    ]
    with BeamPipeline(runner="FnApiRunner") as p:
        result = p | beam.Create(inputs) | ParseResponses(clock=lambda: NOW)
        assert_that(
            result[PARSED] | beam.Map(lambda r: r.response.response_id),
            equal_to(["plain", "latency", "region", "null-metadata"]),
            label="CheckParsed",
        )
        assert_that(
            result[DEAD_LETTERS] | beam.Map(lambda d: (d.error.split(":")[0], d.raw_payload)),
            equal_to([("timestamp_without_zone", inputs[4][0])]),
            label="CheckDeadLetters",
        )
    query = MetricsFilter().with_namespace(METRICS_NAMESPACE).with_name(UNKNOWN_FIELDS_COUNTER)
    [counter] = p.result.metrics().query(query)["counters"]
    assert counter.committed == 3


def test_the_input_contract_keeps_unknown_fields_but_the_lake_models_still_forbid_them():
    assert parse_message(raw(message(latency_ms=12))).unknown_fields() == {"latency_ms": 12}
    dead = {
        "dead_letter_id": "d",
        "received_at": NOW,
        "stage": "parse",
        "error": "e",
        "raw_payload": b"x",
        "origin_source": "file:/x",
    }
    DeadLetterRow(**dead)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        DeadLetterRow(**dead, latency_ms=12)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ResponseRow.model_validate({"response_id": "r", "surprise": 1})
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ParsedResponse(response=parse_message(raw(message())), origin=at(1), surprise=1)


def test_the_dead_letter_cap_and_the_message_limit_are_documented_with_their_values():
    from pathlib import Path

    from transforms.ingest.parse import KEPT_OVERSIZED_BYTES, MAX_MESSAGE_BYTES

    limits = (Path(__file__).resolve().parents[3] / "docs" / "contract.md").read_text()
    assert "KEPT_OVERSIZED_BYTES" in limits and f"{KEPT_OVERSIZED_BYTES:,} bytes" in limits
    assert "MAX_MESSAGE_BYTES" in limits and f"{MAX_MESSAGE_BYTES:,} bytes" in limits


def test_every_dead_letter_reason_the_code_gives_is_in_the_contract_s_table():
    """The reasons are what a user groups dead letters by; one missing from the table is one nobody explained."""
    root = Path(__file__).resolve().parents[3]
    code = "".join(path.read_text() for path in sorted((root / "transforms" / "ingest").glob("*.py")))
    reasons = set(re.findall(r'ParseError\(\s*"([a-z0-9_]+)"', code))  # raised with their code
    reasons |= set(re.findall(r'f"([a-z0-9_]+): ', code))  # dead letters written with their error's first word
    reasons |= {INVALID_UNICODE, TIMESTAMP_WITHOUT_ZONE, "missing_field", "invalid_fields"}  # given by name
    assert {"malformed_json", "not_utf8", "duplicate_response_id", "late"} <= reasons  # the scan finds them
    table = set(re.findall(r"^\| `([a-z0-9_]+)` \|", (root / "docs" / "contract.md").read_text(), re.MULTILINE))
    assert reasons - table == set()
