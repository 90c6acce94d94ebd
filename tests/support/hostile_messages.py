"""Hypothesis strategies for logged messages a hostile or careless producer could send.

    @given(hostile_message())          # bytes of one message (often invalid, sometimes a valid response)
    @given(hostile_batch())            # a list of them, each valid one with its own response id

The messages start from a valid logged response and replace or add fields with what JSON allows and
readers trip on: arbitrary Unicode (lone and paired surrogates, escaped or as raw invalid UTF-8, NUL,
noncharacters, bidi marks, combining sequences), deep nesting, extreme number literals (`1e400`, `-0`,
`NaN`, `Infinity`, integers of hundreds of digits), duplicate keys and huge strings. The JSON text is put
together by hand, so literals Python's `json.dumps` would never write get in too.
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

from tests.support.audit_messages import message

__all__ = ["KNOWN_HOSTILE", "SPECIAL_TEXT", "hostile_batch", "hostile_message", "json_text"]

SPECIAL_TEXT = [
    "\x00",
    "\ufffe",
    "\uffff",
    "\U0010ffff",
    "\ufdd0",
    "\u202e",
    "\u200f",
    "\u2066",
    "e\u0301\u0301",
    "\u0301",
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\ud83d",
    "\U0001f600",
    "\\",
    '"',
    "\n\r\t",
]
"""Characters and sequences that break naive readers; the surrogates among them are what Beam cannot encode."""

NUMBER_LITERALS = [
    "1e400",
    "-1e400",
    "1E-400",
    "-0",
    "-0.0",
    "NaN",
    "Infinity",
    "-Infinity",
    "1" + "0" * 400,
    "-" + "9" * 30,
    "1795942800000",
    "0.1",
]

_characters = st.characters(exclude_categories=())  # every code point, surrogates included
_short_text = st.one_of(
    st.text(_characters, max_size=30),
    st.lists(st.sampled_from(SPECIAL_TEXT), min_size=1, max_size=6).map("".join),
)
_text = st.one_of(
    _short_text,
    st.integers(min_value=1, max_value=4).map(lambda n: "long " * (60_000 * n)),  # past the answer's limit
)


def _string_literal(text: str, escaped: bool) -> str:
    """`text` as a JSON string: surrogates escaped (`\\ud800`) or left raw (invalid UTF-8 once encoded)."""
    return json.dumps(text, ensure_ascii=escaped)


_numbers = st.one_of(
    st.sampled_from(NUMBER_LITERALS),
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)


@st.composite
def json_text(draw, depth: int = 3) -> str:
    """A JSON value as text, with the literals above among its leaves."""
    kind = draw(st.integers(0, 6 if depth > 0 else 3))
    escaped = draw(st.booleans())
    if kind == 0:
        return draw(st.sampled_from(["null", "true", "false"]))
    if kind == 1:
        return draw(_numbers)
    if kind in (2, 3):
        return _string_literal(draw(_short_text), escaped)
    if kind == 4:
        n = draw(st.sampled_from([1, 40, 300, 3000]))
        return "[" * n + "]" * n
    items = draw(st.lists(json_text(depth=depth - 1), max_size=3))
    if kind == 5:
        return "[" + ", ".join(items) + "]"
    keys = draw(st.lists(_short_text, min_size=len(items), max_size=len(items)))
    return "{" + ", ".join(f"{_string_literal(k, escaped)}: {v}" for k, v in zip(keys, items, strict=True)) + "}"


_FIELDS = ["response_id", "timestamp", "query", "answer", "evidence", "metadata", "citations"]


@st.composite
def hostile_message(draw, response_id: str = "h-0") -> bytes:
    """One message: a valid response with some fields replaced, added or repeated (see the module docstring)."""
    base = message(response_id, metadata={"tenant": "acme", "risk_level": "medium"})
    pairs = [(json.dumps(k), json.dumps(v)) for k, v in base.items()]
    escaped = draw(st.booleans())
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["replace_text", "replace_any", "add", "duplicate", "nest"]))
        index = draw(st.integers(0, len(pairs) - 1))
        key = pairs[index][0]
        if action == "replace_text":
            pairs[index] = (key, _string_literal(draw(_text), escaped))
        elif action == "replace_any":
            pairs[index] = (key, draw(json_text()))
        elif action == "add":
            pairs.append((_string_literal(draw(_short_text), escaped), draw(json_text())))
        elif action == "duplicate":
            pairs.append((json.dumps(draw(st.sampled_from(_FIELDS))), draw(json_text(depth=1))))
        else:  # text inside the evidence or the metadata, where a reader looks less
            where = draw(st.sampled_from(["evidence", "metadata"]))
            value = _string_literal(draw(_short_text), escaped)
            nested = f'[{{"doc_id": "1", "content": {value}}}]' if where == "evidence" else f'{{"tenant": {value}}}'
            pairs = [(k, nested if k == json.dumps(where) else v) for k, v in pairs]
    text = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
    return text.encode("utf-8", "surrogatepass")


@st.composite
def hostile_batch(draw, min_size: int = 10, max_size: int = 25) -> list[bytes]:
    """Hostile messages with distinct response ids (unless a message replaced its own), and some valid ones."""
    n = draw(st.integers(min_size, max_size))
    return [draw(hostile_message(response_id=f"h-{i}")) for i in range(n)]


_LONE_ID = json.dumps(message("x")).replace('"x"', '"id-\\udc00"', 1).encode()
KNOWN_HOSTILE = [
    json.dumps(message("lone-in-answer")).replace("The patient was", "\\ud800 The patient was", 1).encode(),
    _LONE_ID,
    _LONE_ID,  # a repeated id is grouped by before parsing: on the original code this failed the whole run
    json.dumps(message("t")).replace('"2026-11-29T09:00:30Z"', "1e400").encode(),
    json.dumps(message("n")).replace('"2026-11-29T09:00:30Z"', "1" + "0" * 400).encode(),
]
"""Messages that failed a run on the original code, whatever hypothesis draws besides."""
