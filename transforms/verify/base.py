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

Only claims reach a verifier: `prepare_sentences` splits the answer, recognises the sentences that
state nothing (lead-ins, labels, headers, greetings, abstentions: `transforms.text.claims`) and strips
Markdown from the rest; `AnswerSentences.assemble` puts the claims' verdicts back among the non-claims,
with unsupported spans cut from the original sentence text. Non-claims keep their `claim_kind` and
count nowhere: not in the faithfulness score, the critical flags or the routing.
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
from transforms.text.claims import ClaimKind, PlainClaim, non_claim_kind, plain_claim
from transforms.text.sentences import split_sentences

__all__ = [
    "DEFAULT_CONFIDENCE_THRESHOLD",
    "NON_CLAIM_DECIDER",
    "NO_VERDICTS",
    "AnswerSentences",
    "VerificationResult",
    "Verifier",
    "audit_sentences",
    "build_report",
    "critical_flags",
    "faithfulness_score",
    "prepare_sentences",
]

NON_CLAIM_DECIDER = "claim_filter"
"""`decided_by` of a sentence recognised as no claim: no verifier looked at it."""

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


@dataclass(frozen=True, slots=True)
class AnswerSentences:
    """An answer cut into sentences, each either a claim (with its plain text) or the kind of non-claim it is."""

    sentences: tuple[str, ...]
    """The sentences as they stand in the answer (Markdown and all)."""
    kinds: tuple[ClaimKind, ...]
    plains: tuple[PlainClaim | None, ...]
    """The plain text of each claim (None for a non-claim)."""

    @property
    def claims(self) -> list[str]:
        """The claims' plain text, in order: what the verifier is given."""
        return [p.text for p in self.plains if p is not None]

    def assemble(self, claim_verdicts: Sequence[SentenceVerdict]) -> list[SentenceVerdict]:
        """Every sentence's verdict: the claims' (numbered in the answer, spans in the original text) and the
        non-claims' placeholders."""
        if len(claim_verdicts) != len(self.claims):
            raise ValueError(f"{len(self.claims)} claims but {len(claim_verdicts)} verdicts")
        verdicts, given = [], iter(claim_verdicts)
        for i, (sentence, kind, plain) in enumerate(zip(self.sentences, self.kinds, self.plains, strict=True)):
            if plain is None:
                verdicts.append(
                    SentenceVerdict(
                        sentence_index=i,
                        sentence_text=sentence,
                        attribution_verdict=AttributionVerdict.fully_grounded,
                        confidence=1.0,
                        claim_kind=kind.value,
                        provenance_notes=f"not a claim ({kind.value}): not verified",
                    )
                )
                continue
            v = next(given)
            spans = list(dict.fromkeys(plain.original_span(span) for span in v.unsupported_spans))
            verdicts.append(
                v.model_copy(update={"sentence_index": i, "sentence_text": sentence, "unsupported_spans": spans})
            )
        return verdicts

    def assemble_decided_by(self, claim_decided_by: Sequence[str]) -> tuple[str, ...]:
        """Who decided each sentence: the verifier's entries for claims, `NON_CLAIM_DECIDER` for the rest."""
        given = iter(claim_decided_by)
        return tuple(NON_CLAIM_DECIDER if p is None else next(given) for p in self.plains)

    def assemble_result(self, result: VerificationResult) -> VerificationResult:
        """The verifier's result on the claims, widened to every sentence of the answer."""
        return VerificationResult(
            tuple(self.assemble(result.verdicts)),
            self.assemble_decided_by(result.decided_by),
            judge_status=result.judge_status,
            judge_calls=result.judge_calls,
        )


def prepare_sentences(answer: str) -> AnswerSentences:
    """Split an answer and tell its claims (stripped of Markdown and lead-ins) from the sentences that state nothing."""
    sentences = split_sentences(answer)
    kinds, plains = [], []
    for sentence in sentences:
        kind = non_claim_kind(sentence)
        kinds.append(kind or ClaimKind.claim)
        plains.append(plain_claim(sentence) if kind is None else None)
    return AnswerSentences(tuple(sentences), tuple(kinds), tuple(plains))


def faithfulness_score(verdicts: Sequence[SentenceVerdict]) -> float:
    """Mean support of the claims (fully 1, partially 0.5, otherwise 0); 0 when there are no sentences, 1 when
    there are sentences but none claims anything (nothing unsupported was said)."""
    claims = [v for v in verdicts if v.is_claim]
    if not claims:
        return 1.0 if verdicts else 0.0
    return sum(_SUPPORT_WEIGHT[v.attribution_verdict] for v in claims) / len(claims)


def critical_flags(verdicts: Sequence[SentenceVerdict], threshold: float) -> list[str]:
    """One flag per ungrounded or contradicted claim and per claim under the confidence threshold."""
    flags = []
    for v in verdicts:
        if not v.is_claim:
            continue
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
        abstention=any(v.claim_kind == ClaimKind.abstention for v in verdicts),
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
    prepared = prepare_sentences(answer)
    claims = prepared.claims
    result = prepared.assemble_result(verifier.verify(claims, evidence) if claims else NO_VERDICTS)
    report = build_report(answer_id, result.verdicts, threshold=threshold, verification_date=verification_date)
    return report, result
