"""Find the citations of an answer and the claims they are attached to (the first half of the citation audit).

Markers in the answer (`[1]`, `[2, 3]`, `[2-4]`, `[^1]`, `[doc_alpha]`) and the
response's explicit `citations` list both count. A marker belongs to the
sentence it sits in (a marker that opens a sentence, as in "... fell. [1] Then",
belongs to the previous one); when a sentence carries several marker groups,
each group's claim is the clause before it::

    refs = parse_citations(response)        # [CitationRef("[1]", "1", claim, sentence_index, ...), ...]
    passage, how = resolve_citation(refs[0], response)   # None when the id is not in the evidence

A bare word in brackets ("[sic]") is a citation only when the evidence or the
explicit list knows it; numbers and id-like tokens ("doc_7") always are, so an
invented one is caught as fabricated.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from schemas import EvidencePassage, LoggedCitation, LoggedResponse
from transforms.text.quotes import find_quotes
from transforms.text.sentences import split_sentences
from transforms.text.tokens import tokenize

__all__ = ["CitationRef", "parse_citations", "resolve_citation", "sentence_spans", "strip_markers"]

_MARKER = re.compile(r"\[([^\[\]\n]{1,120})\](?!\()")  # "[text](url)" is a Markdown link, not a citation
_MARKER_WITH_SPACE = re.compile(r"\s*\[([^\[\]\n]{1,120})\](?!\()")
_LEADING_JOIN = re.compile(r"^(?:and|but|while|whereas|or|yet)\s+", re.IGNORECASE)
_DANGLING_QUOTE = re.compile(r'^["\u201d]\s+')
_SENTENCE_END = re.compile(r'[.!?]["\u201d\')]*\s*$')
_ID = re.compile(r"^[\w.:\-/#]+$")
_ID_LIKE = re.compile(r"[\d_.:\-/#]")
_RANGE = re.compile(r"^(\d+)\s*[-\u2013]\s*(\d+)$")
_MAX_RANGE = 50


@dataclass(frozen=True)
class CitationRef:
    """One citation occurrence: the id as written, the claim it is attached to and where it sits."""

    citation_id: str
    """As the spec shows it: "[1]", "[doc_alpha]" (an explicit citation keeps its own id)."""
    ref: str
    """The id inside the brackets: "1", "doc_alpha"."""
    claim: str
    sentence_index: int | None
    group: tuple[str, ...] = ()
    """The other refs cited for the same claim ("[2, 3]" or "[2][3]")."""
    quotes: tuple[str, ...] = ()
    position: int = -1
    """Character offset of the marker in the answer; -1 for explicit citations without a marker."""
    explicit: LoggedCitation | None = None


def sentence_spans(answer: str) -> list[tuple[int, int]]:
    """Character spans of the answer's sentences, as the sentence audit splits them (same indexes)."""
    spans, cursor = [], 0
    for sentence in split_sentences(answer):
        at = answer.find(sentence, cursor)
        if at < 0:  # the splitter normalised something; fall back to the first occurrence
            at = max(0, answer.find(sentence))
        spans.append((at, at + len(sentence)))
        cursor = at + len(sentence)
    return spans


def strip_markers(text: str) -> str:
    """The text without its citation markers, white space collapsed."""
    stripped = _MARKER_WITH_SPACE.sub(lambda m: m.group() if _marker_refs(m.group(1)) is None else "", text)
    return " ".join(stripped.split())


def _marker_refs(inner: str) -> list[str] | None:
    """The ids inside one bracket pair, or None when it does not look like a citation marker."""
    refs: list[str] = []
    for part in re.split(r"[,;]", inner):
        part = part.strip().removeprefix("^")  # Markdown footnote style: [^1]
        rng = _RANGE.match(part)
        if rng and 0 < int(rng.group(2)) - int(rng.group(1)) <= _MAX_RANGE:
            refs.extend(str(n) for n in range(int(rng.group(1)), int(rng.group(2)) + 1))
        elif part and _ID.match(part):
            refs.append(part)
        else:
            return None
    return refs or None


def _is_citation(
    ref: str, doc_ids: set[str], explicit: dict[str, LoggedCitation], lowered_ids: set[str] | None = None
) -> bool:
    # A bare word ("[sic]") is a citation only if the evidence or the explicit list knows it;
    # numbers and id-like tokens ("doc_7", "kb:12") are citations even when unknown: those are the fabricated ones.
    lowered = lowered_ids if lowered_ids is not None else {d.lower() for d in doc_ids}
    known = ref in doc_ids or ref in explicit or ref.lower() in lowered
    return known or bool(_ID_LIKE.search(ref))


def _explicit_by_ref(citations: Sequence[LoggedCitation] | None) -> dict[str, LoggedCitation]:
    out: dict[str, LoggedCitation] = {}
    for c in citations or []:
        out.setdefault(c.citation_id.strip().strip("[]").strip(), c)
    return out


def _sentence_of(
    position: int, spans: list[tuple[int, int]], answer: str, starts: list[int] | None = None
) -> int | None:
    """The sentence a marker belongs to: the one containing it, or the previous one if it opens a sentence."""
    if not spans:
        return None
    # The last sentence starting at or before the marker (binary search: answers can be long; the starts are
    # listed once per answer by the caller, not once per marker).
    starts = starts if starts is not None else [start for start, _ in spans]
    i = bisect.bisect_right(starts, position) - 1
    if i < 0:
        return 0
    start, end = spans[i]
    if position >= end:
        return i  # in the gap after sentence i
    if i > 0 and not strip_markers(answer[start:position]).strip():
        return i - 1
    return i


def _same_claim(citation: LoggedCitation, sentence: str) -> bool:
    """Whether an explicit citation is about this sentence (no claim_text: any sentence that cites it)."""
    if not citation.claim_text:
        return True
    return strip_markers(citation.claim_text).lower() in strip_markers(sentence).lower()


def _content_words(text: str) -> int:
    return sum(not t.stop for t in tokenize(strip_markers(text)))


def _claim_text(text: str) -> str:
    # A closing quote mark left over from the previous sentence ('" Then ...') is not part of this claim.
    return _DANGLING_QUOTE.sub("", strip_markers(text)).strip()


def _claim_ranges(
    answer: str, s_start: int, s_end: int, markers: list[tuple[int, int, list[str]]]
) -> list[tuple[tuple[int, int], list[str], int]]:
    """((start, end) of the claim in the answer, refs, marker position) for each marker group of one sentence.

    One group: the whole sentence, or only the text before the marker when that text already ends a
    sentence ('... per share. [3]" Next ...'). Several groups: each claims the clause before it, and
    adjacent markers ("[2][3]") share one clause.
    """
    clauses: list[tuple[tuple[int, int], list[str], int]] = []
    clause_start = s_start
    for start, end, refs in markers:
        if clauses and _content_words(answer[clause_start:start]) == 0:
            clauses[-1][1].extend(refs)
        else:
            head = answer[clause_start:start]
            skip = len(head) - len(_LEADING_JOIN.sub("", head.lstrip(" ,;:-")))
            clauses.append(((clause_start + skip, start), list(refs), start))
        clause_start = max(clause_start, end)
    if len(clauses) == 1:
        (c_start, c_end), refs, position = clauses[0]
        closes_sentence = _SENTENCE_END.search(strip_markers(answer[s_start:c_end]))
        tail_has_words = _content_words(answer[c_end:s_end]) > 0
        end = c_end if closes_sentence and tail_has_words else s_end
        return [((s_start, end), refs, position)]
    # A clause too short to be a claim ("[1] and [2]") stands for the whole sentence.
    return [
        ((c_start, c_end) if _content_words(answer[c_start:c_end]) >= 2 else (s_start, s_end), refs, position)
        for (c_start, c_end), refs, position in clauses
    ]


def parse_citations(response: LoggedResponse) -> list[CitationRef]:
    """Every citation of a response, in answer order, then explicit citations that no marker mentions."""
    answer = response.answer
    doc_ids = {p.doc_id for p in response.evidence}
    explicit = _explicit_by_ref(response.citations)
    lowered_ids = {d.lower() for d in doc_ids}
    spans = sentence_spans(answer)
    groups: list[tuple[int, int, list[str]]] = []  # (start, end, refs) of each marker
    for m in _MARKER.finditer(answer):
        refs = _marker_refs(m.group(1))
        if refs and all(_is_citation(r, doc_ids, explicit, lowered_ids) for r in refs):
            groups.append((m.start(), m.end(), refs))

    by_sentence: dict[int | None, list[tuple[int, int, list[str]]]] = {}
    starts = [start for start, _ in spans]
    for g in groups:
        by_sentence.setdefault(_sentence_of(g[0], spans, answer, starts), []).append(g)

    quotes = [(q.start, strip_markers(q.text)) for q in find_quotes(answer)]
    quote_starts = [at for at, _ in quotes]  # find_quotes gives them in answer order
    refs_out: list[CitationRef] = []
    absorbed: set[str] = set()
    for index, markers in by_sentence.items():
        s_start, s_end = spans[index] if index is not None and spans else (0, len(answer))
        for (c_start, c_end), refs, position in _claim_ranges(answer, s_start, s_end, markers):
            claim = _claim_text(answer[c_start:c_end])
            first, stop = bisect.bisect_left(quote_starts, c_start), bisect.bisect_left(quote_starts, c_end)
            claim_quotes = tuple(text for _, text in quotes[first:stop])
            for ref in dict.fromkeys(refs):
                extra = ()
                if ref in explicit and _same_claim(explicit[ref], answer[s_start:s_end]):
                    absorbed.add(ref)  # the explicit entry describes this very occurrence
                    extra = (explicit[ref].quote,) if explicit[ref].quote else ()
                refs_out.append(
                    CitationRef(
                        citation_id=f"[{ref}]",
                        ref=ref,
                        claim=claim,
                        sentence_index=index,
                        group=tuple(r for r in dict.fromkeys(refs) if r != ref),
                        quotes=claim_quotes + extra,
                        position=position,
                        explicit=explicit.get(ref),
                    )
                )
    refs_out.sort(key=lambda r: r.position)
    for ref, c in explicit.items():
        if ref in absorbed:
            continue
        claim, index = _explicit_claim(c, answer, spans, response.passages_by_id.get(c.doc_id))
        refs_out.append(
            CitationRef(
                citation_id=c.citation_id,
                ref=ref,
                claim=claim,
                sentence_index=index,
                quotes=(c.quote,) if c.quote else (),
                explicit=c,
            )
        )
    return refs_out


def _explicit_claim(
    c: LoggedCitation, answer: str, spans: list[tuple[int, int]], passage: EvidencePassage | None
) -> tuple[str, int | None]:
    """An explicit citation's claim: its claim_text, else the answer sentence sharing most words with the passage."""
    if c.claim_text:
        for i, (start, end) in enumerate(spans):
            if c.claim_text.strip() in answer[start:end]:
                return c.claim_text, i
        return c.claim_text, None
    if not spans:
        return strip_markers(answer), None
    if passage is None or len(spans) == 1:
        return strip_markers(answer[spans[0][0] : spans[0][1]]) if len(spans) == 1 else strip_markers(answer), (
            0 if len(spans) == 1 else None
        )
    words = {t.stem for t in tokenize(passage.content) if not t.stop}
    overlap = [len({t.stem for t in tokenize(answer[s:e]) if not t.stop} & words) for s, e in spans]
    best = max(range(len(spans)), key=lambda i: overlap[i])
    return strip_markers(answer[spans[best][0] : spans[best][1]]), best


def resolve_citation(ref: CitationRef, response: LoggedResponse) -> tuple[EvidencePassage | None, str]:
    """The passage a citation names, and how it was found (for the auditor notes); None if it does not exist."""
    by_id = response.passages_by_id
    target = ref.explicit.doc_id if ref.explicit is not None else ref.ref
    if target in by_id:
        return by_id[target], ""
    lowered = {d.lower(): p for d, p in by_id.items()}
    if target.lower() in lowered:
        return lowered[target.lower()], f"matched evidence id {lowered[target.lower()].doc_id!r} ignoring case"
    # Many generators number the passages they were shown ("[2]" = the second passage) when the ids are not numbers.
    if ref.explicit is None and target.isdigit() and not any(d.isdigit() for d in by_id):
        n = int(target)
        if 1 <= n <= len(response.evidence):
            passage = response.evidence[n - 1]
            return passage, f"[{n}] read as retrieved passage number {n} ({passage.doc_id})"
    return None, ""
