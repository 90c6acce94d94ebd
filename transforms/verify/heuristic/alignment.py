"""Aligning one sentence with indexed evidence: which words and quantities each evidence sentence supports.

The heuristic verifier's machinery, kept apart from its verdict rules::

    ev = index_evidence([("A", "The defendant was seen at 8:15 PM."), ("B", "The incident occurred at 8:30 PM.")])
    a = analyse_sentence("The defendant was seen 15 minutes before the incident.", ev)
    a.coverage, [s.doc_id for s in a.sources]   # (1.0, ['A', 'B'])

Evidence passages are indexed by `transforms.verify.heuristic.evidence_index` (re-exported here);
each sentence of the answer is matched against them through the inverted index
of stems, and a greedy cover picks the few evidence sentences that together
support the most weight. Quantities must match exactly; a duration may be the
gap between two evidence times or dates. A quoted title ("the song 'Gone Gone
Gone'", capitalised, 2 to 10 words) must appear word for word in one evidence
sentence, and a sentence with a contradiction cue is never fully grounded.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass, field

from transforms.text.quantities import Quantity, extract_quantities, same_value
from transforms.text.synonyms import SYNONYMS
from transforms.text.tokens import Token, citation_marker_spans, tokenize
from transforms.text.wordlists import EXCLUSIVE_WORDS, SCOPE_WORDS, UNIVERSAL_WORDS
from transforms.verify.heuristic.config import DEFAULT_CONFIG, HeuristicConfig
from transforms.verify.heuristic.contradiction import (
    Contradiction,
    find_contradictions,
    misquotation,
    replaced_and_added,
)
from transforms.verify.heuristic.evidence_index import PREFIX as _PREFIX
from transforms.verify.heuristic.evidence_index import EvidenceIndex, index_evidence, quantity_key

__all__ = [
    "EvidenceIndex",
    "SentenceAnalysis",
    "Source",
    "analyse_sentence",
    "index_evidence",
]

_SCALE_WORDS = frozenset({"million", "billion", "trillion", "thousand", "hundred"})


def _changed_scope(tokens, ev, gain_of: dict) -> str:
    """A scope word of the claim the evidence never uses, where its best-aligned evidence sentence has one of the
    other end ("only" against "all" or "either", "all" against "only"); '' when there is none."""
    if not gain_of:
        return ""
    stems = ev.sentences[max(gain_of, key=lambda sid: gain_of[sid])].stems
    for t in tokens:
        word = t.text.lower()
        if word in SCOPE_WORDS and t.stem not in ev.postings:
            other = UNIVERSAL_WORDS if word in EXCLUSIVE_WORDS else EXCLUSIVE_WORDS if word in UNIVERSAL_WORDS else ()
            if not stems.isdisjoint(other):
                return t.text
    return ""


@dataclass
class Source:
    """One evidence sentence the support was drawn from, and which parts of the claim it gave."""

    doc_id: str
    excerpt: str
    parts: list = field(default_factory=list)


@dataclass
class SentenceAnalysis:
    """What the alignment found for one sentence: coverage, sources, spans, contradictions, a probability."""

    coverage: float = 0.0
    best_single: float = 0.0
    sources: list = field(default_factory=list)
    unsupported_spans: list = field(default_factory=list)
    contradictions: list = field(default_factory=list)
    doubts: list = field(default_factory=list)
    """Cues that fired in `doubt` mode: they lowered the confidence instead of asserting contradicted."""
    derived: list = field(default_factory=list)
    grounded_probability: float = 0.0
    notes: list = field(default_factory=list)
    features: dict = field(default_factory=dict)
    ranked: list = field(default_factory=list)
    """Evidence sentence ids (`EvidenceIndex.sentences`) by the claim weight each supports alone, best first (at
    most 12): the candidates a model stage scores."""

    def provenance_notes(self) -> str:
        """Which part came from which passage, and how derived values were computed."""
        parts = [f"{s.doc_id}: {', '.join(s.parts)}" for s in self.sources if s.parts]
        return "; ".join(parts + self.derived + self.notes)


def _excerpt(s) -> str:
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
    gap_ends: tuple = ()  # the two evidence times or dates a derived duration lies between


def _items(
    sentence: str, ev: EvidenceIndex, config: HeuristicConfig = DEFAULT_CONFIG
) -> tuple[list[Token], list[_Item]]:
    markers = citation_marker_spans(sentence)
    tokens = list(tokenize(sentence))
    quantities = extract_quantities(sentence)  # none inside the markers
    if markers:
        tokens = [t for t in tokens if not any(s <= t.start < e for s, e in markers)]
    items, in_quantity = [], {}
    starts = [t.start for t in tokens]
    for q in quantities:
        ids = list(range(bisect_left(starts, q.start), bisect_left(starts, q.end)))
        for i in ids:
            in_quantity[i] = True
        support = ev.exact.get(quantity_key(q), ())
        if not support and (q.kind in ("date", "year") or q.kind == "number" and q.value):
            support = {sid for eq, sid in ev.quantities if same_value(q, eq)}
        item = _Item(q.text, config.quantity_weight, support, ids, quantity=q)
        if not support and q.kind == "duration":
            pairs = ev.gaps().get(float(q.value))
            if pairs:
                (qa, sa), (qb, sb) = pairs[0]
                item.pair = (sa, sb)
                item.gap_ends = (qa.text, qb.text)
                item.support = {sa, sb}
        items.append(item)
    word_weight = config.word_weigher()
    for i, t in enumerate(tokens):
        w = word_weight(t)
        if i in in_quantity or w == 0.0:
            continue
        support, w_support = ev.postings.get(t.stem, ()), 1.0
        if not support and t.stem in SYNONYMS:  # a paraphrase: "purchased" for "bought"
            support, w_support = ev.synonymous(t.stem), config.synonym_strength
        if not support and 2 <= len(t.text) <= 5 and t.text.isupper() and t.text.isalpha():  # "USA", "NHS"
            support, w_support = ev.abbreviated(t.text), config.synonym_strength
        if not support and len(t.stem) > _PREFIX:
            support, w_support = ev.prefixed(t.stem), config.prefix_strength
        if not support and len(t.stem) >= 6 and t.stem not in _SCALE_WORDS:  # spelling variants, not "billion"
            support, w_support = ev.spelled_alike(t.stem), config.spelling_strength
        items.append(_Item(t.text, w, support, [i], support_strength=w_support))
    # A number or date found in an evidence sentence that shares no word with the claim is a coincidence ("2009" in
    # a bibliography): quantities count as supported only where some word of the claim is supported too.
    counted = [it for it in items if it.quantity is not None and it.pair is None and it.support]
    if counted and any(it.quantity is None and it.support for it in items):
        # An evidence sentence with one of the claim's own words supports a word (the common case, tested on its
        # stems); only for the others is the support of every word (synonyms, prefixes, ...) collected.
        exact = frozenset(tokens[it.token_ids[0]].stem for it in items if it.quantity is None)
        worded = None
        for it in counted:
            keep = []
            for sid in it.support:
                if ev.sentences[sid].stems.isdisjoint(exact):
                    if worded is None:
                        worded = set().union(*(w.support for w in items if w.quantity is None))
                    if sid not in worded:
                        continue
                keep.append(sid)
            it.support = keep
    return tokens, items


def _greedy_cover(
    items: list[_Item], total: float, config: HeuristicConfig = DEFAULT_CONFIG
) -> tuple[list[int], set[int], dict[int, float]]:
    """Pick up to `config.max_sources` evidence sentences that together support the most claim weight."""
    gain: dict[int, float] = {}
    members: dict[int, list[int]] = {}
    for k, it in enumerate(items):
        for sid in it.support:
            gain[sid] = gain.get(sid, 0.0) + it.weight
            members.setdefault(sid, []).append(k)
    candidates = sorted(gain, key=gain.get, reverse=True)[: config.cover_candidates]
    picked, covered = [], set()
    for _ in range(config.max_sources):
        best, best_gain = None, 0.0
        for sid in candidates:
            if sid in picked:
                continue
            g = sum(items[k].weight for k in members[sid] if k not in covered)
            if g > best_gain:
                best, best_gain = sid, g
        if best is None or best_gain < max(config.min_source_gain, config.min_source_share * total):
            break
        picked.append(best)
        covered.update(members[best])
    return picked, covered, gain


def _token_spans(
    sentence: str, tokens: list[Token], unsupported: set[int], adjacent: list[bool], bounds: dict[int, int]
) -> list[str]:
    """Contiguous runs of unsupported tokens (function words joined in), as exact substrings of the sentence
    (`adjacent[i]`: whether tokens i and i + 1 stand side by side in the evidence)."""
    status = [None] * len(tokens)
    for i in range(len(tokens)):
        if i in unsupported:
            status[i] = False
    content = {i for i, t in enumerate(tokens) if not t.stop}
    for i in range(len(tokens)):
        if i in unsupported or i in content:
            status[i] = i not in unsupported
    for i in range(len(tokens)):
        if status[i] is not None:
            continue
        prev_ok = i > 0 and adjacent[i - 1]
        next_ok = i + 1 < len(tokens) and adjacent[i]
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
        first, last = run[0], run[-1]
        start = min(tokens[first].start, bounds.get(-first - 1, len(sentence)))
        out.append(sentence[start : max(tokens[last].end, bounds.get(last, 0))])
    return out


def _probability(f: dict, c: HeuristicConfig) -> float:
    """Probability that the claim is fully grounded, from the alignment features (weights: `HeuristicConfig`,
    re-derived by `scripts/fit_heuristic.py`)."""
    z = (
        c.w_coverage * f["coverage"]
        + c.w_local * f["local"]
        + c.w_bigram * f["bigram"]
        + c.w_cbigram * f["cbigram"]
        - c.w_novel * f["novel"]
        - c.w_bad_quantities * f["bad_quantities"]
        - c.w_bad_names * f["bad_names"]
        - c.w_bad_scope * f["bad_scope"]
    )
    lexical = 1.0 / (1.0 + math.exp(-c.slope * (z - c.midpoint)))
    return lexical * (1.0 - c.contradiction_damping * f["contra"])


def _local_coverage(items, gain_of, ev, total, neighbours: int) -> float:
    """Claim weight supported by the best evidence sentence and its neighbours in the same passage."""
    best = 0.0
    for sid in sorted(gain_of, key=gain_of.get, reverse=True)[:neighbours]:
        doc = ev.sentences[sid].doc_id
        near = {x for x in (sid - 1, sid, sid + 1) if 0 <= x < len(ev.sentences) and ev.sentences[x].doc_id == doc}
        best = max(best, sum(it.weight for it in items if not near.isdisjoint(it.support)) / total)
    return best


def _content_bigrams(tokens, ev, reach: int) -> float:
    """Share of adjacent content-word pairs of the claim (function words skipped) found adjacent in the evidence."""
    content = [t.stem for t in tokens if not t.stop]
    pairs = list(zip(content, content[1:], strict=False))
    if not pairs:
        return 1.0
    found = 0
    for a, b in pairs:
        pa, pb = ev.postings.get(a), ev.postings.get(b)
        if not pa or not pb:
            continue
        for sid in set(pa).intersection(pb):
            pos = ev.sentences[sid].positions
            if any(abs(i - j) <= reach for i in pos[a] for j in pos[b]):
                found += 1
                break
    return found / len(pairs)


def _longest_unsupported(spans: list[str], config: HeuristicConfig) -> float:
    return max((sum(config.word_weight(t) for t in tokenize(span)) for span in spans), default=0.0)


# A quotation in double or curly quotes, or in single quotes that are not apostrophes ("the song 'Hello'").
_QUOTED = re.compile(
    r"\"([^\"]{2,120})\"|\u201c([^\u201d]{2,120})\u201d|\u2018([^\u2019]{2,120})\u2019|(?<!\w)'([^']{2,120})'(?!\w)"
)


def _unmatched_titles(sentence: str, ev: EvidenceIndex, title_words: tuple[int, int]) -> list[str]:
    """Quoted titles of the sentence (capitalised, a few words) whose words are not in the evidence in that order."""
    if "'" not in sentence and '"' not in sentence and "\u201c" not in sentence and "\u2018" not in sentence:
        return []
    out = []
    for m in _QUOTED.finditer(sentence):
        quote = next(g for g in m.groups() if g)
        stems = [t.stem for t in tokenize(quote.replace("&", " and "))]  # "Ray & Liz" is "Ray and Liz"
        if quote[:1].isupper() and title_words[0] <= len(stems) <= title_words[1] and not ev.contains_run(stems):
            out.append(quote.strip(" .,;:"))
    return out


def _is_name(tokens, item) -> bool:
    t = tokens[item.token_ids[0]]
    return t.capital and t.start > 0


def analyse_sentence(sentence: str, ev: EvidenceIndex, config: HeuristicConfig = DEFAULT_CONFIG) -> SentenceAnalysis:
    """Align one sentence with the evidence: coverage, sources, unsupported spans, contradictions."""
    c = config
    tokens, items = _items(sentence, ev, c)
    total = sum(it.weight for it in items)
    out = SentenceAnalysis()
    if not items or total == 0:
        out.notes.append("no factual content words to check")
        out.grounded_probability = 0.5
        return out
    picked, covered, gain_of = _greedy_cover(items, total, c)
    out.ranked = sorted(gain_of, key=lambda sid: gain_of[sid], reverse=True)[: c.cover_candidates]
    best_single = max(gain_of.values(), default=0.0) / total
    # A derived value needs both of its evidence sentences among the sources.
    for k, it in enumerate(items):
        if it.pair and k in covered:
            for sid in it.pair:
                if sid not in picked:
                    picked.append(sid)
            a, b = (ev.sentences[s] for s in it.pair)
            first, second = it.gap_ends
            out.derived.append(
                f"{it.label!r} computed as the gap between {first} ({a.doc_id}) and {second} ({b.doc_id})"
            )
    for sid in picked:
        s = ev.sentences[sid]
        parts = [it.label for k, it in enumerate(items) if k in covered and sid in it.support and not it.pair]
        out.sources.append(Source(s.doc_id, _excerpt(s), parts))
    covered_weight = sum(it.weight * it.support_strength for k, it in enumerate(items) if k in covered)
    out.coverage = covered_weight / total
    out.best_single = best_single
    unsupported_tokens = {i for k, it in enumerate(items) if k not in covered for i in it.token_ids}
    # A quantity may reach past its words ("$5", "0.03%"): spans start and end where the quantity does.
    # Keys: token index -> quantity end; -(index + 1) -> quantity start.
    bounds = {}
    for it in items:
        if it.quantity is not None and it.token_ids:
            bounds[it.token_ids[-1]] = it.quantity.end
            bounds[-it.token_ids[0] - 1] = it.quantity.start
    # Whether each word and the next stand side by side in the evidence (spans and the bigram feature both ask).
    adjacent = [ev.adjacent(x.stem, y.stem) for x, y in zip(tokens, tokens[1:], strict=False)]
    out.unsupported_spans = _token_spans(sentence, tokens, unsupported_tokens, adjacent, bounds)
    found = find_contradictions(tokens, items, ev, gain_of, total, c)
    out.contradictions = [x for x in found if x.asserts]
    out.doubts = [x for x in found if not x.asserts]
    if not out.contradictions and c.cues.misquotation != "off":
        misquoted = misquotation(sentence, ev, c)
        if misquoted:
            misquoted.asserts = c.asserts("misquotation")
            (out.contradictions if misquoted.asserts else out.doubts).append(misquoted)
    # A doubting cue still counts against grounding, as evidence that the sentence says more than its evidence, unless
    # the config says otherwise; only the verdict "contradicted" needs an asserting one.
    against = out.contradictions + out.doubts if c.doubt_penalizes else out.contradictions
    bad_quantities = sum(1 for k, it in enumerate(items) if it.quantity is not None and k not in covered)
    out.features = {
        "coverage": out.coverage,
        "local": _local_coverage(items, gain_of, ev, total, c.local_neighbours),
        "bigram": sum(adjacent) / max(1, len(adjacent)),
        "cbigram": _content_bigrams(tokens, ev, c.content_bigram_reach),
        "novel": sum(it.weight for it in items if not it.support) / total,
        "bad_quantities": bad_quantities,
        "bad_names": sum(
            it.weight for k, it in enumerate(items) if k not in covered and it.quantity is None and _is_name(tokens, it)
        ),
        "contra": max((x.strength for x in against), default=0.0),
        "bad_scope": sum(1 for t in tokens if t.text.lower() in SCOPE_WORDS and t.stem not in ev.postings),
    }
    out.grounded_probability = _probability(out.features, c)
    misquoted = _unmatched_titles(sentence, ev, c.title_words)
    if misquoted:
        # A quoted title ("the song 'Gone Gone Gone'") names one exact thing: evidence without those words in that
        # order does not support it, however many of them it has elsewhere.
        out.unsupported_spans = sorted(set(out.unsupported_spans) | set(misquoted), key=sentence.find)
        if out.grounded_probability >= c.support_threshold:
            out.grounded_probability = c.title_cap
            out.notes.append(f"quoted title {misquoted[0]!r} not found word for word in the evidence")
    if out.grounded_probability >= c.support_threshold and against:
        # A cue ties a claim word to a conflicting word or value in the same slot of the evidence: however much of the
        # rest is supported, the sentence says something the evidence denies.
        out.grounded_probability = c.contradicted_cap
    if (
        out.grounded_probability >= c.support_threshold
        and _longest_unsupported(out.unsupported_spans, c) >= c.clause_weight
    ):
        # A whole unsupported clause ("unless the landlord waives it") is a claim of its own: not fully grounded.
        out.grounded_probability = c.clause_cap
        out.notes.append("an unsupported clause keeps the sentence from being fully grounded")
    if out.grounded_probability >= c.support_threshold and (changed := _changed_scope(tokens, ev, gain_of)):
        # Like an unsupported clause, a scope the evidence does not state is a claim of its own.
        out.grounded_probability = c.clause_cap
        out.notes.append(f"{changed!r} changes the scope its evidence sentence states")
    if (
        out.grounded_probability < c.support_threshold
        and not out.contradictions
        and out.features["local"] >= c.slot_alignment
        and c.cues.replaced_words != "off"
    ):
        # Not grounded, and about the same thing as an evidence sentence: if the claim mostly puts its own words in
        # place of that sentence's words (rather than adding words), the evidence says otherwise.
        best = ev.sentences[max(gain_of, key=gain_of.get)]
        replaced, added, example = replaced_and_added(tokens, best, c)
        if replaced >= c.replaced_min_weight and replaced >= c.replaced_over_added * added:
            reason = f"{example!r} where the aligned evidence sentence says something else"
            asserts = c.asserts("replaced_words")
            cue = Contradiction(best.doc_id, _excerpt(best), reason, c.replaced_strength, "replaced_words", asserts)
            (out.contradictions if c.asserts("replaced_words") else out.doubts).append(cue)
    if out.doubts and not out.contradictions:
        # A cue too often wrong on labelled data to assert a conflict still says the sentence is unsure: pull its
        # probability towards the threshold so its confidence drops and a cascade escalates it.
        p = out.grounded_probability
        out.grounded_probability = c.support_threshold + (p - c.support_threshold) * c.doubt_shrink
        out.notes.append(f"doubt ({out.doubts[0].cue}): {out.doubts[0].reason}")
    return out
