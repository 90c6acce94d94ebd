"""Turn raw logged messages into valid `ParsedResponse`s; everything else becomes a dead letter.

The input is `(raw_bytes, Origin)`. `parse_message` is the plain function
(bytes in, a response or a short reason out); `ParseResponses` is the composite:

    parsed = raw | "ParseResponses" >> ParseResponses()
    parsed[PARSED]        # ParsedResponse, valid against the input contract
    parsed[DEAD_LETTERS]  # DeadLetterRow: reason, original bytes, origin

`DropDuplicateResponses` keeps one response per `response_id` within a window
(the one read first, by origin) and dead-letters the others, so that
read = audited + sampled out + dead-lettered always holds. Every rejection
increments a counter named for its reason in the `groundwatch.dead_letters`
namespace; `groundwatch/read` counts every message that enters.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.metrics import Metrics
from pydantic import ValidationError

from schemas import MAX_ANSWER_CHARS, DeadLetterRow, LoggedResponse, Origin, ParsedResponse

__all__ = [
    "DEAD_LETTERS",
    "DEAD_LETTER_NAMESPACE",
    "MAX_MESSAGE_BYTES",
    "METRICS_NAMESPACE",
    "PARSED",
    "DropDuplicateResponses",
    "ParseError",
    "ParseResponses",
    "dead_letter_row",
    "input_flags",
    "parse_message",
    "summarize_validation_error",
]

PARSED = "parsed"
DEAD_LETTERS = "dead_letters"
METRICS_NAMESPACE = "groundwatch"
DEAD_LETTER_NAMESPACE = "groundwatch.dead_letters"
MAX_MESSAGE_BYTES = 4 * MAX_ANSWER_CHARS + 4_000_000
"""Messages above this are rejected before JSON decoding (evidence can be long, but not unbounded)."""

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
    if first["type"] == "json_invalid":
        return ParseError("malformed_json", _short(first["msg"]))
    if first["type"] == "model_type" and not first["loc"]:
        return ParseError("not_an_object", "message is not a JSON object")
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


def parse_message(raw: bytes) -> LoggedResponse:
    """The logged response in `raw`, or a `ParseError` saying briefly why not."""
    if not isinstance(raw, (bytes, bytearray)):
        raise ParseError("not_bytes", f"expected bytes, got {type(raw).__name__}")
    if len(raw) > MAX_MESSAGE_BYTES:
        raise ParseError("message_too_large", f"message is {len(raw):,} bytes; the limit is {MAX_MESSAGE_BYTES:,}")
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseError("not_utf8", f"not UTF-8: byte 0x{raw[e.start]:02x} at offset {e.start}") from None
    try:
        return LoggedResponse.model_validate_json(text)
    except ValidationError as e:
        raise summarize_validation_error(e) from None


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


def _utc_now() -> datetime:
    return datetime.now(UTC)


class _ParseDoFn(beam.DoFn):
    def __init__(self, clock: Callable[[], datetime]):
        self._clock = clock
        self._read = Metrics.counter(METRICS_NAMESPACE, "read")
        self._parsed = Metrics.counter(METRICS_NAMESPACE, "parsed")

    def process(self, element):
        raw, origin = element
        self._read.inc()
        try:
            response = parse_message(raw)
        except ParseError as e:
            Metrics.counter(DEAD_LETTER_NAMESPACE, e.reason).inc()
            row = dead_letter_row(
                raw, origin, stage="parse", error=f"{e.reason}: {e.message}", received_at=self._clock()
            )
            yield beam.pvalue.TaggedOutput(DEAD_LETTERS, row)
            return
        self._parsed.inc()
        yield ParsedResponse(response=response, origin=origin, input_flags=input_flags(response), raw=bytes(raw))


class ParseResponses(beam.PTransform):
    """Validate `(raw_bytes, Origin)` messages against the input contract; invalid ones become dead letters.

    Returns a tagged result: `[PARSED]` ParsedResponses and `[DEAD_LETTERS]` DeadLetterRows.
    """

    def __init__(self, *, clock: Callable[[], datetime] = _utc_now):
        super().__init__()
        self._clock = clock

    def expand(self, messages):
        return messages | "Parse" >> beam.ParDo(_ParseDoFn(self._clock)).with_outputs(DEAD_LETTERS, main=PARSED)


def _origin_order(parsed: ParsedResponse) -> tuple:
    o = parsed.origin
    return (o.source, -1 if o.partition is None else o.partition, -1 if o.offset is None else o.offset)


def _describe(origin: Origin) -> str:
    if origin.offset is None:
        return origin.source
    if origin.source.startswith("file:"):
        return f"{origin.source} line {origin.offset}"
    return f"{origin.source} partition {origin.partition} offset {origin.offset}"


class _KeepFirstDoFn(beam.DoFn):
    def __init__(self, clock: Callable[[], datetime]):
        self._clock = clock

    def process(self, element):
        response_id, copies = element
        first, *others = sorted(copies, key=_origin_order)
        # The raw bytes were kept only for this step; downstream stages do not need them.
        yield first.model_copy(update={"raw": None})
        where = _describe(first.origin)
        for dup in others:
            Metrics.counter(DEAD_LETTER_NAMESPACE, "duplicate_response_id").inc()
            raw = dup.raw if dup.raw is not None else dup.response.model_dump_json().encode("utf-8")
            error = f"duplicate_response_id: {response_id!r} was already read at {where}; this copy was not audited"
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, dead_letter_row(raw, dup.origin, stage="dedupe", error=error, received_at=self._clock())
            )


class DropDuplicateResponses(beam.PTransform):
    """Keep the first-read copy of each response_id per window; later copies become dead letters.

    At-least-once producers repeat messages; auditing a response twice would count it twice in every
    rate. The copy kept is the one with the smallest origin (source, partition, offset), so reruns agree.
    Returns a tagged result like `ParseResponses`.
    """

    def __init__(self, *, clock: Callable[[], datetime] = _utc_now):
        super().__init__()
        self._clock = clock

    def expand(self, parsed):
        return (
            parsed
            | "KeyByResponseId" >> beam.Map(lambda p: (p.response.response_id, p))
            | "GroupCopies" >> beam.GroupByKey()
            | "KeepFirst" >> beam.ParDo(_KeepFirstDoFn(self._clock)).with_outputs(DEAD_LETTERS, main=PARSED)
        )
