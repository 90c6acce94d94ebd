"""Evidence use: which retrieved passages the answer's supported sentences drew on.

A generator that ignores good evidence fails differently from a retriever that returns the wrong evidence.
These functions take what the audit already knows, per answer sentence, as plain values::

    sentences = [SentenceSupport(True, ("p1",)), SentenceSupport(True, ("p1", "p3")), SentenceSupport(False)]
    passages_used_share(sentences, ["p1", "p2", "p3", "p4"])          # 0.5: p1 and p3 of four
    top_passage_support_share(sentences, {"p1": 1, "p2": 2, "p3": 3})  # 0.667: two of three sentences

Any (supported, passage ids) pair works in place of `SentenceSupport`. Both return None when there is nothing
to measure (no retrieved passage; no sentence; no ranks), so that a window mean skips the response instead of
counting it as zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from schemas.reports import AttributionVerdict, SentenceVerdict

__all__ = [
    "SUPPORTED_VERDICTS",
    "SentenceSupport",
    "passages_used_share",
    "sentence_supports",
    "top_passage_support_share",
    "top_ranked_ids",
]

SUPPORTED_VERDICTS = frozenset({AttributionVerdict.fully_grounded, AttributionVerdict.partially_grounded})
"""Verdicts whose supporting passages count as used: a partly supported sentence still drew on its evidence."""


class SentenceSupport(NamedTuple):
    """One answer sentence: whether it is supported, and by which passage ids."""

    supported: bool
    passage_ids: Sequence[str] = ()


def sentence_supports(verdicts: Iterable[SentenceVerdict]) -> list[SentenceSupport]:
    """The audit's sentence verdicts as evidence-use inputs: claims only (a greeting or lead-in is not part of
    the answer's content), supported when fully or partially grounded, by their supporting evidence ids."""
    return [
        SentenceSupport(v.attribution_verdict in SUPPORTED_VERDICTS, tuple(v.supporting_evidence_ids))
        for v in verdicts
        if v.is_claim
    ]


def passages_used_share(sentences: Iterable[tuple[bool, Sequence[str]]], retrieved_ids: Sequence[str]) -> float | None:
    """Share of the retrieved passages that support at least one supported sentence (None if none retrieved).

    Ids a sentence names that were not retrieved are ignored: they cannot raise the share above 1.
    """
    retrieved = set(retrieved_ids)
    if not retrieved:
        return None
    used = {pid for supported, ids in sentences if supported for pid in ids}
    return len(used & retrieved) / len(retrieved)


def top_ranked_ids(ranks: Mapping[str, int | float]) -> frozenset[str]:
    """The ids of the best-ranked passage (rank 1 is best; all of them when several share the best rank)."""
    if not ranks:
        return frozenset()
    best = min(ranks.values())
    return frozenset(pid for pid, r in ranks.items() if r == best)


def top_passage_support_share(
    sentences: Iterable[tuple[bool, Sequence[str]]], ranks: Mapping[str, int | float] | None
) -> float | None:
    """Share of the answer's sentences supported by the top-ranked passage (None without ranks or sentences)."""
    if not ranks:
        return None
    top = top_ranked_ids(ranks)
    rows = list(sentences)
    if not rows:
        return None
    hits = sum(1 for supported, ids in rows if supported and top.intersection(ids))
    return hits / len(rows)
