"""Sentence splitting shared by every verifier, with character offsets.

A boundary is sentence-final punctuation followed by white space and a capital,
digit or opening quote; a line break; a bullet; or a semicolon between two
independent clauses. Kept intact: decimals and dosages ("4.2 mmol/L", "2.5 mg"),
times ("8:15 PM", "8 p.m."), abbreviations ("Dr.", "e.g.", "U.S."), initials
("J. K. Rowling"), URLs and e-mail addresses. Citation markers after the full
stop ("... resolved. [1]") stay with the sentence they cite::

    split_sentences("Take 2.5 mg at 8:15 p.m. daily [1]; stop if you feel dizzy.\n- Dr. J. Lee agrees.")
    # ['Take 2.5 mg at 8:15 p.m. daily [1]', 'stop if you feel dizzy.', 'Dr. J. Lee agrees.']

`sentence_spans` gives the same cuts as (start, end) offsets, so a verifier can
quote evidence sentences as exact substrings of their passage.
"""

from __future__ import annotations

import re

__all__ = ["sentence_spans", "split_sentences"]

_ABBREVIATIONS = frozenset(
    """dr mr mrs ms mx prof sr jr st mt ft gen col lt sgt capt cpt rev hon gov sen rep pres e.g i.e etc vs v cf al
    inc ltd co corp bros dept univ est approx ca jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri
    sat sun u.s u.k u.n e.u d.c a.k.a ph.d m.d b.a m.a b.sc m.sc""".split()
)
# These abbreviate only before a number ("No. 5", "Fig. 2"); elsewhere "no." can end a sentence.
_NUMBER_ABBREVIATIONS = frozenset("no nos vol p pp fig figs art sec ch eq op ed".split())

_END = re.compile(
    r"[.!?\u2026]+[\"'\u201d\u2019)\]]*"  # the full stop and any closing quote or bracket
    r"(?:\s*\[[^\[\]\n]{1,40}\])*[\"'\u201d\u2019)\]]*"  # citation markers after the full stop stay here
    r"(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9\u00c0-\u024f]|\s*$)"
)
_SEMICOLON = re.compile(r";(?=\s)")
_BULLET = re.compile(r"[ \t]*(?:[-*+\u2022\u2023\u25e6\u2043\u2219]|\d{1,3}[.)]|[a-z]\))[ \t]+")
_WORDS = re.compile(r"[^\W_]+")
_MARKERS = re.compile(r"\[[^\[\]\n]{1,40}\]")


def _is_abbreviation(head: str, tail: str) -> bool:
    """Whether the full stop ending `head` belongs to an abbreviation, an initial or a dotted acronym."""
    parts = head.rsplit(None, 1)
    if not parts:
        return False
    word = parts[-1].lstrip("\"'(\u201c\u2018[").rstrip(".")
    low = word.lower()
    if low in _ABBREVIATIONS:
        return True
    if low in _NUMBER_ABBREVIATIONS:
        return bool(re.match(r"\s*\d", tail))
    if len(word) == 1 and word.isupper():  # an initial: "J. K. Rowling", "George W. Bush"
        return True
    if "." not in word:
        return False
    # Dotted acronyms (U.S.A., Ph.D.), but not a.m./p.m. followed by a capital: those end sentences often.
    return bool(re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word)) and low not in ("a.m", "p.m")


def _independent(clause: str) -> bool:
    """A semicolon separates claims only when both sides have a few words (not a list like "Paris; Rome")."""
    return len(_WORDS.findall(clause)) >= 3


def _split_line(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, cut = [], start
    line = text[start:end]
    for m in _END.finditer(line):
        stop = start + m.end()
        if m.group().startswith(".") and _is_abbreviation(text[cut : start + m.start()], text[stop:end]):
            continue
        spans.append((cut, stop))
        cut = stop
    spans.append((cut, end))
    out = []
    for s, e in spans:
        if ";" not in text[s:e]:
            out.append((s, e))
            continue
        depth, pieces, piece_start = 0, [], s
        for i in range(s, e):
            ch = text[i]
            depth += ch in "([{" and 1 or ch in ")]}" and -1 or 0
            if ch == ";" and depth <= 0 and _SEMICOLON.match(text, i):
                pieces.append((piece_start, i))
                piece_start = i + 1
        pieces.append((piece_start, e))
        merged: list[tuple[int, int]] = []
        for ps, pe in pieces:
            if merged and not (_independent(text[merged[-1][0] : merged[-1][1]]) and _independent(text[ps:pe])):
                merged[-1] = (merged[-1][0], pe)
            else:
                merged.append((ps, pe))
        out.extend(merged)
    return out


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    piece = text[start:end]
    stripped = piece.lstrip()
    return start + len(piece) - len(stripped), start + len(piece.rstrip())


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences and independent clauses of `text`, stripped, in order."""
    spans = []
    pos = 0
    for raw_line in text.splitlines(keepends=True):
        line_start, line_end = pos, pos + len(raw_line.rstrip("\r\n"))
        pos += len(raw_line)
        bullet = _BULLET.match(text, line_start, line_end)
        if bullet and bullet.end() < line_end:
            line_start = bullet.end()
        for s, e in _split_line(text, line_start, line_end):
            s, e = _strip(text, s, e)
            if e <= s:
                continue
            if not _WORDS.search(_MARKERS.sub("", text[s:e])):
                if spans and not bullet:  # a stray marker or quote belongs to the sentence before it
                    spans[-1] = (spans[-1][0], e)
                continue
            spans.append((s, e))
    return spans


def split_sentences(answer: str) -> list[str]:
    """The answer's sentences (and semicolon or bullet clauses), in order, stripped."""
    return [answer[s:e] for s, e in sentence_spans(answer)]
