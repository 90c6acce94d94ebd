"""Sentence splitting shared by every verifier (first version: a regular expression).

Splits on sentence-final punctuation followed by white space and a capital or
digit, on semicolons, and on bullet lines; keeps decimals ("4.2 mmol/L") and
common abbreviations ("Dr.", "e.g.") inside their sentence.
"""

from __future__ import annotations

import re

__all__ = ["split_sentences"]

_ABBREVIATIONS = {"dr", "mr", "mrs", "ms", "prof", "e.g", "i.e", "etc", "vs", "no", "inc", "ltd", "st", "jr", "sr", "u.s", "fig", "approx"}
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", re.MULTILINE)


def _split_prose(text: str) -> list[str]:
    parts, start = [], 0
    for match in _BOUNDARY.finditer(text):
        head = text[start : match.start()].rstrip()
        last_word = head.rsplit(None, 1)[-1].rstrip(".").lower() if head else ""
        if last_word in _ABBREVIATIONS:
            continue
        parts.append(text[start : match.start()].strip())
        start = match.end()
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def split_sentences(answer: str) -> list[str]:
    """The answer's sentences (and semicolon or bullet clauses), in order, stripped."""
    sentences = []
    for line in answer.splitlines():
        line = _BULLET.sub("", line)
        for clause in line.split(";"):
            sentences.extend(_split_prose(clause))
    return sentences
