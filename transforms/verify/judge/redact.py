"""Masks personal data in what the judge log stores: e-mail addresses, phone numbers, ID-like numbers.

Redaction is for the log only (`judge_calls` rows and log messages); the judge
itself sees the text as logged, because a masked number could not be checked::

    redact_text("call 555-123-4567 or mail ann@example.org")  # 'call [PHONE] or mail [EMAIL]'
"""

from __future__ import annotations

import re

__all__ = ["redact_text"]

# Order matters: the specific shapes go first so a card number is not half-eaten as a phone number.
_PATTERNS = [
    (re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"), "[EMAIL]"),
    (re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), "[ID]"),  # US social security number shape
    (re.compile(r"\b(?:\d{4}[ -]){3}\d{1,7}\b"), "[ID]"),  # payment card in groups of four
    (re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{2,4}[\s.-])\d{3,4}[\s.-]\d{3,4}\b"), "[PHONE]"),
    (re.compile(r"\b[A-Z]{1,4}-?\d{6,}\b"), "[ID]"),  # record numbers such as MRN1234567 or AB-123456
    (re.compile(r"\b\d{8,}\b"), "[ID]"),  # long digit runs: account, policy, patient numbers
]


def redact_text(text: str) -> str:
    """The text with e-mail addresses, phone numbers and ID-like numbers replaced by placeholders."""
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text
