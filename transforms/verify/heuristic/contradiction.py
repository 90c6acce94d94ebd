"""Contradiction cues for the heuristic verifier: a different value, a flipped negation, an antonym, a swapped name.

Each cue needs an evidence sentence that is clearly about the same thing (it
covers much of the claim's weight), so that "3.1 mmol/L" is contradicted by
"potassium at 4.2 mmol/L" but not by an unrelated number elsewhere. An antonym
or a negated form ("unsuitable" / "suitable") may also come from a less aligned
evidence sentence when the words around it share a content word with the
claim's words around it (the same slot) and neither side alone is negated;
likewise a word negated on one side only ("can't try the wines" / "can try the
wines"), and two names the other way round around the same relation ("Leeds
beat York" / "York beat Leeds"): those slot cues live in `transforms.verify.heuristic.slot_cues`.
A quotation the evidence gives with another content word inside it is a misquote::

    find_contradictions(tokens, items, evidence_index, gain_of, total)   # called by analyse_sentence
    misquotation(sentence, evidence_index)                              # likewise, when no other cue fired
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

from transforms.text.quantities import Quantity, same_value
from transforms.text.quotes import find_quotes
from transforms.text.synonyms import synonym_stems
from transforms.text.tokens import (
    ANTONYMS,
    CONVERSES,
    NEGATION_STEMS,
    STOP_STEMS,
    WORD_PATTERN,
    count_negations,
    stem,
    stems_of_claim,
    tokenize,
)
from transforms.verify.heuristic.config import DEFAULT_CONFIG, HeuristicConfig
from transforms.verify.heuristic.evidence_index import one_edit
from transforms.verify.heuristic.slot_cues import (
    anchored_name_swap,
    anchored_negation,
    anchored_opposite,
    dropped_hedge,
    negated_forms,
    negated_heads,
    swapped_roles,
)

__all__ = ["Contradiction", "find_contradictions", "misquotation", "replaced_and_added"]


@dataclass
class Contradiction:
    """Evidence that states a different value, the opposite polarity or an antonym of the claim."""

    doc_id: str
    excerpt: str
    reason: str
    strength: float
    cue: str = ""
    """Which cue found it (a name of `config.CUES`)."""
    asserts: bool = True
    """Whether it makes the sentence contradicted (its cue's mode is `assert`), or only lowers confidence."""


def _converse_order(claim: list[str], i: int, evidence: list[str], j: int) -> str:
    """Whether a converse word (claim[i], against evidence[j]) keeps its two sides in the evidence's order
    ("kept": a contradiction, "A before B" / "A after B"), swaps them ("swapped": the same relation, "A before
    B" / "B after A"), or the content words around it cannot tell ("unclear")."""

    def side(stems: list[str]) -> set[str]:
        return {st for st in stems if st not in STOP_STEMS}

    left, right = side(claim[:i]), side(claim[i + 1 :])
    e_left, e_right = side(evidence[:j]), side(evidence[j + 1 :])
    if not (left and right and e_left and e_right):  # a fronted clause: "Before the vote, the council met."
        return "unclear"
    kept = len(left & e_left) + len(right & e_right)
    swapped = len(left & e_right) + len(right & e_left)
    return "kept" if kept > swapped else "swapped" if swapped > kept else "unclear"


def _compatible(a: Quantity, b: Quantity) -> bool:
    """Whether two quantities measure the same kind of thing, so that different values conflict."""
    if a.kind == "date" and b.kind == "date":
        return any(x is not None and y is not None and x != y for x, y in zip(a.value, b.value, strict=True))
    if {a.kind, b.kind} <= {"year", "date"} and a.kind != b.kind:
        return False
    return a.kind == b.kind and a.unit == b.unit


def _excerpt(s) -> str:
    return s.text[s.start : s.end]


def _neighbours(tokens, ids) -> set:
    """Stems of the content words right before and after a quantity: what a bare number counts ("five goals")."""
    out = set()
    for i in (min(ids) - 1, max(ids) + 1):
        if 0 <= i < len(tokens) and not tokens[i].stop:
            out.add(tokens[i].stem)
    return out


def _quantity_conflicts(tokens, items, ev, gain_of: dict, total: float, c: HeuristicConfig) -> list[Contradiction]:
    found = []
    claimed = [it.quantity for it in items if it.quantity is not None]
    for it in items:
        q = it.quantity
        if q is None or it.support:
            continue
        first = it.token_ids[0] if it.token_ids else 0
        near = {t.stem for i, t in enumerate(tokens) if not t.stop and i not in it.token_ids and abs(i - first) <= 5}
        bare = q.kind == "number" and not q.unit
        counted = _neighbours(tokens, it.token_ids) if bare and it.token_ids else set()
        best = None
        for eq, sid in ev.quantities:
            # An evidence value that the claim states elsewhere ("17th title" vs "aged 37") conflicts with nothing.
            if not _compatible(q, eq) or any(same_value(c, eq) for c in claimed if c is not q):
                continue
            s = ev.sentences[sid]
            if bare and not counted & {stem(w) for w in WORD_PATTERN.findall(s.text, eq.start - 30, eq.end + 30)}:
                continue  # a bare number must count the same thing as the evidence number
            align = gain_of.get(sid, 0.0) / total
            strong = align >= c.quantity_alignment
            if (strong or (near & s.stems and (q.unit or align >= c.quantity_near_alignment))) and (
                best is None or align > best[0]
            ):
                best = (align, eq, s)
        if best:
            align, eq, s = best
            reason = f"{q.text!r} but the evidence says {eq.text!r}"
            found.append(Contradiction(s.doc_id, _excerpt(s), reason, min(1.0, c.quantity_strength + align)))
    return found


# Words that bound a number ("more than 600", "up to 5 years") and words that make it a share ("three euros each"):
# evidence that gives the number only with one of them does not state the bare number, and a claim that drops it (or
# bounds it the other way) says something else ("600 firefighters" against "more than 600 firefighters").
_BOUNDS = {
    phrase: direction
    for direction, phrases in (
        ("more", "more than|over|at least|above|exceeding|upwards of|in excess of"),
        ("less", "less than|fewer than|under|at most|up to|below|nearly|almost"),
    )
    for phrase in phrases.split("|")
}
_BOUND_BEFORE = re.compile(r"\b(" + "|".join(_BOUNDS) + r")\W{0,3}$", re.IGNORECASE)
# "each" shares out only at the end of its phrase ("ten dollars each a day", "two goals each."); before a noun it is a
# determiner ("10,000 visitors each year").
_SHARE_AFTER = re.compile(
    r"\W+(?:[^\W\d]+\W+)?(?:apiece|per person|per head|a head|each(?=\W*$|\s*[^\w\s]|\s+(?:a|an|per|for|in|on|at|to"
    r"|and|or|but|with|from|by)\b))",
    re.IGNORECASE,
)
_QUALIFIER_STEMS = frozenset(
    stem(w)
    for w in """more over least above exceeding upwards excess less fewer under most up below nearly almost each apiece
    per head""".split()
)
_BOUND_WORDS = {tuple(phrase.split()): direction for phrase, direction in _BOUNDS.items()}


def _claim_bound(words_before: list[str]) -> str | None:
    low = [w.lower() for w in words_before[-3:]]
    for n in (3, 2, 1):
        if len(low) >= n and tuple(low[-n:]) in _BOUND_WORDS:
            return _BOUND_WORDS[tuple(low[-n:])]
    return None


def _evidence_bound(s, eq) -> str | None:
    m = _BOUND_BEFORE.search(s.text, max(s.start, eq.start - 20), eq.start)
    if not m or (eq.kind == "duration" and m.group(1).lower() in ("over", "under")):
        return None  # "over three days" is a stretch of time, not more than three days
    return _BOUNDS[m.group(1).lower()]


def _dropped_qualifiers(tokens, items, ev, c: HeuristicConfig) -> list[Contradiction]:
    """A claim number that the evidence gives only with a bound or as a share, stated bare or bounded the other way
    ("600 firefighters" / "more than 600 firefighters", "three euros a day" / "three euros each a day")."""
    found = []
    for it in items:
        q = it.quantity
        if q is None or not it.support or q.kind not in ("number", "duration") or not it.token_ids:
            continue
        bounded, shared = {}, {}  # the evidence's bound (or None) and whether it is a share -> one such number
        for sid in it.support:
            s = ev.sentences[sid]
            if _QUALIFIER_STEMS.isdisjoint(s.stems):
                bounded.setdefault(None, None)  # no bound or share word at all: its numbers are bare
                shared.setdefault(False, None)
                continue
            for eq in s.quantities:
                if same_value(q, eq):
                    bounded.setdefault(_evidence_bound(s, eq), (eq, s))
                    shared.setdefault(bool(_SHARE_AFTER.match(s.text, eq.end, min(s.end, eq.end + 40))), (eq, s))
        if len(bounded) == 1 and None in bounded and True not in shared:
            continue  # the common case: the evidence states the bare number
        first, last = it.token_ids[0], it.token_ids[-1] + 1
        claim_bound = _claim_bound([t.text for t in tokens[max(0, first - 3) : first] if t.end <= q.start])
        claim_share = " ".join(t.text for t in tokens[last : last + 3] if t.start >= q.end)
        if claim_bound not in bounded and bounded.keys() - {None}:
            bound = next(b for b in bounded if b is not None)
            (eq, s), what = bounded[bound], f"{bound} than"
        elif list(shared) == [True] and not _SHARE_AFTER.match(" " + claim_share):
            (eq, s), what = shared[True], "each"
        else:
            continue
        reason = f"{q.text!r} where the evidence says {what} {eq.text!r}"
        found.append(Contradiction(s.doc_id, _excerpt(s), reason, c.qualifier_strength))
    return found


def _is_name(t) -> bool:
    return t.capital and t.start > 0 and not t.stop and len(t.text) > 1


def _substitutions(tokens, items, s, gain: float, total: float, c: HeuristicConfig) -> list[Contradiction]:
    """Names of the claim put in place of different words of an aligned evidence sentence (an entity swap:
    "founded in Paris" against "founded in London", "Evolution Learner" against "Concept Learner").

    The alignment is judged on the claim without the swapped words (a name weighs much, so a short sentence with a
    wrong name never covers most of its weight), and a name found nowhere in the evidence may replace any content
    word; a name found elsewhere in the evidence only one that the claim does not use (else it is a reordering).
    """
    if not any(_is_name(t) and t.stem not in s.stems for t in tokens):
        return []  # no name the aligned sentence lacks: nothing can be swapped (and no alignment to compute)
    claim = [t.stem for t in tokens]
    claim_stems = set(claim)
    nowhere = {i for it in items if not it.support and it.quantity is None for i in it.token_ids}
    weight_of = {i: it.weight for it in items for i in it.token_ids}
    for op, i1, i2, j1, j2 in SequenceMatcher(None, claim, s.stem_list, autojunk=False).get_opcodes():
        if op != "replace" or i2 - i1 > 6 or j2 - j1 > 6 or i1 == 0:
            continue
        # Only names: a common word put in place of another is far more often a paraphrase than a contradiction.
        new = [i for i in range(i1, i2) if not _said_in(tokens[i].stem, s.stems) and _is_name(tokens[i])]
        new = [i for i in new if not any(one_edit(tokens[i].stem, x) for x in s.stem_list[j1:j2])]  # spelling
        words = WORD_PATTERN.findall(s.text, s.start, s.end)[j1:j2]
        content = [w for w in words if w.lower() not in STOP_STEMS]
        # An acronym's letters may come from its function words too ("PTO" / "paid time off").
        new = [i for i in new if not (_abbreviates(tokens[i].text, content) or _abbreviates(tokens[i].text, words))]
        other = [x for x in s.stem_list[j1:j2] if x not in STOP_STEMS and x not in NEGATION_STEMS and len(x) > 2]
        if not any(i in nowhere for i in new):
            other = [x for x in other if x not in claim_stems]
        new_weight = sum(c.word_weight(tokens[i]) for i in new)
        rest = total - sum(weight_of.get(i, 0.0) for i in new if i in nowhere)
        align = min(1.0, gain / rest) if rest > 0 else 0.0
        if new_weight >= c.substitution_min_weight and other and align >= c.substitution_alignment:
            said = " ".join(tokens[i].text for i in new)
            was = " ".join(words)
            reason = f"{said!r} where the evidence has {was!r}"
            return [Contradiction(s.doc_id, _excerpt(s), reason, c.substitution_strength * align)]
    return []


def _said_in(word_stem: str, stems) -> bool:
    """Whether a sentence has the word or a listed synonym of it (a paraphrase is no replacement)."""
    return word_stem in stems or not synonym_stems(word_stem).isdisjoint(stems)


def replaced_and_added(tokens, s, config: HeuristicConfig = DEFAULT_CONFIG) -> tuple[float, float, str]:
    """Claim weight that replaces other words of an aligned evidence sentence, and weight it simply adds.

    A replacement means the evidence says something else in that slot (a conflict); an addition means the
    evidence says nothing about it (unsupported). Returns both weights and the first replacing phrase.
    """
    claim = [t.stem for t in tokens]
    claim_stems = set(claim)
    replaced = added = 0.0
    example = ""
    for op, i1, i2, j1, j2 in SequenceMatcher(None, claim, s.stem_list, autojunk=False).get_opcodes():
        if op not in ("replace", "delete"):
            continue
        new = sum(config.word_weight(t) for t in tokens[i1:i2] if not _said_in(t.stem, s.stems))
        other = (
            [x for x in s.stem_list[j1:j2] if x not in claim_stems and x not in STOP_STEMS] if op == "replace" else []
        )
        if other and 0 < i1 and i2 < len(claim):
            replaced += new
            if new and not example:
                example = " ".join(t.text for t in tokens[i1:i2])
        else:
            added += new
    return replaced, added, example


def _abbreviates(short: str, words: list[str]) -> bool:
    """Whether an all-capital word abbreviates the words ("USA" / "United States", "TV" / "television"): same first
    letter, and its letters in order within them."""
    if not (2 <= len(short) <= 6 and short.isupper() and words):
        return False
    joined = "".join(words).lower()
    if not joined.startswith(short[0].lower()):
        return False
    rest = iter(joined[1:])
    return all(ch in rest for ch in short[1:].lower())


_CONDITIONS = frozenset(
    stem(w) for w in ("if", "unless", "when", "whenever", "once", "until", "except", "only", "that", "which", "who")
)
"""Words that make two negations one condition or one relative clause rather than two denials side by side."""


def _negated_on_one_side(claim_stems: list[str], evidence_stems: list[str]) -> bool:
    """Whether a word one side negates (`negated_heads`) stands on the other side only plainly: "is paid out"
    against "does not carry over and is not paid out"."""

    def split(stems: list[str]) -> tuple[set[str], set[str]]:
        heads = negated_heads(stems)
        negated = {stems[m] for m in heads}
        plain = {st for k, st in enumerate(stems) if k not in heads and st not in STOP_STEMS}
        return negated, plain - negated

    claim_negated, claim_plain = split(claim_stems)
    evidence_negated, evidence_plain = split(evidence_stems)
    return bool(claim_negated & evidence_plain or evidence_negated & claim_plain)


def find_contradictions(
    tokens, items, ev, gain_of: dict, total: float, config: HeuristicConfig = DEFAULT_CONFIG
) -> list[Contradiction]:
    """Contradiction cues of one sentence against indexed evidence (see `transforms.verify.heuristic.alignment`).

    Each carries its cue's name and whether it asserts (`config.cues`); a cue in `doubt` mode is returned with
    `asserts=False` and does not keep the later cues from being tried, a cue `off` is not tried at all.
    """
    if not total:
        return []
    c = config
    found: list[Contradiction] = []  # the asserting ones: the later cues are tried only while there is none
    doubts: list[Contradiction] = []

    def keep(cue: str, conflicts) -> None:
        for x in conflicts:
            x.cue, x.asserts = cue, c.asserts(cue)
            (found if x.asserts else doubts).append(x)

    modes = c.cues
    if modes.quantity != "off":
        keep("quantity", _quantity_conflicts(tokens, items, ev, gain_of, total, c))
    if not found and modes.dropped_qualifier != "off":
        keep("dropped_qualifier", _dropped_qualifiers(tokens, items, ev, c))
    if not gain_of:
        return found + doubts
    best = max(gain_of, key=gain_of.get)
    align = gain_of[best] / total
    s = ev.sentences[best]
    claim_stems = stems_of_claim(tokens)  # a "No," that answers the question negates nothing
    claim_set = set(claim_stems)
    claim_neg = count_negations(claim_stems)
    # Evidence that denies two things side by side ("does not carry over and is not paid out"): the parity of its
    # negations says nothing, the words it denies do. Not where either side has a condition or a relative clause
    # ("if the form is not signed, the claim is not processed"): there two negations are one double negation.
    denials = s.negations >= 2 and _CONDITIONS.isdisjoint(s.stem_list) and _CONDITIONS.isdisjoint(claim_stems)
    if modes.negation != "off" and align >= c.negation_alignment and denials:
        if _negated_on_one_side(claim_stems, s.stem_list):
            reason = "negation differs from the evidence"
            keep("negation", [Contradiction(s.doc_id, _excerpt(s), reason, c.negation_strength * align)])
    elif modes.negation != "off" and align >= c.negation_alignment and (claim_neg % 2) != (s.negations % 2):
        # A negation on one side must deny something the other side states ("does not serve wine" is no conflict
        # with an aligned sentence about the opening of the bar, nor a song called "No Good" with a claim about the
        # album).
        if claim_neg % 2:
            denies_it = any(claim_stems[m] in s.stems for m in negated_heads(claim_stems))
        else:
            prefixes = {st[:5] for st in claim_stems}  # "renewable" is denied, "renewed" claimed
            denies_it = any(s.stem_list[m][:5] in prefixes for m in negated_heads(s.stem_list))
        if denies_it:
            reason = "negation differs from the evidence"
            keep("negation", [Contradiction(s.doc_id, _excerpt(s), reason, c.negation_strength * align)])
    # An antonym under a negation on one side only agrees ("not allowed" / "banned"): no antonym cue then.
    if modes.antonym != "off" and align >= c.antonym_alignment and (claim_neg % 2) == (s.negations % 2):
        for t in tokens:
            if t.stem in s.stems:
                continue
            # Forbidding words ("banned") count as negations already: the parity test above covers them.
            opposite = (ANTONYMS.get(t.stem, frozenset()) - NEGATION_STEMS) | negated_forms(t.stem, s.stems)
            if opposite & s.stems and not opposite & claim_set:
                reason = f"{t.text!r} where the evidence says the opposite"
                keep("antonym", [Contradiction(s.doc_id, _excerpt(s), reason, c.antonym_strength * align)])
                break
    if not found and align >= c.antonym_alignment and (claim_neg % 2) == (s.negations % 2):
        for i, t in enumerate(tokens):
            partner = CONVERSES.get(t.stem, frozenset())
            if t.stem in s.stems or not partner & s.stems or partner & claim_set:
                continue
            j = next(k for k, st in enumerate(s.stem_list) if st in partner)
            order = _converse_order(claim_stems, i, s.stem_list, j)
            strength = c.antonym_strength * align
            if order == "kept" and modes.antonym != "off":  # "opened before the election" / "opened after" it
                reason = f"{t.text!r} where the evidence says the opposite"
                keep("antonym", [Contradiction(s.doc_id, _excerpt(s), reason, strength)])
            elif order == "unclear" and modes.converse != "off":
                reason = f"{t.text!r} where the evidence has its converse, with its two sides unclear"
                keep("converse", [Contradiction(s.doc_id, _excerpt(s), reason, strength)])
            break  # "swapped": the same relation from the other end ("six days before discharge")
    for name, slot_cue in (
        ("anchored_opposite", anchored_opposite),
        ("anchored_negation", anchored_negation),
        ("denied_clause", _denied_clause),
        ("dropped_hedge", dropped_hedge),
    ):
        cue = None if found or modes.of(name) == "off" else slot_cue(tokens, ev, gain_of, total, c)
        if cue:
            keep(name, [Contradiction(cue.sentence.doc_id, _excerpt(cue.sentence), cue.reason, cue.strength)])
    if not found and modes.swapped_roles != "off" and align >= c.role_alignment:
        role_cue = swapped_roles(tokens, s, c)
        if role_cue:
            keep("swapped_roles", [Contradiction(s.doc_id, _excerpt(s), role_cue.reason, role_cue.strength * align)])
    if not found and modes.substitution != "off" and align >= c.substitution_gate:
        keep("substitution", _substitutions(tokens, items, s, gain_of[best], total, c))
    if not found and modes.anchored_name_swap != "off":
        cue = anchored_name_swap(tokens, items, ev, gain_of, total, c)
        if cue:
            swap = Contradiction(cue.sentence.doc_id, _excerpt(cue.sentence), cue.reason, cue.strength)
            keep("anchored_name_swap", [swap])
    return found + doubts


_BRACKETED = re.compile(r"\[[^\]]*\]")


def _denied_clause(tokens, ev, gain_of: dict, total: float, c: HeuristicConfig):
    """`anchored_negation` looking for clauses that deny what the claim affirms; first the cheap tests that rule
    nearly every claim out (no evidence sentence it aligns with negates anything, or the claim negates itself)."""
    if not any(ev.sentences[sid].negations for sid in gain_of):
        return None
    if not NEGATION_STEMS.isdisjoint(t.stem for t in tokens):
        return None
    return anchored_negation(tokens, ev, gain_of, total, c, by_denial=True)


def misquotation(sentence: str, ev, config: HeuristicConfig = DEFAULT_CONFIG) -> Contradiction | None:
    """A quotation the evidence gives with other words inside it: "a specific braking issue that could result in a
    loss of propulsion" quoted from "a specific electrical connection issue that could result in a loss of
    propulsion". The evidence sentence must give most of the quotation's words in order, and the claim's word must
    stand where the evidence has a different content word, between words both share; a quotation the evidence only
    paraphrases, words the claim leaves out or adds at its ends, and words it puts in square brackets (its own), are
    no conflict."""
    for quote in find_quotes(sentence):
        # Words in square brackets are the quoter's own ("[the company] will recall"), as are citation markers.
        tokens = tokenize(_BRACKETED.sub(" ", quote.text))
        stems = [t.stem for t in tokens]
        if len(stems) < config.quote_words or ev.contains_run(stems):
            continue
        shared = Counter(sid for st in set(stems) - STOP_STEMS for sid in ev.postings.get(st, ()))
        for sid, _ in shared.most_common(3):
            s = ev.sentences[sid]
            ops = SequenceMatcher(None, stems, s.stem_list, autojunk=False).get_opcodes()
            equal = [op for op in ops if op[0] == "equal"]
            if sum(i2 - i1 for _, i1, i2, _, _ in equal) < config.quote_matched * len(stems):
                continue
            first, last = equal[0][1], equal[-1][2]  # the quotation's words between its first and last shared run
            for op, i1, i2, j1, j2 in ops:
                if op != "replace" or i1 < first or i2 > last:
                    continue
                ours = [t.text for t in tokens[i1:i2] if not t.stop and not _said_in(t.stem, s.stems)]
                theirs = [w for w in s.stem_list[j1:j2] if w not in STOP_STEMS and w not in stems]
                if ours and theirs:
                    words = " ".join(WORD_PATTERN.findall(s.text, s.start, s.end)[j1:j2])
                    reason = f"quotes {' '.join(ours)!r} where the evidence reads {words!r}"
                    return Contradiction(s.doc_id, _excerpt(s), reason, config.misquote_strength, "misquotation")
    return None
