"""Masks for personal data in stored text: e-mail addresses, phone numbers and ID-like numbers.

    redact("Call +1 (555) 010-7788 or mail ann@example.org")
    # 'Call ███████████████████ or mail ███████████████'

Every mask has the length of what it hides, so character offsets into the text (the excerpts' places in a
passage, the unsupported spans in an answer) stay valid after masking. Masking is idempotent: the mask
character matches none of the patterns. What counts as ID-like: seven or more digits in groups of three or
more (joined by single spaces or dashes, as card, account and record numbers are written), a US social security
number (`123-45-6789`), or letters followed by five or more digits (`MRN-0048812`, `AB1234567`). Quantities
written with thousands separators (`1,250,000`), years, dates and dosages are not ID-like and stay.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "redact", "redact_all"]

MASK = "\u2588"
"""The mask character (a full block): one per character hidden."""

_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
_PHONE = r"(?<![\w.])(?:\+\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?)?\d{3,4}[ .-]\d{3,4}(?:[ .-]\d{2,4})?(?![\w.])"
_SSN = r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])"
_LETTERS_ID = r"(?<![\w-])[A-Za-z]{1,5}-?\d{5,}(?![\w-])"
_DIGIT_RUN = r"(?<![\w,.-])\d{3,}(?:[ -]\d{3,})*(?!\w|[,.-]\d)"
_PATTERN = re.compile("|".join(f"(?:{p})" for p in (_EMAIL, _SSN, _DIGIT_RUN, _PHONE, _LETTERS_ID)))
_MIN_ID_DIGITS = 7


def _mask(match: re.Match[str]) -> str:
    found = match.group(0)
    if found.replace(" ", "").replace("-", "").isdigit() and sum(c.isdigit() for c in found) < _MIN_ID_DIGITS:
        # a short plain number (a year, a count, a dose): only a phone-shaped one is masked
        return MASK * len(found) if re.fullmatch(_PHONE, found) else found
    return MASK * len(found)


def redact(text: str) -> str:
    """`text` with every e-mail address, phone number and ID-like number replaced by a mask of its length."""
    if not text:
        return text
    return _PATTERN.sub(_mask, text)


def redact_all(texts: list[str]) -> list[str]:
    """`redact` of each text."""
    return [redact(t) for t in texts]
