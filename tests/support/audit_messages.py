"""Small hand-written logged responses and bad messages shared by the audit pipeline tests."""

from __future__ import annotations

import json

from schemas import Origin

EVIDENCE = [
    {"doc_id": "1", "content": "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024."},
    {"doc_id": "2", "content": "Lab results showed potassium at 4.2 mmol/L on admission."},
]
ANSWER = "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024 [1]."


def message(response_id: str = "r-1", **changes) -> dict:
    """A valid logged response as a dict; keyword arguments replace top-level fields."""
    base = {
        "response_id": response_id,
        "timestamp": "2026-11-29T09:00:30Z",
        "query": "What was prescribed?",
        "answer": ANSWER,
        "evidence": EVIDENCE,
        "metadata": {"tenant": "acme", "risk_level": "medium", "retriever_version": "r7"},
    }
    base.update(changes)
    return base


def raw(msg: dict) -> bytes:
    return json.dumps(msg).encode("utf-8")


def at(line: int, source: str = "file:/test/traffic.jsonl") -> Origin:
    return Origin(source=source, offset=line)


BAD_MESSAGES: dict[str, bytes] = {
    "malformed_json": b'{"response_id": "broken", "answer": ',
    "not_an_object": b'["a", "list"]',
    "invalid_fields": raw(message("wrong-types", evidence="see attached", timestamp="yesterday")),
    "missing_field": json.dumps({k: v for k, v in message("no-answer").items() if k != "answer"}).encode(),
    "unknown_schema_version": raw(message("v9", schema_version=9)),
    "answer_too_long": raw(message("huge", answer="word " * 210_000)),
    "not_utf8": raw(message("latin")).replace(b"patient", b"pati\xe9nt", 1),
}
"""One message per parse failure, keyed by the reason code the dead letter must carry."""
