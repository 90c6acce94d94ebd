"""Evidence passages indexed for alignment: sentences (or windows of words), stems, an inverted index, quantities.

Built once per answer and shared by all its sentences::

    ev = index_evidence([("e1", "Lab results showed potassium at 4.2 mmol/L.")])
    ev.postings["potassium"], ev.sentences[0].quantities   # [0], [Quantity('number', 4.2, 'mmol/l', ...)]

What only some sentences need (prefix index, word positions, adjacency, time
gaps, negation counts) is built on first use, to keep the verifier fast.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from transforms.text.quantities import Quantity, extract_quantities, time_gaps
from transforms.text.sentences import sentence_spans
from transforms.text.synonyms import synonym_stems
from transforms.text.tokens import STOP_STEMS, WORD_PATTERN, count_negations, stem

__all__ = ["PREFIX", "EvidenceIndex", "index_evidence", "one_edit", "quantity_key"]

WINDOW = 40  # words per piece when an evidence "sentence" is a long run without full stops
PREFIX = 5  # a shared 5-letter prefix of two words of 6+ letters is weak support ("acquisition" / "acquired")


@dataclass(slots=True)
class _EvSentence:
    doc_id: str
    text: str  # the whole passage
    start: int
    end: int
    stem_list: list
    stems: frozenset
    quantities: list
    _negations: int | None = None
    _positions: dict | None = None

    @property
    def positions(self) -> dict:
        """Where each stem occurs in the sentence (built on first use)."""
        if self._positions is None:
            self._positions = {}
            for i, st in enumerate(self.stem_list):
                self._positions.setdefault(st, []).append(i)
        return self._positions

    @property
    def negations(self) -> int:
        """How many negation cues the sentence has (counted on first use: only the best match needs it)."""
        if self._negations is None:
            self._negations = count_negations(self.stem_list)
        return self._negations


@dataclass
class EvidenceIndex:
    """Evidence passages cut into sentences, with an inverted index of stems and all quantities."""

    sentences: list
    postings: dict
    quantities: list  # (Quantity, sentence id)
    exact: dict  # (kind, unit, value) -> sentence ids, for the common case of an exactly equal quantity
    _gaps: dict | None = None
    _joined: str | None = None
    _prefixes: dict | None = None
    _by_initial: dict | None = None
    _initials: dict | None = None

    def prefixed(self, word_stem: str) -> set:
        """Evidence sentences with a long word sharing the first PREFIX letters (index built on first use)."""
        if self._prefixes is None:
            self._prefixes = {}
            for st in self.postings:
                if len(st) > PREFIX:
                    self._prefixes.setdefault(st[:PREFIX], []).append(st)
        found = set()
        for st in self._prefixes.get(word_stem[:PREFIX], ()):
            found.update(self.postings[st])
        return found

    def abbreviated(self, short: str) -> set:
        """Evidence sentences where consecutive words begin with the letters of an abbreviation ("USA": "United
        States of America"; function words may be skipped). Index built on first use."""
        if self._initials is None:
            self._initials = {}
            for sid, s in enumerate(self.sentences):
                content = [st for st in s.stem_list if st not in STOP_STEMS]
                for k in range(len(content)):
                    for n in range(2, 6):
                        if k + n <= len(content):
                            key = "".join(st[0] for st in content[k : k + n])
                            self._initials.setdefault(key, set()).add(sid)
        return self._initials.get(short.lower(), set())

    def synonymous(self, word_stem: str) -> set:
        """Evidence sentences with a listed synonym of the word (see `transforms.text.synonyms`)."""
        found = set()
        for st in synonym_stems(word_stem):
            found.update(self.postings.get(st, ()))
        return found

    def spelled_alike(self, word_stem: str) -> set:
        """Evidence sentences with a word one edit away ("Paterson" / "Patterson", "organisation" / "organization");
        candidates share the first letter and nearly the length (index built on first use)."""
        if self._by_initial is None:
            self._by_initial = {}
            for st in self.postings:
                if len(st) >= 5:
                    self._by_initial.setdefault(st[0], []).append(st)
        found = set()
        for st in self._by_initial.get(word_stem[:1], ()):
            if abs(len(st) - len(word_stem)) <= 1 and one_edit(word_stem, st):
                found.update(self.postings[st])
        return found

    def gaps(self) -> dict:
        """Durations between two evidence times or dates (computed on first use), to evidence sentence pairs."""
        if self._gaps is None:
            timed = [(q, sid) for q, sid in self.quantities if q.kind in ("time", "date", "year")][:60]
            self._gaps = time_gaps(timed)
        return self._gaps

    def adjacent(self, first: str, second: str) -> bool:
        """Whether two stems stand next to each other somewhere in the evidence (a substring test on joined stems:
        far cheaper than building a set of every evidence bigram, which most sentences never need)."""
        return self.contains_run([first, second])

    def contains_run(self, stems) -> bool:
        """Whether the stems occur one after the other, in this order, within one evidence sentence."""
        if self._joined is None:
            self._joined = " " + " | ".join(" ".join(s.stem_list) for s in self.sentences) + " "
        return f" {' '.join(stems)} " in self._joined


def one_edit(a: str, b: str) -> bool:
    """Whether two different words are one insertion, deletion or substitution apart."""
    if a == b:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def quantity_key(q: Quantity) -> tuple:
    """What must be equal for two quantities to state the same value exactly."""
    return (q.kind, q.unit, q.value)


def index_evidence(passages: Sequence[tuple[str, str]]) -> EvidenceIndex:
    """Index (doc_id, content) passages for `analyse_sentence`.

    The last indexes built are remembered by their passages: the citation and claim audits index the same
    passage once per citation or claim, and rebuilding its postings each time made the cost of one response
    grow with citations times passage length. An index is read-only but for its lazy fields, which depend on
    its passages alone, so sharing it changes nothing.
    """
    return _index(tuple(passages))


@lru_cache(maxsize=64)
def _index(passages: tuple[tuple[str, str], ...]) -> EvidenceIndex:
    sentences, postings, quantities, exact = [], defaultdict(list), [], {}
    for doc_id, text in passages:
        for piece in _passage_sentences(doc_id, text):
            sid = len(sentences)
            sentences.append(piece)
            for st in piece.stems:
                postings[st].append(sid)
            for q in piece.quantities:
                quantities.append((q, sid))
                exact.setdefault(quantity_key(q), set()).add(sid)
    return EvidenceIndex(sentences, postings, quantities, exact)


@lru_cache(maxsize=1024)
def _passage_sentences(doc_id: str, text: str) -> tuple[_EvSentence, ...]:
    """One passage cut into sentences (or windows of words) with their stems and quantities.

    Remembered for the last passages seen: the citation and claim audits index the passages of a response
    again one by one, and cutting and stemming is most of the cost of an index. The pieces are shared by
    every index built from them; their lazy fields depend on the piece alone.
    """
    pieces = []
    qs = extract_quantities(text)
    # The quantities of each piece by bisection over their starts (a scan of all of them per piece was
    # quadratic: a 1 MB passage has thousands of each); the same quantities, in the same order, as the scan.
    order = sorted(range(len(qs)), key=lambda i: qs[i].start)
    starts = [qs[i].start for i in order]
    for start, end in sentence_spans(text):
        words = WORD_PATTERN.findall(text, start, end)
        cuts = [(start, end, words)]
        if len(words) > WINDOW:  # a long run without full stops: cut into windows of words
            ms = list(WORD_PATTERN.finditer(text, start, end))
            cuts = [
                (
                    ms[k].start() if k else start,
                    ms[k + WINDOW - 1].end() if k + WINDOW < len(ms) else end,
                    [m.group() for m in ms[k : k + WINDOW]],
                )
                for k in range(0, len(ms), WINDOW)
            ]
        for cs, ce, ws in cuts:
            stem_list = list(map(stem, ws))
            sq = [qs[i] for i in sorted(order[bisect_left(starts, cs) : bisect_left(starts, ce)])] if qs else []
            pieces.append(_EvSentence(doc_id, text, cs, ce, stem_list, frozenset(stem_list), sq))
    return tuple(pieces)
