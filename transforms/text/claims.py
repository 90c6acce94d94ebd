"""Which answer sentences make a factual claim, and the plain text of those that do.

Generators write more than claims: lead-ins ("Here is what I found:"), labels ("**Medication:**"),
Markdown headers, greetings, sign-offs ("Let me know if you need more.") and abstentions ("The
documents do not say."). None of these can be grounded or ungrounded, so they are recognised here, kept
in the audit with their kind, and never verified, scored or routed to review::

    non_claim_kind("Let me know if you need more.")   # NonClaimKind.pleasantry
    non_claim_kind("Potassium was 4.1 mmol/L.")        # None: a claim
    plain = plain_claim("**Medication:** lisinopril 10 mg daily")
    plain.text                                          # 'Medication: lisinopril 10 mg daily'
    plain.original_span("lisinopril 10 mg")             # the same words, cut from the original sentence

`plain_claim` strips Markdown (bold, italics, code ticks, links, header marks, a leading lead-in such as
"Summary:") and keeps, for every character it keeps, its offset in the original sentence, so a span the
verifier reports on the plain text maps back to an exact substring of the original (markup inside the
span stays, as it is in the answer). The word lists live in `transforms.text.nonclaim_words`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from transforms.text import nonclaim_words as words

__all__ = ["CLAIM", "ClaimKind", "NonClaimKind", "PlainClaim", "is_claim", "non_claim_kind", "plain_claim"]


class ClaimKind(StrEnum):
    """What a sentence of an answer is: a claim to verify, or one of the kinds that states nothing."""

    claim = "claim"
    lead_in = "lead_in"
    """Announces what follows or labels it ("Summary:", "Here is what I found:", "**Dosage:**")."""
    abstention = "abstention"
    """Declines or says the evidence does not tell ("I don't know.", "The documents do not say.")."""
    formatting = "formatting"
    """Markdown structure with no sentence in it (a header, a rule, a table border)."""
    pleasantry = "pleasantry"
    """A greeting, thanks, a sign-off or an offer of more help."""


NonClaimKind = ClaimKind
"""The kinds other than `claim` (one enum, so the lake's `claim_kind` column takes every value)."""
CLAIM = ClaimKind.claim


def _compile(patterns: tuple[str, ...]) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


_ABSTENTION = _compile(words.ABSTENTIONS)
_LEAD_IN = _compile(words.LEAD_INS)
_PLEASANTRY = _compile(words.PLEASANTRIES)
_LEAD_IN_PREFIX = re.compile("|".join(f"(?:{p})" for p in words.LEAD_IN_PREFIXES), re.IGNORECASE)
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+")
_RULE = re.compile(r"^\s*(?:[-*_=]\s*){3,}$|^\s*\|?[\s:|-]*-{3,}[\s:|-]*\|?\s*$")
# Markup removed before verification: emphasis runs, code ticks, a link's brackets and target, table pipes.
_MARKUP = re.compile(
    r"\*{1,3}|(?<!\w)_{1,3}|_{1,3}(?!\w)|`+|^\s{0,3}#{1,6}\s+|^\s*>\s?|\]\([^)\s]*\)|(?<!\S)\[(?![^\]]*\d\])|\|"
)
_WORD = re.compile(r"[^\W_]+")
_CLOSING = " .!?;:,\u2026\"'\u201d\u2019)"


@dataclass(frozen=True)
class PlainClaim:
    """A sentence with its Markdown and lead-in stripped, and where each kept character was in the original."""

    original: str
    text: str
    offsets: tuple[int, ...]
    """`offsets[i]` is the index in `original` of `text[i]`."""

    def original_span(self, span: str) -> str:
        """The substring of the original sentence a span of the plain text came from (the span if not found)."""
        at = self.text.find(span)
        if at < 0 or not span:
            return span
        return self.original[self.offsets[at] : self.offsets[at + len(span) - 1] + 1]


def plain_claim(sentence: str) -> PlainClaim:
    """The sentence as the verifier should read it: no Markdown markup, no leading lead-in."""
    keep = [True] * len(sentence)
    for m in _MARKUP.finditer(sentence):
        for i in range(m.start(), m.end()):
            keep[i] = False
    chars = [(c, i) for i, c in enumerate(sentence) if keep[i]]
    text = "".join(c for c, _ in chars)
    # A lead-in before the claim ("Summary: the clinic opens at 9") adds words no passage has.
    lead = _LEAD_IN_PREFIX.match(text)
    if lead and _WORD.search(text[lead.end() :]):
        chars = chars[lead.end() :]
    while chars and chars[0][0].isspace():
        chars = chars[1:]
    while chars and chars[-1][0].isspace():
        chars = chars[:-1]
    return PlainClaim(sentence, "".join(c for c, _ in chars), tuple(i for _, i in chars))


def _normal(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return " ".join(text.split()).strip(_CLOSING)


def non_claim_kind(sentence: str) -> ClaimKind | None:
    """The kind of a sentence that makes no factual claim; None when it is a claim to verify."""
    if _RULE.match(sentence):
        return ClaimKind.formatting
    if _HEADER.match(sentence):
        return ClaimKind.formatting
    plain = plain_claim(sentence).text if any(c in sentence for c in "*_`[|>") else sentence
    norm = _normal(plain)
    if not _WORD.search(norm):
        return ClaimKind.formatting
    if _ABSTENTION.fullmatch(norm):
        return ClaimKind.abstention
    if _PLEASANTRY.fullmatch(norm):
        return ClaimKind.pleasantry
    if _LEAD_IN.fullmatch(norm):
        return ClaimKind.lead_in
    stripped = plain.rstrip()
    if stripped.endswith(":") and len(_WORD.findall(stripped)) <= words.LEAD_IN_MAX_WORDS:
        return ClaimKind.lead_in  # a label line: "Medication:", "Key findings from the chart:"
    return None


def is_claim(sentence: str) -> bool:
    """Whether the sentence makes a factual claim the verifiers should check."""
    return non_claim_kind(sentence) is None
