"""Quoted spans in an answer, and where (and how exactly) they occur in a passage.

A quote must match its cited passage character for character, punctuation
included. When it does not, `match_quote` says whether it matches after
normalising white space, quote marks and case, and otherwise where the closest
passage text is and how similar it is, with character offsets into the passage::

    m = match_quote('the drug "may reduce risk"', 'Trials show the drug may reduce  risk.')
    (m.match, m.start, m.end)   # (QuoteMatch.normalized, 21, 37)
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

from schemas import QuoteMatch

__all__ = ["QuoteFound", "QuotedSpan", "find_quotes", "match_quote", "normalize_with_map"]

# Straight or curly double quotes (and guillemets) around at least one word; single quotes are too often apostrophes.
_QUOTED = re.compile(r"\"([^\"\n]{2,}?)\"|\u201c([^\u201d\n]{2,}?)\u201d|\u00ab([^\u00bb\n]{2,}?)\u00bb")
_QUOTE_CHARS = str.maketrans(
    {
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u2032": "'",
        "\u2033": '"',
    }
)
_ANCHOR_WORDS = 3
_MAX_CANDIDATES = 200


class QuotedSpan(NamedTuple):
    """A quoted span of a text: the words inside the quote marks and their offsets in that text."""

    text: str
    start: int
    end: int


class QuoteFound(NamedTuple):
    """How a quote matched a passage: exact, normalized or none; the best passage span and its similarity."""

    match: QuoteMatch
    start: int | None
    end: int | None
    similarity: float

    def excerpt(self, passage: str) -> str:
        """The passage text at the best match (a real substring of the passage), or '' when there is none."""
        return "" if self.start is None else passage[self.start : self.end]


def find_quotes(text: str) -> list[QuotedSpan]:
    """Every quoted span of `text`, in order (the quote marks themselves excluded)."""
    out = []
    for m in _QUOTED.finditer(text):
        group = next(i for i in (1, 2, 3) if m.group(i) is not None)
        if re.search(r"\w", m.group(group)):
            out.append(QuotedSpan(m.group(group), m.start(group), m.end(group)))
    return out


def normalize_with_map(text: str) -> tuple[str, list[int]]:
    """Text with quote marks unified, white space collapsed and case folded, and each char's original offset."""
    chars: list[str] = []
    index: list[int] = []
    translated = text.translate(_QUOTE_CHARS)
    for i, ch in enumerate(translated):
        if ch.isspace():
            if chars and chars[-1] == " ":
                continue
            ch = " "
        chars.append(ch.lower())
        index.append(i)
    # Leading/trailing white space is not part of a match.
    while chars and chars[0] == " ":
        chars.pop(0)
        index.pop(0)
    while chars and chars[-1] == " ":
        chars.pop()
        index.pop()
    return "".join(chars), index


def _closest(passage: str, quote: str) -> QuoteFound:
    """The passage window of the quote's length that resembles it most.

    Candidate windows are anchored where one of the quote's longest words occurs in the passage, so the
    cost grows with the number of anchors, not with passage length times quote length.
    """
    norm_p, map_p = normalize_with_map(passage)
    norm_q, _ = normalize_with_map(quote)
    if not norm_p or not norm_q:
        return QuoteFound(QuoteMatch.none, None, None, 0.0)
    # Ties broken by the word itself: a set's order changes with the hash seed, and the result must not.
    words = sorted({m.group() for m in re.finditer(r"\w{3,}", norm_q)}, key=lambda w: (-len(w), w))[:_ANCHOR_WORDS]
    starts: set[int] = set()
    for word in words:
        offset = norm_q.find(word)
        at = norm_p.find(word)
        while at >= 0 and len(starts) < _MAX_CANDIDATES:
            starts.add(max(0, at - offset))
            at = norm_p.find(word, at + 1)
    best = (0.0, None, None)
    for start in sorted(starts):
        end = min(len(norm_p), start + len(norm_q))
        ratio = SequenceMatcher(None, norm_p[start:end], norm_q, autojunk=False).ratio()
        if ratio > best[0]:
            best = (ratio, start, end)
    ratio, start, end = best
    if start is None or end <= start:
        return QuoteFound(QuoteMatch.none, None, None, 0.0)
    return QuoteFound(QuoteMatch.none, map_p[start], map_p[end - 1] + 1, round(ratio, 4))


def match_quote(quote: str, passage: str) -> QuoteFound:
    """Where `quote` occurs in `passage`: exactly, after normalisation, or only approximately (match none)."""
    quote = quote.strip()
    if not quote:
        return QuoteFound(QuoteMatch.none, None, None, 0.0)
    at = passage.find(quote)
    if at >= 0:
        return QuoteFound(QuoteMatch.exact, at, at + len(quote), 1.0)
    norm_p, map_p = normalize_with_map(passage)
    norm_q, _ = normalize_with_map(quote)
    at = norm_p.find(norm_q) if norm_q else -1
    if at >= 0:
        return QuoteFound(QuoteMatch.normalized, map_p[at], map_p[at + len(norm_q) - 1] + 1, 1.0)
    return _closest(passage, quote)
