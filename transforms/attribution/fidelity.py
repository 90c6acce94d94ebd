"""Contextual fidelity: does a claim keep the meaning of the passage it cites, or overstate it?

The claim is aligned with the passage sentence that shares most of its content
words; if the two talk about the same thing, four distortions are looked for:

- `hedge_dropped`: the source hedges ("may", "could", "suggests") and the claim does not ("will");
- `scope_widened`: the source limits the scope ("some", "most") and the claim generalises ("all");
- `negation_flipped`: a shared word is negated on one side only;
- `number_changed`: the claim states a number, date or amount that differs from the source's.

    issues = fidelity_issues("The drug will cure all patients.", "The drug may help some patients.")
    [i.kind for i in issues]   # ['hedge_dropped', 'scope_widened']
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from transforms.text.quantities import extract_quantities, same_value
from transforms.text.sentences import split_sentences
from transforms.text.tokens import Token, is_negation, tokenize, without_answer_particle

__all__ = ["FidelityIssue", "align", "fidelity_issues"]

HEDGES = frozenset(
    """may might could possibly possible likely unlikely probably perhaps suggest suggests suggested
    suggesting appear appears appeared seem seems seemed potentially reportedly allegedly preliminary
    uncertain unclear tentatively""".split()
)
CERTAINTY = frozenset(
    "will always definitely certainly proves proved proven guarantees guaranteed clearly must".split()
)
LIMITED = frozenset(
    """some several many few most certain part partly partially occasionally sometimes often frequently
    usually majority minority subset select numerous""".split()
)
UNIVERSAL = frozenset("all every always entire entirely everyone everybody everything universally".split())
_MIN_ALIGNMENT = 0.5
_NEGATION_REACH = 3
_CUE_REACH = 3


class FidelityIssue(NamedTuple):
    """One distortion of the source's meaning: its kind and a note a reviewer can read."""

    kind: str
    note: str


def _content(tokens: tuple[Token, ...]) -> set[str]:
    return {t.stem for t in tokens if not t.stop}


def align(claim: str, passage: str) -> tuple[str, float]:
    """The passage sentence sharing most content words with the claim, and the share of claim words it has."""
    claim_words = _content(tokenize(claim))
    if not claim_words:
        return "", 0.0
    best, best_share = "", 0.0
    for sentence, words in _sentence_words(passage):
        share = len(claim_words & words) / len(claim_words)
        if share > best_share:
            best, best_share = sentence, share
    return best, best_share


@lru_cache(maxsize=256)
def _sentence_words(passage: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The passage's sentences with their content words (remembered: a response cites its passages many times)."""
    return tuple((s, frozenset(_content(tokenize(s)))) for s in split_sentences(passage) or [passage])


def _lower_words(tokens: tuple[Token, ...]) -> list[str]:
    return [t.text.lower().replace("\u2019", "'") for t in tokens]


def _phrase(tokens: tuple[Token, ...], index: int) -> str:
    return " ".join(t.text for t in tokens[index : index + 2])


def _governs(tokens: tuple[Token, ...], index: int, shared: set[str]) -> bool:
    """Whether a hedge or quantifier at `index` bears on shared content (a shared word right after it)."""
    return any(t.stem in shared for t in tokens[index + 1 : index + 1 + _CUE_REACH])


def _is_month(tokens: tuple[Token, ...], index: int) -> bool:
    """ "May" the month, not the modal: capitalised inside a sentence, or next to a number."""
    t = tokens[index]
    if t.text.lower() != "may":
        return False
    near_number = any(n.text[:1].isdigit() for n in tokens[max(0, index - 1) : index + 2] if n is not t)
    return near_number or (t.text == "May" and index > 0)


def _hedge(claim_toks, source_toks) -> FidelityIssue | None:
    claim_words, source_words = _lower_words(claim_toks), _lower_words(source_toks)
    shared = _content(claim_toks) & _content(source_toks)
    hedges = [
        i
        for i, w in enumerate(source_words)
        if w in HEDGES and _governs(source_toks, i, shared) and not _is_month(source_toks, i)
    ]
    # "can" in the claim keeps the possibility or permission a source's "may" expresses.
    if not hedges or any(w in HEDGES or w == "can" for w in claim_words):
        return None
    source_phrase = _phrase(source_toks, hedges[0])
    certain = [i for i, w in enumerate(claim_words) if w in CERTAINTY]
    if certain:
        return FidelityIssue(
            "hedge_dropped",
            f'hedge dropped: the source says "{source_phrase}", the claim says "{_phrase(claim_toks, certain[0])}"',
        )
    note = f'hedge dropped: the source says "{source_phrase}", the claim states it as fact'
    return FidelityIssue("hedge_dropped", note)


def _scope(claim_toks, source_toks) -> FidelityIssue | None:
    claim_words, source_words = _lower_words(claim_toks), _lower_words(source_toks)
    shared = _content(claim_toks) & _content(source_toks)
    limited = [w for i, w in enumerate(source_words) if w in LIMITED and _governs(source_toks, i, shared)]
    universal = [w for i, w in enumerate(claim_words) if w in UNIVERSAL and _governs(claim_toks, i, shared)]
    if limited and universal and not set(claim_words) & set(limited):
        note = f'scope widened: the source says "{limited[0]}", the claim says "{universal[0]}"'
        return FidelityIssue("scope_widened", note)
    return None


def _negated_stems(tokens: tuple[Token, ...], shared: set[str]) -> set[str]:
    negated = set()
    for i, t in enumerate(tokens):
        if t.stem in shared and any(is_negation(p) for p in tokens[max(0, i - _NEGATION_REACH) : i]):
            negated.add(t.stem)
    return negated


def _negation(claim_toks, source_toks, passage: str = "") -> FidelityIssue | None:
    shared = _content(claim_toks) & _content(source_toks)
    in_claim, in_source = _negated_stems(claim_toks, shared), _negated_stems(source_toks, shared)
    only_claim = in_claim - in_source
    if only_claim:
        # A claim's negation the passage states elsewhere (another sentence) is not a flip.
        only_claim -= _negated_stems(tokenize(passage), in_claim)
    flipped = only_claim | (in_source - in_claim)
    if not flipped:
        return None
    # Name the first flipped word in reading order, with the negation before it.
    side_toks, side = (claim_toks, "the claim") if flipped & in_claim else (source_toks, "the source")
    # The first occurrence that is negated: the same word may also occur earlier without a negation.
    i, cue = next(
        (i, neg.text)
        for i, t in enumerate(side_toks)
        if t.stem in flipped
        for neg in reversed(side_toks[max(0, i - _NEGATION_REACH) : i])
        if is_negation(neg)
    )
    other = "the source does not" if side == "the claim" else "the claim does not"
    return FidelityIssue("negation_flipped", f'negation flipped: {side} says "{cue} ... {side_toks[i].text}", {other}')


def _numbers(claim: str, source_sentence: str, passage: str) -> list[FidelityIssue]:
    issues = []
    in_passage = extract_quantities(passage)  # remembered by `extract_quantities` itself
    in_sentence = extract_quantities(source_sentence)
    claim_quantities = extract_quantities(claim)
    for q in claim_quantities:
        if any(same_value(q, e) for e in in_passage):
            continue
        rivals = [
            e
            for e in in_sentence
            if (e.kind == q.kind or {e.kind, q.kind} == {"date", "year"})
            and e.unit == q.unit
            and not any(same_value(c, e) for c in claim_quantities)
        ]
        if rivals:
            note = f'number changed: the claim says "{q.text}", the source says "{rivals[0].text}"'
            issues.append(FidelityIssue("number_changed", note))
    return issues


def fidelity_issues(claim: str, passage: str) -> list[FidelityIssue]:
    """The distortions of `passage` in `claim`; none when the two do not talk about the same thing."""
    sentence, share = align(claim, passage)
    if share < _MIN_ALIGNMENT:
        return []
    claim_toks, source_toks = without_answer_particle(tokenize(claim)), tokenize(sentence)
    issues = [_hedge(claim_toks, source_toks), _scope(claim_toks, source_toks)]
    issues.append(_negation(claim_toks, source_toks, passage))
    return [i for i in issues if i is not None] + _numbers(claim, sentence, passage)
