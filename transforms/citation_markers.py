"""The citation audit (spec 002): every citation in an answer checked against the passage it names.

(First part: how a verifier verdict maps to the spec's claim support level. The audit follows.)
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas import AttributionVerdict, ClaimSupportLevel, EvidencePassage, SentenceVerdict
from transforms.verifier import Verifier

__all__ = ["SUPPORT_FOR_VERDICT", "judge_support"]

SUPPORT_FOR_VERDICT = {
    AttributionVerdict.fully_grounded: ClaimSupportLevel.SUPPORTS,
    AttributionVerdict.partially_grounded: ClaimSupportLevel.PARTIALLY_SUPPORTS,
    AttributionVerdict.contradicted: ClaimSupportLevel.CONTRADICTS,
    AttributionVerdict.ungrounded: ClaimSupportLevel.UNRELATED,
}
"""A claim the cited passage fully grounds is SUPPORTS; one it says nothing about is UNRELATED."""


def judge_support(
    claim: str, passages: Sequence[EvidencePassage], verifier: Verifier
) -> tuple[ClaimSupportLevel, SentenceVerdict]:
    """How the given passage(s) support one claim, judged as one sentence by the verifier."""
    verdict = verifier.verify([claim], list(passages))[0]
    return SUPPORT_FOR_VERDICT[verdict.attribution_verdict], verdict
