"""Contradiction cues found in the claim's slot of an evidence sentence: the words around a claim word and around
an evidence word share a content word, so both say something about the same thing.

Used by `transforms.verify.heuristic.contradiction`; each cue returns the evidence sentence, a reason and a strength::

    anchored_opposite(tokens, ev, gain_of, total)   # "unsuitable contracts" / "assign suitable tasks"
    anchored_negation(tokens, ev, gain_of, total)   # "can't try the wines" / "can try the wines"
    swapped_roles(tokens, s)                        # "Leeds beat York" / "York beat Leeds"
    anchored_name_swap(tokens, items, ev, gain_of, total)   # "born in Gdansk" / "born on 5 July 1867 in Warsaw"
    dropped_hedge(tokens, ev, gain_of, total)       # "a carcinogenic chemical" / "a reportedly carcinogenic chemical"

They search the few best-aligned evidence sentences (a long claim draws on
several, and the conflicting one need not be the one that covers most of it).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from transforms.text.quantities import counted
from transforms.text.synonyms import TIME_UNITS, incompatible_stems, synonym_stems
from transforms.text.tokens import (
    ANTONYMS,
    NEGATION_STEMS,
    STOP_STEMS,
    WORD_PATTERN,
    count_negations,
    stem,
    stems_of_claim,
)
from transforms.verify.heuristic.config import DEFAULT_CONFIG, HeuristicConfig

__all__ = [
    "Cue",
    "anchored_name_swap",
    "anchored_negation",
    "anchored_opposite",
    "dropped_hedge",
    "negated_forms",
    "negated_heads",
    "swapped_roles",
]


class Cue(NamedTuple):
    """An evidence sentence that conflicts with the claim, why, and how strongly (0..1)."""

    sentence: object
    reason: str
    strength: float


_NEGATING_PREFIXES = ("un", "in", "im", "ir", "il", "dis", "non", "sub", "anti")
# Prefixes that begin many words without negating them ("display", "inform", "import"): a short stem after them is
# more often such a word than a negation.
_LOOSE_PREFIXES = frozenset({"in", "im", "dis", "sub"})


@lru_cache(maxsize=100_000)
def _prefix_forms(word_stem: str) -> tuple[str, ...]:
    """The word with a negating prefix added, or without the one it has ("suitabl" -> "unsuitabl", ...)."""
    forms = []
    for prefix in _NEGATING_PREFIXES:
        shortest = 5 if prefix in _LOOSE_PREFIXES else 4
        if word_stem.startswith(prefix) and len(word_stem) - len(prefix) >= shortest:
            forms.append(word_stem[len(prefix) :].lstrip("-"))
        elif len(word_stem) >= shortest:
            forms.extend((prefix + word_stem, prefix + "-" + word_stem))
    return tuple(forms)


@lru_cache(maxsize=100_000)
def _opposite_forms(word_stem: str) -> tuple[str, ...]:
    """Listed antonyms (not the forbidding words, which count as negations), words of the same closed class
    ("red" / "blue", "murder" / "manslaughter") and negated-prefix forms of a word."""
    listed = (ANTONYMS.get(word_stem, frozenset()) - NEGATION_STEMS) | incompatible_stems(word_stem)
    return tuple(listed) + _prefix_forms(word_stem)


def negated_forms(word_stem: str, evidence_stems) -> set:
    """Evidence stems that are this word with or without a negating prefix ("suitable" / "unsuitable")."""
    return {form for form in _prefix_forms(word_stem) if form in evidence_stems}


def _shares_context(tokens, i: int, s, j: int, window: int) -> bool:
    """Whether the words around claim word i and evidence word j share a content word (the same slot)."""
    near = {
        tokens[k].stem
        for k in range(max(0, i - window), min(len(tokens), i + window + 1))
        if k != i and not tokens[k].stop and len(tokens[k].stem) > 2
    }
    lo, hi = max(0, j - window), min(len(s.stem_list), j + window + 1)
    if any(s.stem_list[k] in near for k in range(lo, hi) if k != j):
        return True
    near = set().union(*(synonym_stems(st) for st in near))  # the same slot in other words ("tried various wines")
    return any(s.stem_list[k] in near for k in range(lo, hi) if k != j)


def _negated_near(stems, i: int, window: int) -> bool:
    """Whether a negation cue stands in the few words before position i (its clause's polarity)."""
    return count_negations(stems[max(0, i - window) : i]) % 2 == 1


def anchored_opposite(tokens, ev, gain_of: dict, total: float, c: HeuristicConfig = DEFAULT_CONFIG) -> Cue | None:
    """An antonym or a negated form of a claim word in the same slot of any well-aligned evidence sentence
    ("unsuitable contracts" against "assign suitable tasks"), not only the best-aligned one: a long claim draws on
    several evidence sentences, and the conflicting one need not be the one that covers most of it. The slot is
    the words around both: they must share a content word, and the same polarity (no negation on one side only).
    """
    claim_stems = [t.stem for t in tokens]
    claim_set = set(claim_stems)
    # Opposites found anywhere in the evidence first: nearly always none, and then no sentence needs a look.
    candidates = []
    postings = ev.postings
    for i, t in enumerate(tokens):
        if not t.stop:
            forms = _opposite_forms(t.stem)
            if forms and not postings.keys().isdisjoint(forms):
                opposite = {o for o in forms if o in postings and o not in claim_set}
                if opposite:
                    candidates.append((i, t, opposite))
    if not candidates:
        return None
    aligned = [
        (ev.sentences[sid], gain_of[sid] / total)
        for sid in sorted(gain_of, key=gain_of.get, reverse=True)[: c.max_anchored]
        if gain_of[sid] / total >= c.anchor_alignment
    ]
    # A claim word that an aligned sentence also says in the same slot is stated, whatever else the evidence says.
    candidates = [
        (i, t, opposite)
        for i, t, opposite in candidates
        if not any(
            _shares_context(tokens, i, s, j, c.anchor_window) for s, _ in aligned for j in s.positions.get(t.stem, ())
        )
    ]
    for s, align in aligned:
        for i, t, opposite in candidates:
            if t.stem in s.stems:
                continue
            for o in opposite & s.stems:
                for j in s.positions[o]:
                    if t.stem in TIME_UNITS and (counted(claim_stems, i) or counted(s.stem_list, j)):
                        continue  # "two years" / "24 months": a quantity, compared as one
                    w = c.anchor_window
                    if _shares_context(tokens, i, s, j, w) and _negated_near(claim_stems, i, w) == _negated_near(
                        s.stem_list, j, w
                    ):
                        reason = f"{t.text!r} where the evidence says the opposite"
                        return Cue(s, reason, c.antonym_strength * max(align, c.slot_min_alignment))
    return None


def anchored_negation(
    tokens, ev, gain_of: dict, total: float, c: HeuristicConfig = DEFAULT_CONFIG, *, by_denial: bool = False
) -> Cue | None:
    """A claim word negated on one side only, in the same slot of the well-aligned evidence sentences ("they can't
    try other beers" against "you can try other beers"). The word is one of the first two content words after a
    negation cue on one side, the other side has no negation cue near it at all (a negation placed elsewhere, "no
    public transport is available" / "public transport is not available", is no conflict), the words around it
    share another content word, and no aligned sentence has it in the claim's polarity.

    With `by_denial` (the `denied_clause` cue) it looks instead for a claim word found only in evidence clauses
    that deny a word the claim affirms ("XML is not supported" against "supports JSON and XML"): the clause
    denies it as a whole. Without coreference a pronoun's clause can look the same ("Aspirin is not recommended
    for children. It is recommended for adults."), so that cue doubts by default."""
    claim_stems = stems_of_claim(tokens)  # a "No," that answers the question negates nothing
    claim_set = set(claim_stems)
    claim_heads = negated_heads(claim_stems)
    if by_denial and claim_heads:
        return None  # a denial conflicts with an affirmed claim only
    aligned = [
        (ev.sentences[sid], gain_of[sid] / total)
        for sid in sorted(gain_of, key=gain_of.get, reverse=True)[: c.max_anchored]
        if gain_of[sid] / total >= c.anchor_alignment
    ]
    if not claim_heads and not any(s.negations for s, _ in aligned):
        return None
    heads = [negated_heads(s.stem_list) if s.negations else {} for s, _ in aligned]
    # Clauses that deny a word the claim affirms: the whole clause is in the other polarity.
    denying = [
        by_denial and bool(s_heads) and not claim_heads and any(s.stem_list[m] in claim_set for m in s_heads)
        for (s, _), s_heads in zip(aligned, heads, strict=True)
    ]
    if by_denial and not any(denying):
        return None  # the common case: no clause denies what the claim says
    # The negation's scope is the clause: a sentence that negates as often as the claim (in another place, as a
    # passive or reordered sentence does) says the same thing, so only sentences of the other polarity can conflict.
    claim_parity = count_negations(claim_stems) % 2
    for i, t in enumerate(tokens):
        if t.stop or len(t.stem) < 3:
            continue
        conflict, agrees = None, False
        for (s, align), s_heads, denies in zip(aligned, heads, denying, strict=True):
            for j in s.positions.get(t.stem, ()):
                reach = c.negation_reach
                if s.negations % 2 == claim_parity:
                    agrees = True
                    continue
                if (
                    i in claim_heads
                    and not _negation_near(s.stem_list, j, reach)
                    and not _undone(claim_heads, i, tokens, s)
                ):
                    side = "claim"
                elif j in s_heads and not _negation_near(claim_stems, i, reach) and not by_denial:
                    side = "evidence"
                elif by_denial and denies and not _negation_near(claim_stems, i, reach):
                    conflict = conflict or (s, align, "evidence clause")  # the denied word is the slot
                    continue
                else:
                    agrees = True
                    continue
                if conflict is None and _shares_context(tokens, i, s, j, c.anchor_window):
                    conflict = (s, align, side)
        if conflict and not agrees and (side_of(conflict) == "evidence clause") == by_denial:
            s, align, side = conflict
            reason = f"{t.text!r} negated in the {side} only"
            return Cue(s, reason, c.slot_negation_strength * max(align, c.slot_min_alignment))
    return None


def side_of(conflict: tuple) -> str:
    """The side a conflict of `anchored_negation` was found on."""
    return conflict[2]


def _is_negation_at(stems, k: int) -> bool:
    st = stems[k]
    if not (st in NEGATION_STEMS or st.endswith("n't")):
        return False
    following = stems[k + 1] if k + 1 < len(stems) else ""
    # "not only" intensifies and "no 1" is a rank: neither negates.
    return not (st == "not" and following in ("only", "just")) and not (st == "no" and following[:1].isdigit())


# Prepositions that carry a negation on to the next content word ("not guilty to murder").
_LINKS = frozenset("to of for in on at with from by".split())


def negated_heads(stems) -> dict:
    """Positions of the content words a negation cue denies, to the cue's: the first content word after it, and the
    next one when it follows at once or after a preposition ("can't try different wines", "not guilty to the murder";
    not "'It's No Good', the album")."""
    out = {}
    if NEGATION_STEMS.isdisjoint(stems):
        return out  # the common case: no negation at all (the usual contractions are listed cues)
    for k in range(len(stems)):
        if _is_negation_at(stems, k):
            for m in range(k + 1, min(len(stems), k + 5)):
                if stems[m] not in STOP_STEMS and stems[m] not in NEGATION_STEMS:
                    out[m] = k
                    following = m + 1
                    if following < len(stems) and stems[following] in _LINKS:
                        following += 1
                        while following < len(stems) and stems[following] in ("a", "an", "the"):
                            following += 1
                    if (
                        following < len(stems)
                        and stems[following] not in STOP_STEMS
                        and not stems[following][:1].isdigit()
                    ):
                        out[following] = k
                    break
    return out


def _undone(heads: dict, i: int, tokens, s) -> bool:
    """Whether the negation over claim word i also covers a word the evidence states in its opposite form: a double
    negation ("did not hire unsuitable builders" / "hired suitable builders") that agrees."""
    for m, cue in heads.items():
        if cue == heads[i] and m != i:
            st = tokens[m].stem
            if (ANTONYMS.get(st, frozenset()) | negated_forms(st, s.stems)) & s.stems:
                return True
    return False


def _negation_near(stems, i: int, reach: int) -> bool:
    return any(_is_negation_at(stems, k) for k in range(max(0, i - reach), min(len(stems), i + reach + 1)))


# Relations that hold both ways ("Smith met Jones" is "Jones met Smith"), and words that join a list.
_SYMMETRIC = frozenset(
    """and or with meet met marry married wed play played face faced tie tied draw drew vs versus against between
    partner partnered join joined collaborate collaborated talk talked discuss discussed merge merged""".split()
)


def _relation(stems, first: int, second: int) -> frozenset | None:
    """The content words between two positions (the relation they stand in), or None for a symmetric one or none."""
    between = stems[first + 1 : second]
    if not between or any(st in _SYMMETRIC for st in between):
        return None
    content = frozenset(st for st in between if st not in STOP_STEMS or st in ("than", "by"))
    return content or None


def swapped_roles(tokens, s, c: HeuristicConfig = DEFAULT_CONFIG) -> Cue | None:
    """Two names of the claim that the aligned evidence sentence has the other way round around the same relation
    ("Leeds beat York" / "York beat Leeds", "Lyon is larger than Paris" / "Paris is larger than Lyon"). Symmetric
    relations ("met", "and") are no swap, and evidence that also has the claim's order contradicts nothing."""
    positions = s.positions
    names = [(i, t) for i, t in enumerate(tokens) if t.capital and not t.stop and t.stem in positions]
    if len(names) < 2:
        return None
    stems = [t.stem for t in tokens]
    for a, (i, x) in enumerate(names):
        for k, y in names[a + 1 :]:
            if x.stem == y.stem or k - i > c.role_span:
                continue
            relation = _relation(stems, i, k)
            if relation is None or not any(st not in ("than", "by") for st in relation):
                continue
            if any(tokens[m].capital for m in range(i + 1, k)):
                continue  # a name in between: a list or a longer name, not a relation
            same = other = False
            for px in s.positions[x.stem]:
                for py in s.positions[y.stem]:
                    if 0 < py - px <= c.role_span and _relation(s.stem_list, px, py) == relation:
                        same = True
                    elif 0 < px - py <= c.role_span and _relation(s.stem_list, py, px) == relation:
                        other = True
            if other and not same:
                return Cue(s, f"{x.text!r} and {y.text!r} the other way round in the evidence", c.role_strength)
    return None


_PREPOSITIONS = frozenset("in at from to by on of into near".split())


def anchored_name_swap(
    tokens, items, ev, gain_of: dict, total: float, c: HeuristicConfig = DEFAULT_CONFIG
) -> Cue | None:
    """A name of the claim found nowhere in the evidence, in a slot where a well-aligned evidence sentence has
    another name: the same content word before it and the same preposition right before the name ("born in
    Mutschelleben" against "born on 5 July 1767 in Montbeliard"). The aligned sentences need not line up word for
    word (a claim's slot often sits in a longer evidence sentence)."""
    nowhere = {i for it in items if not it.support and it.quantity is None for i in it.token_ids}
    names = [i for i in sorted(nowhere) if tokens[i].capital and tokens[i].start > 0 and not tokens[i].stop]
    if not names:
        return None
    claim_stems = {t.stem for t in tokens}
    aligned = [
        ev.sentences[sid]
        for sid in sorted(gain_of, key=gain_of.get, reverse=True)[: c.max_anchored]
        if gain_of[sid] / total >= c.anchor_alignment
    ]
    for i in names:
        if i < 2 or tokens[i - 1].stem not in _PREPOSITIONS or tokens[i - 1].capital or len(tokens[i].text) < 3:
            continue  # the name must follow a preposition ("in", "at", "from", "by")
        prep = tokens[i - 1].stem
        anchor = next((k for k in range(i - 2, max(-1, i - 5), -1) if not tokens[k].stop), None)
        if anchor is None or tokens[anchor].capital:
            continue
        for s in aligned:
            words = _words_of(s)
            for j in s.positions.get(tokens[anchor].stem, ()):
                for m in range(j + 2, min(len(words), j + c.name_reach + 1)):
                    w = words[m]
                    if s.stem_list[m - 1] == prep and w[:1].isupper() and s.stem_list[m] not in claim_stems:
                        if s.stem_list[m] in STOP_STEMS or len(w) < 3:
                            continue
                        return Cue(s, f"{tokens[i].text!r} where the evidence has {w!r}", c.name_swap_strength)
    return None


def _words_of(s) -> list[str]:
    """The words of an evidence sentence as written (capitals kept), parallel to its stems."""
    return WORD_PATTERN.findall(s.text, s.start, s.end)


# Words that leave what follows uncertain: evidence that says "a reportedly carcinogenic chemical" does not state that
# it is carcinogenic. ("likely" is left out: its stem is the one of "like".)
_HEDGES = frozenset(
    stem(w)
    for w in """reportedly allegedly alleged apparently possibly probably supposedly purportedly presumably seemingly
    perhaps may might could""".split()
)
_HEDGE_SKIP = frozenset(stem(w) for w in "be been being have has had".split())  # "may have caused"


def _hedged_word(stems, j: int) -> int | None:
    """The position of the content word a hedge at j makes uncertain ("reportedly carcinogenic", "may have
    caused"), or None (a number after it: "May 2020" is a month)."""
    k = j + 1
    while k < len(stems) and stems[k] in _HEDGE_SKIP:
        k += 1
    if k >= len(stems) or stems[k] in STOP_STEMS or stems[k][:1].isdigit():
        return None
    return k


def _stated_plainly(word_stem: str, ev, reach: int) -> bool:
    """Whether some evidence sentence has the word with no hedge in the few words before it."""
    for sid in ev.postings.get(word_stem, ()):
        stems = ev.sentences[sid].stem_list
        for k in ev.sentences[sid].positions[word_stem]:
            if _HEDGES.isdisjoint(stems[max(0, k - reach) : k]):
                return True
    return False


def dropped_hedge(tokens, ev, gain_of: dict, total: float, c: HeuristicConfig = DEFAULT_CONFIG) -> Cue | None:
    """A claim word that a well-aligned evidence sentence states only under a hedge ("a carcinogenic chemical"
    against "a reportedly carcinogenic chemical", "the drug causes" against "the drug may cause"): the claim states
    as fact what the evidence leaves uncertain. The slot is the word after the hedge with the same neighbour on one
    side; a claim that hedges anywhere, or evidence that also states the word plainly, is no conflict."""
    if ev.postings.keys().isdisjoint(_HEDGES):
        return None  # the evidence never hedges (the common case)
    claim = [t.stem for t in tokens]
    if not _HEDGES.isdisjoint(claim):
        return None  # the claim hedges too
    for sid in sorted(gain_of, key=gain_of.get, reverse=True)[: c.max_anchored]:
        s, align = ev.sentences[sid], gain_of[sid] / total
        hedges = _HEDGES & s.stems if align >= c.hedge_alignment else ()
        stems = s.stem_list
        for j in sorted(j for h in hedges for j in s.positions[h]):
            k = _hedged_word(stems, j)
            if k is None or stems[k] not in claim:
                continue
            for i, t in enumerate(tokens):
                if t.stem != stems[k]:
                    continue
                same_left = i > 0 and j > 0 and claim[i - 1] == stems[j - 1]
                same_right = i + 1 < len(claim) and k + 1 < len(stems) and claim[i + 1] == stems[k + 1]
                # One shared function word is a weak slot: a content word on one side, or a neighbour on both.
                content = (same_left and claim[i - 1] not in STOP_STEMS) or (
                    same_right and claim[i + 1] not in STOP_STEMS
                )
                if not (content or (same_left and same_right)) or _stated_plainly(t.stem, ev, c.hedge_reach):
                    continue
                hedge = _words_of(s)[j]
                if hedge[:1].islower():  # "Theresa May said" names no hedge
                    return Cue(s, f"{t.text!r} stated as fact where the evidence says {hedge!r}", c.hedge_strength)
    return None
