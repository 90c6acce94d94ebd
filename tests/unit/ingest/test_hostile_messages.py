"""No message that passes parsing can fail where an element crosses the runner; the others are dead letters.

Property tests over `tests.support.hostile_messages`: arbitrary Unicode (lone surrogates above all: valid
JSON, yet a string Beam's coders cannot encode as UTF-8), deep nesting, extreme numbers, duplicate keys and
huge strings.

- Every form a message takes between two stages is encoded and decoded with Beam's default coder (the
  one an untyped PCollection gets) and, for grouping keys, its deterministic form: the source's
  `(bytes, Origin)`, the peeked response id with its first copy, the parsed response, the audited one, the
  lake rows, the dead-letter row and the slice keys of window metrics. The source's event time of the message
  is one a `TimestampedValue` takes and a late check can format.
- Through the file path: `groundwatch audit` on a file of such messages exits 0, and every line is a response
  or a dead letter in the lake.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime

import pytest
from apache_beam.coders import coders
from apache_beam.transforms.window import TimestampedValue
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboards.views import connect_lake
from pipelines.cli import main
from pipelines.runner.inline import InlineAuditor
from schemas import Origin
from tests.support.audit_messages import message, raw
from tests.support.hostile_messages import KNOWN_HOSTILE, hostile_batch, hostile_message
from transforms.ingest.parse import INVALID_UNICODE, ParseError, dead_letter_row, first_copy, response_id_of
from transforms.ingest.windows import late_reason
from transforms.io.kafka.client import message_event_time
from transforms.io.lake.rows import to_lake_rows

CODER = coders.FastPrimitivesCoder()
KEY_CODER = CODER.as_deterministic_coder("GroupByKey")
AUDITOR = InlineAuditor(source="file:/hostile.jsonl")
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _crosses(element, coder=CODER) -> None:
    """`element` goes through `coder` and back (what the runner does between two stages)."""
    coder.decode(coder.encode(element))


def _event_time_is_usable(raw_message: bytes) -> None:
    event_s = message_event_time(raw_message, 1.0)
    assert math.isfinite(event_s)
    TimestampedValue(raw_message, event_s)
    late_reason(event_s, 4_102_444_800.0, 60, 0)  # formats the event time when late


def _check(raw_message: bytes) -> None:
    origin = Origin(source="file:/hostile.jsonl", offset=1)
    _crosses((raw_message, origin))
    _event_time_is_usable(raw_message)
    if (peeked := response_id_of(raw_message)) is not None:
        _crosses(peeked, KEY_CODER)
        _crosses((peeked, first_copy(origin)))
    try:
        parsed = AUDITOR.parse(raw_message, offset=1)
    except ParseError as e:
        row = dead_letter_row(raw_message, origin, stage="parse", error=f"{e.reason}: {e.message}", received_at=NOW)
        assert row.raw_payload == raw_message  # the original bytes, whatever they hold
        _crosses(row.model_dump())
        return
    _crosses(parsed)
    response = parsed.response
    for key in (response.response_id, response.metadata.tenant, response.metadata.retriever_version):
        _crosses(key, KEY_CODER)
    audited = AUDITOR.audit(parsed)
    _crosses(audited)
    for table, row in to_lake_rows(audited):
        _crosses((table, row))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(hostile_message())
def test_every_value_that_passes_parsing_crosses_the_runner(raw_message):
    _check(raw_message)


@pytest.mark.parametrize(
    "answer",
    ['"\\ud800 was prescribed"', '"\\udfff"', '"a \\ud83d b"', '"\\ude00\\ud83d"', '"x\\ud800\\u0041"'],
)
def test_an_escaped_lone_surrogate_is_an_invalid_unicode_dead_letter(answer):
    text = json.dumps(message("lone")).replace(json.dumps(message()["answer"]), answer)
    with pytest.raises(ParseError) as refused:
        AUDITOR.parse(text.encode())
    assert refused.value.reason == INVALID_UNICODE
    assert response_id_of(text.replace('"lone"', '"id\\udc00"').encode()) is None  # never a key between stages


def test_a_paired_surrogate_escape_is_the_character_it_encodes():
    text = json.dumps(message("emoji", answer="The patient smiled \U0001f600."))  # ensure_ascii: \ud83d\ude00
    assert "\\ud83d\\ude00" in text
    assert AUDITOR.parse(text.encode()).response.answer == "The patient smiled \U0001f600."


@pytest.mark.parametrize("literal", ["1e400", "NaN", "-Infinity", "1" + "0" * 400, "-1e300", '"99999-01-01T00:00:00Z"'])
def test_a_timestamp_out_of_any_range_leaves_the_source_its_own_event_time(literal):
    """The Kafka source stamps each record with its message's time (`--event-time message`): before, `1e400`
    and `NaN` failed the `TimestampedValue`, an integer of 400 digits raised OverflowError, in the source."""
    text = json.dumps(message()).replace('"2026-11-29T09:00:30Z"', literal)
    assert message_event_time(text.encode(), 7.0) == 7.0
    with pytest.raises(ParseError):
        AUDITOR.parse(text.encode())


def _lake_counts(lake: str) -> tuple[int, int]:
    con = connect_lake(lake)
    try:
        responses = con.execute("SELECT count(*) FROM responses").fetchone()[0]
        dead = con.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
    finally:
        con.close()
    return responses, dead


@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=hostile_batch(), valid=st.integers(1, 3))
def test_a_file_of_hostile_messages_is_audited_to_the_last_line(tmp_path_factory, batch, valid, capsys):
    """The file path end to end (a Beam run takes seconds, so one example of many messages)."""
    folder = tmp_path_factory.mktemp("hostile")
    lines = [*KNOWN_HOSTILE, *batch, *(raw(message(f"valid-{i}")) for i in range(valid))]
    (folder / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    lake = str(folder / "lake")
    assert main(["audit", "--input", str(folder / "in.jsonl"), "--lake", lake]) == 0
    out = capsys.readouterr().out
    read = int(re.search(r"^read\s+(\d+)", out, re.MULTILINE).group(1))
    blank = sum(not line.strip() for line in lines)  # a huge string of spaces cannot occur, but be exact
    assert read == len(lines) - blank
    responses, dead = _lake_counts(lake)
    assert responses + dead == read and responses >= valid
    reasons = connect_lake(lake).execute("SELECT error FROM dead_letters").fetchall()
    assert sum(error.startswith(INVALID_UNICODE) for (error,) in reasons) >= 3
