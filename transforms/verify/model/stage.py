"""The model stage as plain functions: pick the evidence sentences to score, score them, turn scores into verdicts.

    verdicts = model_verdicts(scorer, sentences, evidence, indexes=[0, 2], top_k=3, batch_size=32)

Candidates: the heuristic's alignment ranks the evidence sentences by the claim weight each supports
(`SentenceAnalysis.ranked`); the best `top_k` (default 3) are scored as (evidence sentence, claim) pairs. A claim
that shares no word with any evidence sentence is scored against the first `top_k` sentences of the evidence,
so a paraphrase still gets a look.

Verdicts, from the pair with the highest entailment probability (`best`) and the one with the highest
contradiction probability:

- fully_grounded when entailment is strictly the largest of `best`'s three probabilities; supporting evidence = that
  sentence;
- contradicted when, otherwise, a pair's contradiction probability is its largest and at least
  `contradiction_threshold` (default 0.5); contradicting evidence = that sentence (a binary head, which has no
  contradiction output, never says contradicted);
- else partially_grounded when the heuristic finds at least `UNGROUNDED_COVERAGE` of the claim's weight
  supported (supporting evidence = `best`'s sentence), ungrounded below it; unsupported spans are the heuristic's.

`confidence` is `best`'s entailment probability for fully_grounded and its complement otherwise, so
`verdict.grounded_probability` is the model's P(entailed), the raw score a calibration file maps. Excerpts are the
scored evidence sentences, cut from the passages (real substrings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from schemas import AttributionVerdict, EvidencePassage, SentenceVerdict
from transforms.verify.heuristic.alignment import SentenceAnalysis, analyse_sentence, index_evidence
from transforms.verify.heuristic.verifier import MAX_SENTENCE_CHARS, UNGROUNDED_COVERAGE
from transforms.verify.model.scorer import PairScorer, PairScores

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CONTRADICTION_THRESHOLD",
    "DEFAULT_TOP_K",
    "Candidate",
    "SentenceWork",
    "model_verdict",
    "model_verdicts",
    "plan_sentences",
    "verdicts_from_scores",
]

DEFAULT_TOP_K = 3
DEFAULT_BATCH_SIZE = 32
DEFAULT_CONTRADICTION_THRESHOLD = 0.5


class _Claim(TypedDict):
    """The fields every verdict on a claim starts from."""

    sentence_index: int
    sentence_text: str


class _Support(TypedDict, total=False):
    """The supporting evidence of a verdict, when it has some."""

    supporting_evidence_ids: list[str]
    supporting_evidence_excerpts: list[str]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One evidence sentence to score against a claim."""

    doc_id: str
    excerpt: str
    """The evidence sentence, a substring of its passage."""


@dataclass(frozen=True, slots=True)
class SentenceWork:
    """One claim to score: its index and text, the alignment's analysis, and its candidate evidence sentences."""

    index: int
    sentence: str
    analysis: SentenceAnalysis
    candidates: tuple[Candidate, ...]

    def pairs(self) -> list[tuple[str, str]]:
        return [(c.excerpt, self.sentence) for c in self.candidates]


def plan_sentences(
    sentences: Sequence[str], evidence: Sequence[EvidencePassage], indexes: Sequence[int], top_k: int
) -> list[SentenceWork]:
    """The claims at `indexes` with their `top_k` best-aligned evidence sentences."""
    ev = index_evidence([(p.doc_id, p.content) for p in evidence])
    fallback = tuple(Candidate(s.doc_id, s.text[s.start : s.end]) for s in ev.sentences[:top_k])
    work = []
    for i in indexes:
        analysis = analyse_sentence(sentences[i][:MAX_SENTENCE_CHARS], ev)
        ranked = tuple(
            Candidate(ev.sentences[sid].doc_id, ev.sentences[sid].text[ev.sentences[sid].start : ev.sentences[sid].end])
            for sid in analysis.ranked[:top_k]
        )
        work.append(SentenceWork(i, sentences[i], analysis, ranked or fallback))
    return work


def model_verdict(
    work: SentenceWork,
    scores: Sequence[PairScores],
    *,
    can_contradict: bool = True,
    contradiction_threshold: float = DEFAULT_CONTRADICTION_THRESHOLD,
) -> SentenceVerdict:
    """The verdict on one claim from the scores of its candidate pairs (rules in the module docstring)."""
    a = work.analysis
    base = _Claim(sentence_index=work.index, sentence_text=work.sentence)
    if not scores:
        return SentenceVerdict(
            **base, attribution_verdict=AttributionVerdict.ungrounded, confidence=1.0,
            unsupported_spans=[work.sentence], provenance_notes="model: no evidence sentence to score",
        )  # fmt: skip
    best = max(range(len(scores)), key=lambda k: scores[k].entailment)
    worst = max(range(len(scores)), key=lambda k: scores[k].contradiction)
    b, w = scores[best], scores[worst]
    note = (
        f"model: entailment {b.entailment:.2f} with {work.candidates[best].doc_id}, "
        f"contradiction {w.contradiction:.2f} with {work.candidates[worst].doc_id} ({len(scores)} scored)"
    )
    p = b.entailment
    support = _Support(
        supporting_evidence_ids=[work.candidates[best].doc_id],
        supporting_evidence_excerpts=[work.candidates[best].excerpt],
    )
    if p > max(b.neutral, b.contradiction):  # a tie is not "entailment wins"
        return SentenceVerdict(
            **base, **support, attribution_verdict=AttributionVerdict.fully_grounded, confidence=round(p, 6),
            provenance_notes=note,
        )  # fmt: skip
    contradicted = w.contradiction >= contradiction_threshold and w.contradiction >= max(w.entailment, w.neutral)
    if can_contradict and contradicted:
        return SentenceVerdict(
            **base, attribution_verdict=AttributionVerdict.contradicted, confidence=round(1.0 - p, 6),
            unsupported_spans=list(a.unsupported_spans),
            contradicting_evidence_ids=[work.candidates[worst].doc_id],
            contradicting_evidence_excerpts=[work.candidates[worst].excerpt],
            provenance_notes=note,
        )  # fmt: skip
    partial = a.coverage >= UNGROUNDED_COVERAGE and bool(a.sources)
    return SentenceVerdict(
        **base, **(support if partial else _Support()),
        attribution_verdict=AttributionVerdict.partially_grounded if partial else AttributionVerdict.ungrounded,
        confidence=round(1.0 - p, 6), unsupported_spans=list(a.unsupported_spans) or [work.sentence],
        provenance_notes=note,
    )  # fmt: skip


def verdicts_from_scores(
    work: Sequence[SentenceWork],
    scores: Sequence[PairScores],
    *,
    can_contradict: bool,
    contradiction_threshold: float = DEFAULT_CONTRADICTION_THRESHOLD,
) -> dict[int, SentenceVerdict]:
    """Verdicts by sentence index, from the scores of all the work's pairs in order (as `score` returned them)."""
    out, at = {}, 0
    for w in work:
        n = len(w.candidates)
        out[w.index] = model_verdict(
            w, scores[at : at + n], can_contradict=can_contradict, contradiction_threshold=contradiction_threshold
        )
        at += n
    return out


def model_verdicts(
    scorer: PairScorer,
    sentences: Sequence[str],
    evidence: Sequence[EvidencePassage],
    *,
    indexes: Sequence[int] | None = None,
    top_k: int = DEFAULT_TOP_K,
    batch_size: int = DEFAULT_BATCH_SIZE,
    contradiction_threshold: float = DEFAULT_CONTRADICTION_THRESHOLD,
) -> dict[int, SentenceVerdict]:
    """The model's verdicts on the sentences at `indexes` (all by default), by index."""
    indexes = range(len(sentences)) if indexes is None else indexes
    work = plan_sentences(sentences, evidence, indexes, top_k)
    pairs = [pair for w in work for pair in w.pairs()]
    scores = []
    for start in range(0, len(pairs), batch_size):
        scores.extend(scorer.score(pairs[start : start + batch_size]))
    return verdicts_from_scores(
        work, scores, can_contradict=scorer.labels.can_contradict, contradiction_threshold=contradiction_threshold
    )
