"""What a reviewer needs to judge a response again: the full evidence passages and where each excerpt lies.

    passage_sha256("The lease term is 24 months.")      # the `passages` key of that text
    locate("24 months", passage)                        # (18, 27), or (-1, -1) when it is not in the passage
    passage_rows(audited, redact=True)                  # the response's `passages` rows, text masked

A passage is stored once per content hash and hour partition (`schemas.review.PassageRow`): the writer keeps
one row per key in each file it writes, and compaction and the views keep one per partition. The scope is the
hour, not the lake: a lake-wide store would need every writer to read the lake before it writes (a global
lookup, against the rule that transforms assume no shared state), and a reader of one response reads one hour's
passages only. `evidence_fields` gives the `responses` columns that name a response's passages, and
`sentence_evidence_fields` a sentence's passages and excerpt offsets.

With `redact`, the text is masked (`transforms.io.lake.redact`) before it is hashed and located: masks keep
lengths, so offsets hold, and the hash of a masked passage reveals nothing of what was masked.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from schemas import AuditedResponse, SentenceVerdict
from schemas.review import PassageRow
from transforms.io.lake.redact import redact as mask

__all__ = [
    "evidence_fields",
    "locate",
    "passage_rows",
    "passage_sha256",
    "passage_texts",
    "partition_hour",
    "sentence_evidence_fields",
]


def passage_sha256(content: str) -> str:
    """The content hash that keys a passage (hex SHA-256 of its UTF-8 text)."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def partition_hour(when: datetime) -> datetime:
    """The start of the hour `when` falls in: a passage row's partition time."""
    return when.replace(minute=0, second=0, microsecond=0)


def locate(excerpt: str, passage: str) -> tuple[int, int]:
    """Where `excerpt` lies in `passage` (start, end in characters): verbatim first, then ignoring case;
    (-1, -1) when it is in neither form (a verifier's paraphrase)."""
    if not excerpt:
        return -1, -1
    start = passage.find(excerpt)
    if start < 0:
        start = passage.casefold().find(excerpt.casefold())
        if start < 0 or len(passage.casefold()) != len(passage):
            return -1, -1
    return start, start + len(excerpt)


def passage_texts(audited: AuditedResponse, *, redact: bool = False) -> dict[str, str]:
    """Each evidence `doc_id` of the response and its passage text as stored (masked with `redact`)."""
    texts: dict[str, str] = {}
    for passage in audited.parsed.response.evidence:
        texts.setdefault(passage.doc_id, mask(passage.content) if redact else passage.content)
    return texts


def evidence_fields(texts: dict[str, str]) -> dict[str, Any]:
    """The `responses` columns naming the response's passages: their ids and content hashes, in order."""
    return {"evidence_doc_ids": list(texts), "evidence_sha256": [passage_sha256(t) for t in texts.values()]}


def _side(ids: list[str], excerpts: list[str], texts: dict[str, str], *, redact: bool) -> tuple[list, list, list]:
    hashes, starts, ends = [], [], []
    for i, doc_id in enumerate(ids):
        passage = texts.get(doc_id)
        excerpt = excerpts[i] if i < len(excerpts) else ""
        excerpt = mask(excerpt) if redact else excerpt
        hashes.append(passage_sha256(passage) if passage is not None else "")
        start, end = locate(excerpt, passage) if passage is not None else (-1, -1)
        starts.append(start)
        ends.append(end)
    return hashes, starts, ends


def sentence_evidence_fields(verdict: SentenceVerdict, texts: dict[str, str], *, redact: bool) -> dict[str, Any]:
    """A `sentences` row's passage hashes and excerpt offsets, parallel to its evidence ids."""
    sup = _side(verdict.supporting_evidence_ids, verdict.supporting_evidence_excerpts, texts, redact=redact)
    con = _side(verdict.contradicting_evidence_ids, verdict.contradicting_evidence_excerpts, texts, redact=redact)
    return {
        "supporting_passage_sha256": sup[0],
        "supporting_starts": sup[1],
        "supporting_ends": sup[2],
        "contradicting_passage_sha256": con[0],
        "contradicting_starts": con[1],
        "contradicting_ends": con[2],
    }


def passage_rows(audited: AuditedResponse, texts: dict[str, str]) -> list[PassageRow]:
    """The response's `passages` rows: one per distinct passage text, in its hour."""
    hour = partition_hour(audited.parsed.response.timestamp)
    when = audited.audited_at or audited.window_end
    unique = {passage_sha256(t): t for t in texts.values()}
    return [PassageRow(passage_sha256=h, partition_hour=hour, content=t, audited_at=when) for h, t in unique.items()]
