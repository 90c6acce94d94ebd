"""Turn raw logged messages into valid `ParsedResponse`s; everything else becomes a dead letter.

The input is `(raw_bytes, Origin)`. `parse_message` is the plain function
(bytes in, a response or a short reason out); `ParseResponses` is the composite:

    parsed = raw | "ParseResponses" >> ParseResponses()
    parsed[PARSED]        # ParsedResponse, valid against the input contract
    parsed[DEAD_LETTERS]  # DeadLetterRow: reason, original bytes, origin

Duplicates: a response id carried by several messages is audited once, from
the message read first (smallest origin), and the other copies are
dead-lettered (`duplicate_response_id`), so that read = audited + sampled out +
dead-lettered always holds. Bounded runs decide over the whole input
(`ParseResponses(drop_duplicates=True)`); streaming runs per window
(`DropDuplicateResponses`). Every rejection
increments a counter named for its reason in the `groundwatch.dead_letters`
namespace; `groundwatch/read` counts every message that enters, and
`groundwatch/responses_with_unknown_fields` the valid ones carrying fields the
contract does not know (kept, see `schemas.responses`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.metrics import Metrics
from pydantic import ValidationError

from schemas import MAX_ANSWER_CHARS, DeadLetterRow, LoggedResponse, Origin, ParsedResponse
from schemas.base import utc_now
from schemas.records import DEAD_LETTER_NAMESPACE, METRICS_NAMESPACE
from schemas.responses import EARLIEST_EVENT_TIME, LATEST_EVENT_TIME, TIMESTAMP_WITHOUT_ZONE

__all__ = [
    "DEAD_LETTERS",
    "DEAD_LETTER_NAMESPACE",
    "INVALID_UNICODE",
    "KEPT_OVERSIZED_BYTES",
    "MAX_MESSAGE_BYTES",
    "METRICS_NAMESPACE",
    "PARSED",
    "UNKNOWN_FIELDS_COUNTER",
    "EARLIEST_EVENT_TIME",
    "LATEST_EVENT_TIME",
    "DropDuplicateResponses",
    "ParseError",
    "ParseResponses",
    "dead_letter_row",
    "first_copy",
    "input_flags",
    "original_bytes",
    "parse_message",
    "response_id_of",
    "stage_failed_dead_letter",
    "stage_failed_row",
    "summarize_validation_error",
]

PARSED = "parsed"
DEAD_LETTERS = "dead_letters"
MAX_MESSAGE_BYTES = 4 * MAX_ANSWER_CHARS + 4_000_000
"""Messages above this are rejected before JSON decoding (evidence can be long, but not unbounded)."""

KEPT_OVERSIZED_BYTES = 1 << 20
"""How much of a message over MAX_MESSAGE_BYTES its dead letter keeps (the first 1 MiB); every other dead
letter keeps its message's bytes whole. The one cap on the raw bytes of a dead letter (docs/contract.md)."""

UNKNOWN_FIELDS_COUNTER = "responses_with_unknown_fields"
"""Counter (`groundwatch` namespace) of valid messages carrying fields the contract does not know: they are
kept in the `extra` column of `responses`, and counted so a producer's new field is noticed."""

_BOM = b"\xef\xbb\xbf"

INVALID_UNICODE = "invalid_unicode"
"""The dead-letter reason of a message whose JSON escapes a lone surrogate (`"\\ud800"`): valid JSON, but a
string that cannot be encoded as UTF-8, which Beam's coders do whenever an element crosses the runner."""

# An escaped UTF-16 surrogate, the only way a decoded UTF-8 text can yield a string UTF-8 cannot encode again.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

_MAX_ERRORS_SHOWN = 3
_MAX_MESSAGE_CHARS = 160


class ParseError(ValueError):
    """Why a message is not a valid logged response: a short reason code and a one-line explanation."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def _short(text: str, limit: int = _MAX_MESSAGE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summarize_validation_error(error: ValidationError) -> ParseError:
    """One short line from pydantic's errors: `field: message` for the first few, never the input itself."""
    errors = error.errors(include_url=False, include_input=False, include_context=False)
    by_field = {tuple(e["loc"]): e for e in errors}
    if ("schema_version",) in by_field:
        # A message of another version may differ everywhere; only the version matters.
        return ParseError(
            "unknown_schema_version", _short(by_field[("schema_version",)]["msg"].removeprefix("Value error, "))
        )
    first = errors[0]
    if first["type"] == "json_invalid" and "surrogate" in first["msg"]:
        return ParseError(INVALID_UNICODE, _short(f"a string cannot be encoded as UTF-8: {first['msg']}"))
    if first["type"] == "json_invalid":
        return ParseError("malformed_json", _short(first["msg"]))
    if first["type"] == "model_type" and not first["loc"]:
        return ParseError("not_an_object", "message is not a JSON object")
    if all(e["type"] == TIMESTAMP_WITHOUT_ZONE for e in errors):
        field = ".".join(str(p) for p in first["loc"])
        return ParseError(TIMESTAMP_WITHOUT_ZONE, _short(f"{field}: {first['msg']}", 400))
    answer = by_field.get(("answer",))
    if answer is not None and answer["type"] == "string_too_long":
        return ParseError("answer_too_long", f"answer is longer than {MAX_ANSWER_CHARS:,} characters")
    parts = []
    for e in errors[:_MAX_ERRORS_SHOWN]:
        field = ".".join(str(p) for p in e["loc"]) or "message"
        parts.append(f"{field}: {e['msg'].removeprefix('Value error, ')}")
    more = f" (+{len(errors) - _MAX_ERRORS_SHOWN} more)" if len(errors) > _MAX_ERRORS_SHOWN else ""
    reason = "missing_field" if all(e["type"] == "missing" for e in errors) else "invalid_fields"
    return ParseError(reason, _short("; ".join(parts), 400) + more)


def input_flags(response: LoggedResponse) -> list[str]:
    """Conditions that do not stop the audit but must travel with the record."""
    flags = []
    if not any(p.content.strip() for p in response.evidence):
        flags.append("empty_evidence")
    if not response.answer.strip():
        flags.append("empty_answer")
    return flags


def parse_message(raw: bytes, *, count: bool = True) -> LoggedResponse:
    """The logged response in `raw`, or a `ParseError` saying briefly why not.

    A leading UTF-8 byte-order mark is ignored (editors on Windows write one). A valid message with fields
    the contract does not know increments `UNKNOWN_FIELDS_COUNTER` unless `count` is False (a look at a
    message that is parsed again later)."""
    if not isinstance(raw, (bytes, bytearray)):
        raise ParseError("not_bytes", f"expected bytes, got {type(raw).__name__}")
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ParseError("message_too_large", f"message is {len(raw):,} bytes; the limit is {MAX_MESSAGE_BYTES:,}")
    skip = len(_BOM) if raw.startswith(_BOM) else 0
    try:
        text = bytes(raw[skip:]).decode("utf-8")
    except UnicodeDecodeError as e:
        where = e.start + skip
        raise ParseError("not_utf8", f"not UTF-8: byte 0x{raw[where]:02x} at offset {where}") from None
    try:
        response = LoggedResponse.model_validate_json(text)
    except ValidationError as e:
        error = summarize_validation_error(e)
        if error.reason == "malformed_json" and _SURROGATE_ESCAPE.search(raw):
            _refuse_unencodable(text)  # the contract's reader refuses a lone surrogate as bad JSON: name it
        raise error from None
    except RecursionError:
        raise ParseError(
            "malformed_json", "JSON nested too deeply to read (arrays or objects within each other)"
        ) from None
    except Exception as e:  # a validator that fails in an unforeseen way must not stop the run
        raise ParseError("invalid_message", _short(f"{type(e).__name__}: {e}")) from None
    if _SURROGATE_ESCAPE.search(raw):
        _refuse_unencodable(text)
    if not EARLIEST_EVENT_TIME <= response.timestamp < LATEST_EVENT_TIME:
        raise ParseError(
            "timestamp_out_of_range",
            f"timestamp {response.timestamp.isoformat()} is outside {EARLIEST_EVENT_TIME.year}-"
            f"{LATEST_EVENT_TIME.year}; event-time windows would be meaningless",
        )
    if count and response.unknown_fields():
        Metrics.counter(METRICS_NAMESPACE, UNKNOWN_FIELDS_COUNTER).inc()
    return response


def _unencodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _refuse_unencodable(text: str) -> None:
    """A `ParseError` (`invalid_unicode`) if any key or string of the JSON `text` cannot be encoded as UTF-8.

    Python's JSON reader accepts such escapes. The contract's reader (pydantic's) refuses them as malformed
    JSON today: then this names the reason. Should it ever accept them, this still refuses the message,
    because such a string would fail later between two stages, where no stage can dead-letter it. Only a
    message escaping a surrogate gets here (`_SURROGATE_ESCAPE`), so the second read is rare."""
    try:
        stack = [json.loads(text)]
    except (ValueError, RecursionError):
        return  # the contract's reader accepted it; Python's cannot walk it, and it holds no escape Python decoded
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and _unencodable(value):
            raise ParseError(INVALID_UNICODE, "a string holds a lone surrogate escape and cannot be encoded as UTF-8")


def dead_letter_row(raw: bytes, origin: Origin, *, stage: str, error: str, received_at: datetime) -> DeadLetterRow:
    """A dead-letter row whose id is stable for the same bytes from the same place (re-runs overwrite)."""
    digest = hashlib.sha256()
    for part in (stage, origin.source, str(origin.partition), str(origin.offset)):
        digest.update(part.encode("utf-8", "backslashreplace") + b"\0")
    digest.update(raw)
    return DeadLetterRow(
        dead_letter_id=digest.hexdigest()[:32],
        received_at=received_at,
        stage=stage,
        error=error,
        raw_payload=bytes(raw),
        origin_source=origin.source,
        origin_partition=origin.partition,
        origin_offset=origin.offset,
    )


def stage_failed_row(raw: bytes, origin: Origin, *, stage: str, error: Exception, received_at: datetime):
    """The dead letter of a message a stage failed on for any reason (a bug of ours included), so that one
    message never stops a run: error `stage_failed: <stage>: <exception type>: <its message>`."""
    what = _short(f"{type(error).__name__}: {error}", 300)
    return dead_letter_row(raw, origin, stage=stage, error=f"stage_failed: {stage}: {what}", received_at=received_at)


def original_bytes(parsed: ParsedResponse) -> bytes:
    """The message's original bytes; the response written again only if a source did not keep them."""
    return parsed.raw if parsed.raw is not None else parsed.response.model_dump_json().encode("utf-8")


def stage_failed_dead_letter(parsed: ParsedResponse, stage: str, error: Exception, received_at: datetime):
    """`stage_failed_row` for a parsed response a later stage failed on, with the message's original bytes (its
    JSON again when they were not kept), counted as `<stage>_failed`."""
    Metrics.counter(DEAD_LETTER_NAMESPACE, f"{stage}_failed").inc()
    return stage_failed_row(original_bytes(parsed), parsed.origin, stage=stage, error=error, received_at=received_at)


def _origin_key(origin: Origin) -> tuple:
    return (
        origin.source,
        -1 if origin.partition is None else origin.partition,
        -1 if origin.offset is None else origin.offset,
    )


def _describe(origin: Origin) -> str:
    if origin.offset is None:
        return origin.source
    if origin.source.startswith("file:"):
        return f"{origin.source} line {origin.offset}"
    return f"{origin.source} partition {origin.partition} offset {origin.offset}"


def response_id_of(raw: bytes) -> str | None:
    """The top-level `response_id` of a JSON message, or None; a cheap look that validates nothing else."""
    try:
        obj = json.loads(raw)
    except (ValueError, TypeError, RecursionError):  # a line nested too deep for Python's JSON reader has no id
        return None
    value = obj.get("response_id") if isinstance(obj, dict) else None
    # An id with a lone surrogate would fail to encode as a key between stages; parsing dead-letters it.
    return value if isinstance(value, str) and not _unencodable(value) else None


def _duplicate_dead_letter(raw: bytes, origin: Origin, response_id: str, first: str, now: datetime) -> DeadLetterRow:
    Metrics.counter(DEAD_LETTER_NAMESPACE, "duplicate_response_id").inc()
    error = f"duplicate_response_id: {response_id!r} was already read at {first}; this copy was not audited"
    return dead_letter_row(raw, origin, stage="dedupe", error=error, received_at=now)


class _ParseDoFn(beam.DoFn):
    """Parses each message; `first_copies`, known when the graph is built, or else the side input of that name,
    says which copy of a repeated response id is audited."""

    def __init__(self, clock: Callable[[], datetime], first_copies: Mapping[str, tuple[tuple, str]] | None = None):
        self._clock = clock
        self._first_copies = first_copies
        self._read = Metrics.counter(METRICS_NAMESPACE, "read")
        self._parsed = Metrics.counter(METRICS_NAMESPACE, "parsed")

    def process(self, element, first_copies=None):
        raw, origin = element
        self._read.inc()
        try:
            out = self._parse(raw, origin, self._first_copies if first_copies is None else first_copies)
        except Exception as e:  # anything unforeseen (a bug of ours): this message's dead letter, not a failed run
            Metrics.counter(DEAD_LETTER_NAMESPACE, "parse_failed").inc()
            out = beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_row(bytes(raw), origin, stage="parse", error=e, received_at=self._clock())
            )
        yield out

    def _parse(self, raw, origin: Origin, first_copies):
        try:
            response = parse_message(raw)
        except ParseError as e:
            Metrics.counter(DEAD_LETTER_NAMESPACE, e.reason).inc()
            error = f"{e.reason}: {e.message}"
            if len(raw) > MAX_MESSAGE_BYTES:
                # An oversized message would bloat the lake; its head is enough to identify it.
                raw, error = raw[:KEPT_OVERSIZED_BYTES], f"{error} (first {KEPT_OVERSIZED_BYTES:,} bytes kept)"
            row = dead_letter_row(raw, origin, stage="parse", error=error, received_at=self._clock())
            return beam.pvalue.TaggedOutput(DEAD_LETTERS, row)
        first = first_copies.get(response.response_id) if first_copies else None
        if first is not None and first[0] != _origin_key(origin):
            dead = _duplicate_dead_letter(raw, origin, response.response_id, first[1], self._clock())
            return beam.pvalue.TaggedOutput(DEAD_LETTERS, dead)
        parsed = ParsedResponse(response=response, origin=origin, input_flags=input_flags(response), raw=bytes(raw))
        self._parsed.inc()
        return parsed


class _FirstCopyFn(beam.CombineFn):
    """(copies seen, smallest origin key, that origin's description) of one response id."""

    def create_accumulator(self):
        return (0, None, "")

    def add_input(self, acc, origin_key_and_text):
        key, text = origin_key_and_text
        count, best, best_text = acc
        return (count + 1, key, text) if best is None or key < best else (count + 1, best, best_text)

    def merge_accumulators(self, accumulators):
        count, best, best_text = 0, None, ""
        for c, key, text in accumulators:
            count += c
            if key is not None and (best is None or key < best):
                best, best_text = key, text
        return (count, best, best_text)

    def extract_output(self, acc):
        return acc


class _RepeatedIds(beam.PTransform):
    """`(response_id, (first origin key, its description))` for every id that more than one message carries."""

    def expand(self, messages):
        return (
            messages
            | "PeekResponseId" >> beam.FlatMap(_peek_id)
            | "FirstCopy" >> beam.CombinePerKey(_FirstCopyFn())
            | "SeenMoreThanOnce" >> beam.FlatMap(lambda kv: [(kv[0], (kv[1][1], kv[1][2]))] if kv[1][0] > 1 else [])
        )


def first_copy(origin: Origin) -> tuple[tuple, str]:
    """How the first copy of a repeated response id is remembered: its origin's sort key and its description."""
    return _origin_key(origin), _describe(origin)


def _peek_id(element):
    raw, origin = element
    response_id = response_id_of(raw)
    if response_id is not None:
        yield response_id, first_copy(origin)


class ParseResponses(beam.PTransform):
    """Validate `(raw_bytes, Origin)` messages against the input contract; invalid ones become dead letters.

    Returns a tagged result: `[PARSED]` ParsedResponses and `[DEAD_LETTERS]` DeadLetterRows.

    With `drop_duplicates=True` (bounded input only: it needs all messages before deciding) a response id
    carried by several messages is parsed from the first one by origin (source, partition, offset); the
    others become `duplicate_response_id` dead letters. The ids are peeked cheaply first and only repeated
    ones reach the parse step as a side input, so no response is shuffled for it. `first_copies`, the
    repeated ids of a larger input this run reads part of (`{response_id: first_copy(origin)}`, see
    `pipelines.runner.passes`), replaces that look, so a copy whose first is in another part is dropped too.
    When given, they travel with the parse step itself, not as a side input: Beam's Java fuser (Flink's) starts
    a new stage at every step that reads a side input, which would send every message out of the worker that
    read it and back again before it is parsed. Without them (an input named by URL, a Kafka catch-up) the
    repeated ids found by the look above are still a side input.
    Streaming input uses `DropDuplicateResponses` per window instead.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = utc_now,
        drop_duplicates: bool = False,
        first_copies: Mapping[str, tuple[tuple, str]] | None = None,
    ):
        super().__init__()
        self._clock = clock
        self._drop_duplicates = drop_duplicates or first_copies is not None
        self._first_copies = first_copies

    def expand(self, messages):
        # The raw bytes ride along with each response: whichever later stage fails on it, its dead letter
        # keeps the message as it was read.
        if not self._drop_duplicates or self._first_copies is not None:
            parse = _ParseDoFn(self._clock, self._first_copies)
            return messages | "Parse" >> beam.ParDo(parse).with_outputs(DEAD_LETTERS, main=PARSED)
        repeated = messages | "RepeatedIds" >> _RepeatedIds()
        return messages | "Parse" >> beam.ParDo(
            _ParseDoFn(self._clock), first_copies=beam.pvalue.AsDict(repeated)
        ).with_outputs(DEAD_LETTERS, main=PARSED)


class _KeepFirstDoFn(beam.DoFn):
    def __init__(self, clock: Callable[[], datetime], copies: _Copies):
        self._clock, self._copies = clock, copies

    def process(self, element, pane=beam.DoFn.PaneInfoParam):
        response_id, copies = element
        try:
            out = list(self._keep_first(response_id, copies, pane.is_first))
        except Exception as e:  # a bug of ours: every copy of this id becomes a dead letter, the run goes on
            out = []
            for copy in copies:
                Metrics.counter(DEAD_LETTER_NAMESPACE, "dedupe_failed").inc()
                row = stage_failed_row(
                    self._copies.raw_of(copy),
                    self._copies.origin_of(copy),
                    stage="dedupe",
                    error=e,
                    received_at=self._clock(),
                )
                out.append(beam.pvalue.TaggedOutput(DEAD_LETTERS, row))
        yield from out

    def _keep_first(self, response_id: str, copies, is_first: bool):
        origin_of = self._copies.origin_of
        if is_first:
            first, *duplicates = sorted(copies, key=lambda c: _origin_key(origin_of(c)))
            # The raw bytes stay with the copy kept: a later stage that fails on it dead-letters them.
            yield first
            where = _describe(origin_of(first))
        else:
            # A late pane of this response id: an earlier pane of the window already kept a copy, so every
            # copy here arrived after the window closed and is a duplicate, not a first audit.
            duplicates, where = copies, "an earlier pane of the same window (this copy came after the window closed)"
        for dup in duplicates:
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS,
                _duplicate_dead_letter(self._copies.raw_of(dup), origin_of(dup), response_id, where, self._clock()),
            )


class _Copies(NamedTuple):
    """How `DropDuplicateResponses` reads its elements: the response id, the origin, the original bytes."""

    id_of: Callable[[Any], str]
    origin_of: Callable[[Any], Origin]
    raw_of: Callable[[Any], bytes]


def _response_id(parsed: ParsedResponse) -> str:
    return parsed.response.response_id


class DropDuplicateResponses(beam.PTransform):
    """Keep the first-read copy of each response_id per window; later copies become dead letters.

    At-least-once producers repeat messages; auditing a response twice would count it twice in every
    rate. The copy kept is the one with the smallest origin (source, partition, offset), so reruns agree.
    The elements are ParsedResponses by default; anything else says how to read its response id, origin
    and original bytes (`id_of`, `origin_of`, `raw_of`: a stream drops its duplicates after the audit, as
    `transforms.audit.stream.ScoredRows`, so the verification is not left until the window closes).
    Returns a tagged result like `ParseResponses`. (Bounded runs use `ParseResponses(drop_duplicates=True)`.)
    """

    def __init__(
        self,
        *,
        id_of: Callable[[Any], str] = _response_id,
        origin_of: Callable[[Any], Origin] = attrgetter("origin"),
        raw_of: Callable[[Any], bytes] = original_bytes,
        clock: Callable[[], datetime] = utc_now,
    ):
        super().__init__()
        self._copies, self._clock = _Copies(id_of, origin_of, raw_of), clock

    def expand(self, copies):
        id_of = self._copies.id_of
        keep_first = _KeepFirstDoFn(self._clock, self._copies)
        return (
            copies
            | "KeyByResponseId" >> beam.Map(lambda c: (id_of(c), c))
            | "GroupCopies" >> beam.GroupByKey()
            | "KeepFirst" >> beam.ParDo(keep_first).with_outputs(DEAD_LETTERS, main=PARSED)
        )
