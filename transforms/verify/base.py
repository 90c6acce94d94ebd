"""The one small interface every sentence verifier implements, and the scoring they share.

A verifier turns an answer's sentences and the evidence into `SentenceVerdict`s;
it does not split the answer, score it or raise flags: `audit_sentences` does
that the same way for the heuristic verifier, the LLM judge and the cascade::

    report, decided_by = audit_sentences("resp-1", answer, passages, verifier, threshold=0.7)
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import date

from schemas import (
    INSUFFICIENT_EVIDENCE,
    AttributionVerdict,
    EvidencePassage,
    SentenceAuditReport,
    SentenceVerdict,
)
from transforms.text.sentences import split_sentences

__all__ = [
    "DEFAULT_CONFIDENCE_THRESHOLD",
    "Verifier",
    "audit_sentences",
    "build_report",
    "critical_flags",
    "faithfulness_score",
]

DEFAULT_CONFIDENCE_THRESHOLD = 0.7

# How much of a sentence each verdict counts as supported, for the answer's faithfulness score.
_SUPPORT_WEIGHT = {
    AttributionVerdict.fully_grounded: 1.0,
    AttributionVerdict.partially_grounded: 0.5,
    AttributionVerdict.ungrounded: 0.0,
    AttributionVerdict.contradicted: 0.0,
}


class Verifier(abc.ABC):
    """Judges sentences against evidence passages; interchangeable by the `--verifier` flag."""

    name: str = "verifier"
    version: str = "0"

    @abc.abstractmethod
    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> list[SentenceVerdict]:
        """One verdict per sentence, in order, with `sentence_index` = position in `sentences`."""

    def decided_by(self, verdicts: Sequence[SentenceVerdict]) -> list[str]:
        """Which verifier decided each verdict; a cascade overrides this."""
        return [self.name] * len(verdicts)


def faithfulness_score(verdicts: Sequence[SentenceVerdict]) -> float:
    """Mean support of the sentences (fully 1, partially 0.5, otherwise 0); 0 when there are none."""
    if not verdicts:
        return 0.0
    return sum(_SUPPORT_WEIGHT[v.attribution_verdict] for v in verdicts) / len(verdicts)


def critical_flags(verdicts: Sequence[SentenceVerdict], threshold: float) -> list[str]:
    """One flag per ungrounded or contradicted sentence and per sentence under the confidence threshold."""
    flags = []
    for v in verdicts:
        if v.attribution_verdict in (AttributionVerdict.ungrounded, AttributionVerdict.contradicted):
            flags.append(f"sentence {v.sentence_index}: {v.attribution_verdict.value}")
        if v.confidence < threshold:
            flags.append(f"sentence {v.sentence_index}: confidence {v.confidence:.2f} below {threshold:.2f}")
    return flags


def build_report(
    answer_id: str,
    verdicts: Sequence[SentenceVerdict],
    *,
    threshold: float,
    verification_date: date,
    evidence_empty: bool = False,
) -> SentenceAuditReport:
    """Score verdicts into the spec's report; empty evidence gives no sentences and INSUFFICIENT_EVIDENCE."""
    if evidence_empty:
        return SentenceAuditReport(
            answer_id=answer_id,
            verification_date=verification_date.isoformat(),
            sentences=[],
            overall_faithfulness_score=0.0,
            critical_flags=[INSUFFICIENT_EVIDENCE],
        )
    return SentenceAuditReport(
        answer_id=answer_id,
        verification_date=verification_date.isoformat(),
        sentences=list(verdicts),
        overall_faithfulness_score=faithfulness_score(verdicts),
        critical_flags=critical_flags(verdicts, threshold),
    )


def audit_sentences(
    answer_id: str,
    answer: str,
    evidence: Sequence[EvidencePassage],
    verifier: Verifier,
    *,
    threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
    verification_date: date,
) -> tuple[SentenceAuditReport, list[str]]:
    """Split, verify and score one answer; returns the report and who decided each sentence."""
    has_evidence = any(p.content.strip() for p in evidence)
    if not has_evidence:
        return build_report(
            answer_id, [], threshold=threshold, verification_date=verification_date, evidence_empty=True
        ), []
    verdicts = verifier.verify(split_sentences(answer), evidence)
    report = build_report(answer_id, verdicts, threshold=threshold, verification_date=verification_date)
    return report, verifier.decided_by(verdicts)
