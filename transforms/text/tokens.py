"""Word-level text matching for the heuristic verifier: tokens with offsets, light stems, word weights, cues.

Everything is plain Python and cached, because the verifier runs on every
sentence of every audited answer::

    toks = tokenize("The patient received 50mg of metoprolol.")
    [t.stem for t in toks if not t.stop]   # ['patient', 'receiv', '50mg', 'metoprolol']

Stems are suffix-stripped after irregular verb forms are mapped to their base
("left" -> "leave"). Word weights stand in for IDF without a corpus: function
words and opening connectives ("However", "Additionally") weigh nothing, very
common English words little, capitalised names and long rare words most.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from transforms.text.wordlists import ANTONYM_PAIRS as _ANTONYM_PAIRS
from transforms.text.wordlists import COMMON_WORDS as _COMMON
from transforms.text.wordlists import CONNECTIVES as _CONNECTIVES
from transforms.text.wordlists import CONVERSE_PAIRS as _CONVERSE_PAIRS
from transforms.text.wordlists import FREQUENCY_STEMS as _FREQUENCY
from transforms.text.wordlists import IRREGULAR_FORMS as _IRREGULAR
from transforms.text.wordlists import NEGATION_CUES, STOPWORDS

__all__ = [
    "ANTONYMS",
    "CONVERSES",
    "NEGATION_CUES",
    "NEGATION_STEMS",
    "STOPWORDS",
    "STOP_STEMS",
    "Token",
    "citation_marker_spans",
    "WORD_PATTERN",
    "count_negations",
    "is_negation",
    "is_negation_word",
    "stem",
    "stems_of_claim",
    "tokenize",
    "without_answer_particle",
    "word_weight",
]

WORD_PATTERN = _WORD = re.compile(r"[^\W_]+(?:['\u2019][a-zA-Z]{1,2}\b)?")
# Inline citation markers: [1], [2, 3], [doc_alpha], [12-14]; not claims, so never matched as words.
_CITATION = re.compile(r"\s?\[(?:[\w.:\-]+(?:\s*[,;]\s*[\w.:\-]+)*)\]")

_STEM_COLLISIONS = frozenset({"not"})


def _stem_raw(word: str) -> str:
    w = word.lower().replace("\u2019", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if w in _FREQUENCY:
        return _FREQUENCY[w]
    w = _IRREGULAR.get(w, w)
    if len(w) <= 3 or w.isdigit():
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("ing") and len(w) > 5:
        w = w[:-3]
    elif w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
    elif w.endswith("ly") and len(w) > 5:
        w = w[:-2]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if w in _STEM_COLLISIONS:  # "noted" must not become the negation "not"
        return w + "e"
    return w


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light suffix-stripping stem: "received" and "receives" -> "receiv", "studies" -> "study"."""
    return _stem_raw(word)


def _pairs(pairs: list[tuple[str, ...]]) -> dict[str, frozenset[str]]:
    """Each word's stem to the stems of its partners, both ways round."""
    out: dict[str, frozenset[str]] = {}
    for a, b in pairs:
        for x, y in ((stem(a), stem(b)), (stem(b), stem(a))):
            out[x] = out.get(x, frozenset()) | {y}
    return out


ANTONYMS = _pairs(_ANTONYM_PAIRS)
CONVERSES = _pairs(_CONVERSE_PAIRS)
"""Converse words ("before" / "after"): one relation from either end, so not antonyms (see `CONVERSE_PAIRS`)."""

NEGATION_STEMS = frozenset(stem(w) for w in NEGATION_CUES)
_COMMON_STEMS = frozenset(stem(w) for w in _COMMON)
_CONNECTIVE_STEMS = frozenset(stem(w) for w in _CONNECTIVES)  # a cheap first test
STOP_STEMS = _STOP_STEMS = frozenset(stem(w) for w in STOPWORDS) | STOPWORDS


class Token(NamedTuple):
    """One word of a text: its characters, offsets, stem and whether it is a function word."""

    text: str
    start: int
    end: int
    stem: str
    stop: bool
    capital: bool


_new = tuple.__new__


@lru_cache(maxsize=4096)
def _tokenize_cached(text: str) -> tuple[Token, ...]:
    out = []
    for m in _WORD.finditer(text):
        word = m.group()
        low = word.lower()
        s = stem(word)
        # tuple.__new__ directly: NamedTuple's own __new__ is a Python frame, and this runs for every word.
        stop = low in STOPWORDS or (s in _STOP_STEMS and len(low) <= len(s) + 2)  # "evening" is no "even"
        out.append(_new(Token, (word, m.start(), m.end(), s, stop, word[0].isupper())))
    return tuple(out)


def tokenize(text: str) -> tuple[Token, ...]:
    """The words of `text` with character offsets (cached: passages repeat across sentences)."""
    return _tokenize_cached(text)


def _answer_particle(tokens: tuple[Token, ...]) -> bool:
    """Whether the tokens open with a "No," that answers a question ("No, unused leave does not carry over"): it
    negates nothing in the sentence. "No dogs are allowed" does not (nothing between the word and the next)."""
    return len(tokens) > 1 and tokens[0].text.lower() == "no" and tokens[1].start - tokens[0].end > 1


def without_answer_particle(tokens: tuple[Token, ...]) -> tuple[Token, ...]:
    """The tokens without a leading answer "No," (`_answer_particle`)."""
    return tokens[1:] if _answer_particle(tokens) else tokens


def stems_of_claim(tokens: tuple[Token, ...]) -> list[str]:
    """The stems of a claim's tokens, one per token, a leading answer "No," blanked (`_answer_particle`): the
    positions stay those of `tokens`, and no negation count or head sees the particle."""
    stems = [t.stem for t in tokens]
    if _answer_particle(tokens):
        stems[0] = ""
    return stems


def citation_marker_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of inline citation markers such as "[1]" or "[doc_alpha]"."""
    return [m.span() for m in _CITATION.finditer(text)]


def count_negations(stems: list[str]) -> int:
    """Negation cues in a stem sequence; "not only" (an intensifier, not a negation) does not count."""
    n = 0
    for i, st in enumerate(stems):
        if st in NEGATION_STEMS or st.endswith("n't"):
            if st == "not" and i + 1 < len(stems) and stems[i + 1] in ("only", "just"):
                continue
            n += 1
    return n


@lru_cache(maxsize=100_000)
def is_negation_word(word: str) -> bool:
    """Whether a word negates its clause ("not", "never", "didn't", ...); cached like `stem`: asked of every word
    near a claim word, for each passage a claim is checked against."""
    low = word.lower().replace("\u2019", "'")
    return low in NEGATION_CUES or low.endswith("n't")


def is_negation(token: Token) -> bool:
    """Whether a token negates its clause."""
    return is_negation_word(token.text)


def word_weight(
    token: Token, *, common: float = 0.35, name: float = 1.5, long: float = 1.2, long_chars: int = 8
) -> float:
    """How much a word counts towards a claim: 0 for function words, low (`common`) for common words, high for
    names (`name`) and long words (`long`, from `long_chars` letters). The heuristic passes its config's weights."""
    if token.stop or (token.stem in _CONNECTIVE_STEMS and token.text.lower() in _CONNECTIVES):
        return 0.0
    if token.stem in _COMMON_STEMS:
        return common
    weight = 1.0
    if token.capital and token.start > 0:
        weight = name
    elif len(token.text) >= long_chars:
        weight = long
    return weight
