"""Aligning one sentence with indexed evidence: which words and quantities each evidence sentence supports.

The heuristic verifier's machinery, kept apart from its verdict rules::

    ev = index_evidence([("A", "The defendant was seen at 8:15 PM."), ("B", "The incident occurred at 8:30 PM.")])
    a = analyse_sentence("The defendant was seen 15 minutes before the incident.", ev)
    a.coverage, [s.doc_id for s in a.sources]   # (1.0, ['A', 'B'])

An evidence passage is cut into sentences (long ones into windows of words);
each sentence of the answer is matched against them through an inverted index
of stems, and a greedy cover picks the few evidence sentences that together
support the most weight. Quantities must match exactly; a duration may be the
gap between two evidence times or dates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from transforms.quantities import Quantity, extract_quantities, same_value, time_gaps
from transforms.sentences import sentence_spans
from transforms.textmatch import ANTONYMS, Token, citation_marker_spans, is_negation, tokenize, word_weight

__all__ = [
    "Contradiction",
    "EvidenceIndex",
    "SentenceAnalysis",
    "Source",
    "analyse_sentence",
    "index_evidence",
]

_WINDOW = 40  # words per piece when an evidence "sentence" is a long run without full stops
_QUANTITY_WEIGHT = 1.5
_PREFIX = 5  # a shared 5-letter prefix of two long words is weak support ("acquisition" / "acquired")
_MAX_SOURCES = 3


@dataclass
class _EvSentence:
    doc_id: str
    text: str  # the whole passage
    start: int
    end: int
    stems: frozenset
    negations: int
    quantities: list


@dataclass
class EvidenceIndex:
    """Evidence passages cut into sentences, with an inverted index of stems and all quantities."""

    sentences: list
    postings: dict
    prefixes: dict
    quantities: list  # (Quantity, sentence id)
    bigrams: set
    _gaps: dict | None = None

    def gaps(self) -> dict:
        """Durations between two evidence times or dates (computed on first use), to evidence sentence pairs."""
        if self._gaps is None:
            timed = [(q, sid) for q, sid in self.quantities if q.kind in ("time", "date", "year")][:60]
            self._gaps = time_gaps(timed)
        return self._gaps


def _pieces(tokens: Sequence, spans: list[tuple[int, int]]):
    """Group passage tokens by sentence, cutting sentences longer than _WINDOW words into windows."""
    i = 0
    for start, end in spans:
        group = []
        while i < len(tokens) and tokens[i].start < end:
            if tokens[i].start >= start:
                group.append(tokens[i])
            i += 1
        for k in range(0, len(group), _WINDOW):
            chunk = group[k : k + _WINDOW]
            if chunk:
                yield (chunk[0].start if k else start), (chunk[-1].end if k + _WINDOW < len(group) else end), chunk


def index_evidence(passages: Sequence[tuple[str, str]]) -> EvidenceIndex:
    """Index (doc_id, content) passages for `analyse_sentence`."""
    sentences, postings, prefixes, quantities, bigrams = [], {}, {}, [], set()
    for doc_id, text in passages:
        tokens = tokenize(text)
        for a, b in zip(tokens, tokens[1:], strict=False):
            bigrams.add((a.stem, b.stem))
        qs = extract_quantities(text)
        for start, end, chunk in _pieces(tokens, sentence_spans(text)):
            sid = len(sentences)
            stems = frozenset(t.stem for t in chunk)
            sq = [q for q in qs if start <= q.start < end]
            sentences.append(_EvSentence(doc_id, text, start, end, stems, sum(map(is_negation, chunk)), sq))
            for s in stems:
                postings.setdefault(s, []).append(sid)
                if len(s) > _PREFIX + 1:
                    prefixes.setdefault(s[:_PREFIX], set()).add(sid)
            quantities.extend((q, sid) for q in sq)
    return EvidenceIndex(sentences, postings, prefixes, quantities, bigrams)


@dataclass
class Source:
    """One evidence sentence the support was drawn from, and which parts of the claim it gave."""

    doc_id: str
    excerpt: str
    parts: list = field(default_factory=list)


@dataclass
class Contradiction:
    """Evidence that states a different value, the opposite polarity or an antonym of the claim."""

    doc_id: str
    excerpt: str
    reason: str
    strength: float


@dataclass
class SentenceAnalysis:
    """What the alignment found for one sentence: coverage, sources, spans, contradictions, a probability."""

    coverage: float = 0.0
    best_single: float = 0.0
    sources: list = field(default_factory=list)
    unsupported_spans: list = field(default_factory=list)
    contradictions: list = field(default_factory=list)
    derived: list = field(default_factory=list)
    grounded_probability: float = 0.0
    notes: list = field(default_factory=list)

    def provenance_notes(self) -> str:
        """Which part came from which passage, and how derived values were computed."""
        parts = [f"{s.doc_id}: {', '.join(s.parts)}" for s in self.sources if s.parts]
        return "; ".join(parts + self.derived + self.notes)


def _excerpt(s: _EvSentence) -> str:
    return s.text[s.start : s.end]


@dataclass
class _Item:
    label: str
    weight: float
    support: set
    token_ids: list
    quantity: Quantity | None = None
    pair: tuple | None = None  # two evidence sentences that together give a derived value
    support_strength: float = 1.0  # below 1 when only a shared prefix supports the word


def _items(sentence: str, ev: EvidenceIndex) -> tuple[list[Token], list[_Item], list[Quantity]]:
    markers = citation_marker_spans(sentence)
    tokens = [t for t in tokenize(sentence) if not any(s <= t.start < e for s, e in markers)]
    quantities = [q for q in extract_quantities(sentence) if not any(s <= q.start < e for s, e in markers)]
    items, in_quantity = [], {}
    for q in quantities:
        ids = [i for i, t in enumerate(tokens) if q.start <= t.start < q.end]
        for i in ids:
            in_quantity[i] = True
        support = {sid for eq, sid in ev.quantities if same_value(q, eq)}
        item = _Item(q.text, _QUANTITY_WEIGHT, support, ids, quantity=q)
        if not support and q.kind == "duration":
            pairs = ev.gaps().get(float(q.value))
            if pairs:
                item.pair = pairs[0]
                item.support = set(pairs[0])
        items.append(item)
    for i, t in enumerate(tokens):
        w = word_weight(t)
        if i in in_quantity or w == 0.0:
            continue
        support = set(ev.postings.get(t.stem, ()))
        if not support and len(t.stem) > _PREFIX + 1:
            support = set(ev.prefixes.get(t.stem[:_PREFIX], ()))
            w_support = 0.7
        else:
            w_support = 1.0
        items.append(_Item(t.text, w, support, [i], support_strength=w_support))
    return tokens, items, quantities


def _greedy_cover(items: list[_Item], total: float) -> tuple[list[int], set[int], float]:
    """Pick up to _MAX_SOURCES evidence sentences that together support the most claim weight."""
    gain: dict[int, float] = {}
    for it in items:
        for sid in it.support:
            gain[sid] = gain.get(sid, 0.0) + it.weight
    best_single = max(gain.values(), default=0.0) / total if total else 0.0
    candidates = sorted(gain, key=gain.get, reverse=True)[:12]
    picked, covered = [], set()
    for _ in range(_MAX_SOURCES):
        best, best_gain = None, 0.0
        for sid in candidates:
            if sid in picked:
                continue
            g = sum(it.weight for k, it in enumerate(items) if k not in covered and sid in it.support)
            if g > best_gain:
                best, best_gain = sid, g
        if best is None or best_gain < max(0.34, 0.08 * total):
            break
        picked.append(best)
        covered |= {k for k, it in enumerate(items) if best in it.support}
    return picked, covered, best_single


def _token_spans(sentence: str, tokens: list[Token], unsupported: set[int], ev: EvidenceIndex) -> list[str]:
    """Contiguous runs of unsupported tokens (function words joined in), as exact substrings of the sentence."""
    status = [None] * len(tokens)
    for i in range(len(tokens)):
        if i in unsupported:
            status[i] = False
    content = {i for i, t in enumerate(tokens) if not t.stop}
    for i in range(len(tokens)):
        if i in unsupported or i in content:
            status[i] = i not in unsupported
    for i, t in enumerate(tokens):
        if status[i] is not None:
            continue
        prev_ok = i > 0 and (tokens[i - 1].stem, t.stem) in ev.bigrams
        next_ok = i + 1 < len(tokens) and (t.stem, tokens[i + 1].stem) in ev.bigrams
        status[i] = prev_ok or next_ok
    spans, run = [], []
    for i, ok in enumerate(status):
        if ok is False:
            run.append(i)
            continue
        if run:
            spans.append(run)
        run = []
    if run:
        spans.append(run)
    out = []
    for run in spans:
        if not any(i in unsupported for i in run):
            continue
        while run and run[-1] not in unsupported:  # trailing function words belong to what follows
            run.pop()
        out.append(sentence[tokens[run[0]].start : tokens[run[-1]].end])
    return out


def _compatible(a: Quantity, b: Quantity) -> bool:
    if a.kind == "date" and b.kind == "date":
        return any(x is not None and y is not None and x != y for x, y in zip(a.value, b.value, strict=True))
    if {a.kind, b.kind} <= {"year", "date"} and a.kind != b.kind:
        return False
    return a.kind == b.kind and a.unit == b.unit


def _contradictions(tokens, items, ev, gain_of, total) -> list[Contradiction]:
    found = []
    for it in items:
        q = it.quantity
        if q is None or it.support:
            continue
        near = {
            tokens[i].stem
            for i in range(len(tokens))
            if not tokens[i].stop and i not in it.token_ids and abs(i - (it.token_ids[0] if it.token_ids else 0)) <= 5
        }
        for eq, sid in ev.quantities:
            if not _compatible(q, eq):
                continue
            s = ev.sentences[sid]
            align = gain_of.get(sid, 0.0) / total if total else 0.0
            local = near & s.stems
            if align >= 0.5 or (local and (q.unit or align >= 0.25)):
                excerpt = _excerpt(s)
                found.append(
                    Contradiction(
                        s.doc_id, excerpt, f"{q.text!r} but the evidence says {eq.text!r}", min(1.0, 0.5 + align)
                    )
                )
                break
    if not gain_of:
        return found
    best = max(gain_of, key=gain_of.get)
    align = gain_of[best] / total if total else 0.0
    s = ev.sentences[best]
    claim_neg = sum(map(is_negation, tokens))
    if align >= 0.6 and (claim_neg % 2) != (s.negations % 2):
        found.append(Contradiction(s.doc_id, _excerpt(s), "negation differs from the evidence", 0.8 * align))
    if align >= 0.5:
        claim_stems = {t.stem for t in tokens}
        for t in tokens:
            opposite = ANTONYMS.get(t.stem)
            if opposite and t.stem not in s.stems and opposite & s.stems and not opposite & claim_stems:
                found.append(
                    Contradiction(
                        s.doc_id, _excerpt(s), f"{t.text!r} where the evidence says the opposite", 0.7 * align
                    )
                )
                break
    return found


def _probability(coverage: float, best_single: float, n_bad_quantities: int) -> float:
    z = 9.0 * (coverage - 0.75) + 3.0 * (best_single - 0.5) - 2.0 * n_bad_quantities
    return 1.0 / (1.0 + math.exp(-z))


def analyse_sentence(sentence: str, ev: EvidenceIndex) -> SentenceAnalysis:
    """Align one sentence with the evidence: coverage, sources, unsupported spans, contradictions."""
    tokens, items, _ = _items(sentence, ev)
    total = sum(it.weight for it in items)
    out = SentenceAnalysis()
    if not items or total == 0:
        out.notes.append("no factual content words to check")
        out.grounded_probability = 0.5
        return out
    picked, covered, best_single = _greedy_cover(items, total)
    # A derived value needs both of its evidence sentences among the sources.
    for k, it in enumerate(items):
        if it.pair and k in covered:
            for sid in it.pair:
                if sid not in picked:
                    picked.append(sid)
            a, b = (ev.sentences[s] for s in it.pair)
            out.derived.append(
                f"{it.label!r} computed as the gap between a time or date in {a.doc_id} and one in {b.doc_id}"
            )
    gain_of: dict[int, float] = {}
    for it in items:
        for sid in it.support:
            gain_of[sid] = gain_of.get(sid, 0.0) + it.weight
    for sid in picked:
        s = ev.sentences[sid]
        parts = [it.label for k, it in enumerate(items) if k in covered and sid in it.support and not it.pair]
        out.sources.append(Source(s.doc_id, _excerpt(s), parts))
    covered_weight = sum(it.weight * it.support_strength for k, it in enumerate(items) if k in covered)
    out.coverage = covered_weight / total
    out.best_single = best_single
    unsupported_tokens = {i for k, it in enumerate(items) if k not in covered for i in it.token_ids}
    out.unsupported_spans = _token_spans(sentence, tokens, unsupported_tokens, ev)
    out.contradictions = _contradictions(tokens, items, ev, gain_of, total)
    bad_quantities = sum(1 for k, it in enumerate(items) if it.quantity is not None and k not in covered)
    out.grounded_probability = _probability(out.coverage, best_single, bad_quantities)
    return out
