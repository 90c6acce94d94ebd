"""The one small interface every sentence verifier implements, and the scoring they share.

A verifier turns an answer's sentences and the evidence into `SentenceVerdict`s;
it does not split the answer, score it or raise flags: `audit_sentences` does
that the same way for the heuristic verifier, the LLM judge and the cascade::

    result = verifier.verify(sentences, passages)   # a VerificationResult
    result.verdicts, result.decided_by, result.judge_status, result.judge_calls
    report, result = audit_sentences("resp-1", answer, passages, verifier, threshold=0.7)

`verify()` returns everything it decided in its result and keeps nothing about
the call on the verifier, so one verifier can serve several threads at once and
no caller reads another answer's judge status.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from schemas import (
    INSUFFICIENT_EVIDENCE,
    AttributionVerdict,
    EvidencePassage,
    SentenceAuditReport,
    SentenceVerdict,
)
from schemas.judge import JudgeCallRow
from transforms.text.sentences import split_sentences

__all__ = [
    "DEFAULT_CONFIDENCE_THRESHOLD",
    "NO_VERDICTS",
    "VerificationResult",
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


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """What one `Verifier.verify()` call decided: the verdicts, who decided each, and the judge's part in it."""

    verdicts: tuple[SentenceVerdict, ...]
    """One verdict per sentence, in order, with `sentence_index` = position in the sentences given."""
    decided_by: tuple[str, ...]
    """The verifier that decided each verdict ("heuristic", "openai", ...), one per verdict."""
    judge_status: str | None = None
    """How the judge call for this answer ended ("judged", "judge_validation_failed", "judge_error");
    None when no sentence went to a judge."""
    judge_calls: tuple[JudgeCallRow, ...] = ()
    """The judge's call log for this answer (rows of the `judge_calls` table)."""

    def __post_init__(self):
        # Lists are accepted and frozen into tuples: a result may be shared (cached, passed between threads).
        for field in ("verdicts", "decided_by", "judge_calls"):
            if not isinstance(getattr(self, field), tuple):
                object.__setattr__(self, field, tuple(getattr(self, field)))
        if len(self.decided_by) != len(self.verdicts):
            raise ValueError(f"{len(self.verdicts)} verdicts but {len(self.decided_by)} decided_by entries")

    @classmethod
    def decided(cls, name: str, verdicts: Sequence[SentenceVerdict]) -> VerificationResult:
        """Every verdict decided by the verifier `name`, no judge involved: the result of a plain verifier."""
        return cls(tuple(verdicts), (name,) * len(verdicts))


NO_VERDICTS = VerificationResult((), ())
"""The result for an answer that was not verified (no evidence): no verdicts, no judge."""


class Verifier(abc.ABC):
    """Judges sentences against evidence passages; interchangeable by the `--verifier` flag.

    `verify()` must keep no per-call state on the verifier: one instance may serve several threads at once.
    """

    name: str = "verifier"
    version: str = "0"

    @abc.abstractmethod
    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        """The verdicts on `sentences`, one per sentence in order, with who decided each and the judge's log."""


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
) -> tuple[SentenceAuditReport, VerificationResult]:
    """Split, verify and score one answer; returns the report and the verifier's result
    (`NO_VERDICTS` when there is no evidence: the verifier is not called)."""
    has_evidence = any(p.content.strip() for p in evidence)
    if not has_evidence:
        report = build_report(
            answer_id, [], threshold=threshold, verification_date=verification_date, evidence_empty=True
        )
        return report, NO_VERDICTS
    result = verifier.verify(split_sentences(answer), evidence)
    report = build_report(answer_id, result.verdicts, threshold=threshold, verification_date=verification_date)
    return report, result
