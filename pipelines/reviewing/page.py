"""The response page's view of one response: each sentence with its marks and, beside it, its evidence
highlighted inside the whole passage.

    view = response_view(load_response(con, "r-1", when))
    view["sentences"][0]["segments"]   # [("The dose was ", False), ("80 mg", True), ...]: True = unsupported
    view["sentences"][0]["evidence"]   # [{"role": "supports", "doc_id": ..., "segments": [(pre, False), ...]}]

Offsets come from the lake (`sentences.*_starts` / `*_ends`, into `passages.content`); an excerpt the lake
could not place (-1) is shown on its own under the passage. Text stays text: the templates escape it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VERDICT_KEYS", "marked_segments", "response_view"]

VERDICT_KEYS = {
    "fully_grounded": "1",
    "partially_grounded": "2",
    "ungrounded": "3",
    "contradicted": "4",
}
"""Each verdict and the key that sets it on the response page."""


def marked_segments(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut into (piece, marked) pairs, the pieces inside `spans` (start, end) marked; overlaps merge."""
    cuts = sorted((max(0, s), min(len(text), e)) for s, e in spans if 0 <= s < e)
    segments: list[tuple[str, bool]] = []
    at = 0
    for start, end in cuts:
        if end <= at:
            continue
        start = max(start, at)
        if start > at:
            segments.append((text[at:start], False))
        segments.append((text[start:end], True))
        at = end
    if at < len(text) or not segments:
        segments.append((text[at:], False))
    return segments


def _spans_in(text: str, phrases: list[str]) -> list[tuple[int, int]]:
    spans = []
    for phrase in phrases or []:
        start = text.find(phrase) if phrase else -1
        if start >= 0:
            spans.append((start, start + len(phrase)))
    return spans


def _evidence(sentence: dict[str, Any], passages: dict[str, str], role: str) -> list[dict[str, Any]]:
    """One item per passage on one side of a sentence, every excerpt of it highlighted (a verifier may draw
    two excerpts from one passage: the reviewer sees the passage once, with both marked)."""
    side = "supporting" if role == "supports" else "contradicting"
    ids = sentence.get(f"{side}_evidence_ids") or []
    hashes = sentence.get(f"{side}_passage_sha256") or []
    starts, ends = sentence.get(f"{side}_starts") or [], sentence.get(f"{side}_ends") or []
    excerpts = sentence.get(f"{side}_evidence_excerpts") or []
    by_doc: dict[str, dict[str, Any]] = {}
    for i, doc_id in enumerate(ids):
        item = by_doc.setdefault(doc_id, {"text": None, "spans": [], "unplaced": [], "all": []})
        item["all"].append(excerpts[i] if i < len(excerpts) else "")
        if i < len(hashes) and hashes[i] in passages:
            item["text"] = passages[hashes[i]]
        span = (starts[i], ends[i]) if i < len(starts) and i < len(ends) else (-1, -1)
        if span[0] >= 0:
            item["spans"].append(span)
        elif i < len(excerpts) and excerpts[i]:
            item["unplaced"].append(excerpts[i])
    items: list[dict[str, Any]] = []
    for doc_id, item in by_doc.items():
        text: str | None = item["text"]
        if text is None:  # a passage the lake does not hold (rows written before passages were kept)
            items.append({"role": role, "doc_id": doc_id, "segments": [], "excerpt": " … ".join(item["all"])})
            continue
        segments = marked_segments(text, item["spans"]) if item["spans"] else [(text, False)]
        items.append({"role": role, "doc_id": doc_id, "segments": segments, "excerpt": " … ".join(item["unplaced"])})
    return items


def _evidence_once(sentence: dict[str, Any], passages: dict[str, str]) -> list[dict[str, Any]]:
    """Contradicting evidence first, then the supporting passages not already shown as contradicting it (a
    verifier may list one passage on both sides: the reviewer should see it once, as the contradiction)."""
    against = _evidence(sentence, passages, "contradicts")
    shown = {item["doc_id"] for item in against}
    return against + [item for item in _evidence(sentence, passages, "supports") if item["doc_id"] not in shown]


def _sentence(s: dict[str, Any], passages: dict[str, str], label: dict | None) -> dict[str, Any]:
    text = s["sentence_text"]
    return {
        **s,
        "segments": marked_segments(text, _spans_in(text, s.get("unsupported_spans") or [])),
        "evidence": _evidence_once(s, passages),
        "label": label,
        "is_claim": s.get("claim_kind", "claim") == "claim",
    }


def response_view(loaded: dict[str, Any]) -> dict[str, Any]:
    """The template's context for one loaded response (`queries.load_response`)."""
    passages, labels = loaded["passages"], loaded["labels"]
    return {
        **loaded,
        "sentences": [_sentence(s, passages, labels.get(s["sentence_index"])) for s in loaded["sentences"]],
        "verdict_keys": VERDICT_KEYS,
    }
