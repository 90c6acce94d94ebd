"""Parsing raw messages: every bad input gets a short, clear reason and keeps its bytes; good input passes."""

from __future__ import annotations

from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.portability.api import beam_runner_api_pb2
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to
from pydantic import ValidationError

from schemas import LoggedResponse
from tests.support.audit_messages import ANSWER, BAD_MESSAGES, at, message, raw
from tests.support.prism_fixtures import needs_prism, prism_options
from transforms.ingest.parse import (
    DEAD_LETTERS,
    PARSED,
    DropDuplicateResponses,
    ParseError,
    ParseResponses,
    dead_letter_row,
    first_copy,
    input_flags,
    parse_message,
    summarize_validation_error,
)

FIXED_NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("reason", sorted(BAD_MESSAGES))
def test_each_bad_message_gets_its_reason_in_one_short_line(reason):
    with pytest.raises(ParseError) as caught:
        parse_message(BAD_MESSAGES[reason])
    assert caught.value.reason == reason
    assert 0 < len(caught.value.message) <= 420
    assert "\n" not in caught.value.message


def test_reasons_name_the_field_and_never_echo_the_input():
    with pytest.raises(ParseError) as caught:
        parse_message(BAD_MESSAGES["invalid_fields"])
    assert "evidence" in caught.value.message and "timestamp" in caught.value.message
    assert "see attached" not in caught.value.message


def test_missing_field_names_it():
    with pytest.raises(ParseError, match="answer: Field required"):
        parse_message(BAD_MESSAGES["missing_field"])


def test_unknown_schema_version_says_which_versions_are_read():
    with pytest.raises(ParseError, match="unknown schema_version 9.*version\\(s\\) 1"):
        parse_message(BAD_MESSAGES["unknown_schema_version"])


def test_answer_of_a_megabyte_is_rejected_with_the_limit():
    with pytest.raises(ParseError, match="answer is longer than 200,000 characters"):
        parse_message(BAD_MESSAGES["answer_too_long"])


def test_non_utf8_names_the_byte_and_offset():
    with pytest.raises(ParseError, match="not UTF-8: byte 0xe9 at offset"):
        parse_message(BAD_MESSAGES["not_utf8"])


def test_many_errors_are_summarized_with_a_count():
    bad = raw({"response_id": 1, "timestamp": True, "answer": 3, "evidence": 4, "query": 5})
    with pytest.raises(ParseError, match=r"\(\+\d+ more\)"):
        parse_message(bad)


def test_summary_of_a_validation_error_is_short():
    with pytest.raises(ValidationError) as caught:
        LoggedResponse.model_validate_json(BAD_MESSAGES["invalid_fields"])
    summary = summarize_validation_error(caught.value)
    assert summary.reason == "invalid_fields" and len(summary.message) < 420


def test_valid_message_parses_and_empty_evidence_is_flagged_not_rejected():
    assert parse_message(raw(message())).response_id == "r-1"
    response = parse_message(raw(message("no-evidence", evidence=[])))
    assert input_flags(response) == ["empty_evidence"]
    assert input_flags(parse_message(raw(message()))) == []


def test_dead_letter_id_is_stable_for_same_bytes_and_place():
    a = dead_letter_row(b"x", at(3), stage="parse", error="e", received_at=FIXED_NOW)
    b = dead_letter_row(b"x", at(3), stage="parse", error="e", received_at=datetime.now(UTC))
    c = dead_letter_row(b"x", at(4), stage="parse", error="e", received_at=FIXED_NOW)
    assert a.dead_letter_id == b.dead_letter_id != c.dead_letter_id


def test_parse_responses_splits_valid_from_dead_letters_keeping_bytes():
    inputs = [(raw(message("ok-1")), at(1)), (raw(message("ok-2", evidence=[])), at(2))]
    inputs += [(payload, at(10 + i)) for i, payload in enumerate(BAD_MESSAGES.values())]
    with BeamPipeline(runner="FnApiRunner") as p:
        result = p | beam.Create(inputs) | ParseResponses(clock=lambda: FIXED_NOW)
        assert_that(
            result[PARSED] | beam.Map(lambda r: (r.response.response_id, r.input_flags, r.origin.offset)),
            equal_to([("ok-1", [], 1), ("ok-2", ["empty_evidence"], 2)]),
            label="CheckParsed",
        )
        assert_that(
            result[DEAD_LETTERS] | beam.Map(lambda d: (d.error.split(":")[0], d.raw_payload, d.origin_offset)),
            equal_to([(reason, payload, 10 + i) for i, (reason, payload) in enumerate(BAD_MESSAGES.items())]),
            label="CheckDeadLetters",
        )


def test_duplicates_keep_the_first_read_copy_and_dead_letter_the_rest():
    first, again, single = (
        raw(message("dup")),
        raw(message("dup", answer="A different answer.")),
        raw(message("single")),
    )
    inputs = [(again, at(7)), (single, at(2)), (first, at(1))]
    with BeamPipeline(runner="FnApiRunner") as p:
        parsed = p | beam.Create(inputs) | ParseResponses()
        unique = parsed[PARSED] | DropDuplicateResponses(clock=lambda: FIXED_NOW)
        assert_that(
            unique[PARSED] | beam.Map(lambda r: (r.response.response_id, r.origin.offset, r.raw)),
            # The copy kept keeps its bytes: a later stage that fails on it dead-letters them as they were read.
            equal_to([("dup", 1, first), ("single", 2, single)]),
            label="CheckKept",
        )
        assert_that(
            unique[DEAD_LETTERS] | beam.Map(lambda d: (d.stage, d.raw_payload, d.origin_offset, "line 1" in d.error)),
            equal_to([("dedupe", again, 7, True)]),
            label="CheckDuplicate",
        )


def test_bounded_parse_drops_duplicates_across_the_whole_input():
    copies = [(raw(message("dup", answer=f"Copy {n}.")), at(n)) for n in (7, 1, 4)]
    inputs = [*copies, (raw(message("single")), at(2)), (b"{broken", at(3))]
    with BeamPipeline(runner="FnApiRunner") as p:
        result = p | beam.Create(inputs) | ParseResponses(drop_duplicates=True, clock=lambda: FIXED_NOW)
        assert_that(
            result[PARSED] | beam.Map(lambda r: (r.response.response_id, r.response.answer, r.raw)),
            equal_to([("dup", "Copy 1.", copies[1][0]), ("single", ANSWER, inputs[3][0])]),
            label="CheckKept",
        )
        assert_that(
            result[DEAD_LETTERS] | beam.Map(lambda d: (d.stage, d.origin_offset, d.error.split(":")[0])),
            equal_to(
                [
                    ("dedupe", 7, "duplicate_response_id"),
                    ("dedupe", 4, "duplicate_response_id"),
                    ("parse", 3, "malformed_json"),
                ]
            ),
            label="CheckDeadLetters",
        )


def test_repeated_ids_known_beforehand_are_no_side_input_and_drop_the_same_copies():
    # A side input would start a stage of its own on Flink (Beam's Java fuser), away from the read.
    copies = [(raw(message("dup", answer=f"Copy {n}.")), at(n)) for n in (7, 1, 4)]
    inputs = [*copies, (raw(message("single")), at(2))]
    known = {"dup": first_copy(at(1))}  # as `plan_jsonl_passes` finds them
    p = BeamPipeline(runner="FnApiRunner")
    result = p | beam.Create(inputs) | ParseResponses(first_copies=known, clock=lambda: FIXED_NOW)
    assert_that(
        result[PARSED] | beam.Map(lambda r: (r.response.response_id, r.response.answer)),
        equal_to([("dup", "Copy 1."), ("single", ANSWER)]),
        label="CheckKept",
    )
    assert_that(
        result[DEAD_LETTERS] | beam.Map(lambda d: (d.origin_offset, d.error.split(":")[0])),
        equal_to([(7, "duplicate_response_id"), (4, "duplicate_response_id")]),
        label="CheckDeadLetters",
    )
    transforms = p.to_runner_api().components.transforms.values()
    assert not [t.unique_name for t in transforms if "RepeatedIds" in t.unique_name]
    (parse,) = [t for t in transforms if t.unique_name.startswith("ParseResponses/Parse/ParDo")]
    assert not beam_runner_api_pb2.ParDoPayload.FromString(parse.spec.payload).side_inputs
    p.run().wait_until_finish()


@pytest.mark.parametrize(
    ("timestamp", "reason"),
    [
        (10**20, "invalid_fields"),  # epoch ms beyond what a datetime holds
        (-(10**20), "invalid_fields"),
        ("9999-12-31T23:59:59Z", "timestamp_out_of_range"),  # its window would end after year 9999
        ("0001-01-01T00:00:00Z", "timestamp_out_of_range"),
        ("2026-11-29T09:00:00", "timestamp_without_zone"),  # no zone
    ],
)
def test_implausible_timestamps_are_rejected_with_a_reason(timestamp, reason):
    with pytest.raises(ParseError) as caught:
        parse_message(raw(message(timestamp=timestamp)))
    assert caught.value.reason == reason and "timestamp" in caught.value.message


def test_random_corruptions_never_escape_as_anything_but_a_parse_error():
    import json
    import random

    rng = random.Random(5)
    base = raw(message(claims=[{"claim_text": "x", "source_doc_ids": ["1"], "confidence": 0.5}]))
    outcomes = {"parsed": 0, "rejected": 0}
    for _ in range(600):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            data[i : i + rng.randint(0, 3)] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3)))
        try:
            parse_message(bytes(data))
            outcomes["parsed"] += 1
        except ParseError as e:
            assert e.reason and len(e.message) <= 420
            outcomes["rejected"] += 1
    assert outcomes["rejected"] > 300
    values = [None, True, -1, 2.5, "", "x" * 300, [], {}, [1, "a"], {"a": 1}]
    for field in ("response_id", "timestamp", "answer", "evidence", "claims", "metadata", "schema_version", "query"):
        for value in values:
            try:
                parse_message(json.dumps({**message(), field: value}).encode())
            except ParseError:
                pass


def test_oversized_message_is_dead_lettered_with_its_head_only():
    from transforms.ingest.parse import KEPT_OVERSIZED_BYTES, MAX_MESSAGE_BYTES

    huge = raw(message("huge", query="q" * (MAX_MESSAGE_BYTES + 10)))
    with pytest.raises(ParseError, match="message_too_large|bytes; the limit"):
        parse_message(huge)
    with BeamPipeline(runner="FnApiRunner") as p:
        result = p | beam.Create([(huge, at(1))]) | ParseResponses()
        assert_that(
            result[DEAD_LETTERS] | beam.Map(lambda d: (len(d.raw_payload), d.error.startswith("message_too_large"))),
            equal_to([(KEPT_OVERSIZED_BYTES, True)]),
        )


@pytest.mark.prism
@needs_prism
def test_a_duplicate_after_its_window_closed_is_dead_lettered_not_audited_again():
    """Streaming on Prism: the first copy is kept when the window closes; a copy arriving later (within the allowed
    lateness) fires a late pane in which it is the only copy, and must still be known as a duplicate."""
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.transforms.window import TimestampedValue

    from transforms.ingest.windows import WindowByEventTime

    first, again = raw(message("dup")), raw(message("dup", answer="A copy sent again."))
    event_s = datetime(2026, 11, 29, 9, 0, 30, tzinfo=UTC).timestamp()  # both say 09:00:30: window 09:00-09:01
    stream = (
        TestStream()
        .add_elements([TimestampedValue((first, at(1)), event_s)])
        .advance_watermark_to(event_s + 90)  # the window [09:00, 09:01) has closed and fired
        .add_elements([TimestampedValue((again, at(9)), event_s)])
        .advance_watermark_to_infinity()
    )
    with beam.Pipeline(options=prism_options("--streaming")) as p:
        parsed = p | stream | ParseResponses()
        windowed = parsed[PARSED] | WindowByEventTime(60, allowed_lateness_seconds=3600)
        unique = windowed | DropDuplicateResponses(clock=lambda: FIXED_NOW)
        assert_that(unique[PARSED] | beam.Map(lambda r: r.origin.offset), equal_to([1]), label="CheckKept")
        assert_that(
            unique[DEAD_LETTERS] | beam.Map(lambda d: (d.raw_payload, d.origin_offset, "earlier pane" in d.error)),
            equal_to([(again, 9, True)]),
            label="CheckLateDuplicate",
        )
