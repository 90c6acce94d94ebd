"""The offline heuristic sentence verifier: word, number and date alignment against the evidence, no network.

For each sentence it finds the evidence sentences that cover its content words
best (IDF-like word weights, light stems, listed synonyms and abbreviations),
checks every number, unit, date, time and duration exactly (a gap between two
evidence times supports a stated duration), looks for a different value of the
same quantity, a bound or share the claim drops ("600" / "more than 600", "ten
dollars a day" / "ten dollars each a day"), a flipped negation, an antonym or a swapped name in the
best-aligned evidence sentence (contradiction: "founded in Paris" against
"founded in London"), an antonym, another word of the same closed class ("red" /
"blue", "murder" / "manslaughter") or a one-sided negation in the same slot of
any well-aligned one, names the other way round around the same relation
("Leeds beat York" / "York beat Leeds") or a name in the slot of another
("born in Gdansk" / "born on 5 July 1867 in Warsaw"), a word the evidence states
only under a hedge ("a toxic gas" / "a reportedly toxic gas"), a quotation the evidence gives with another
word inside it (a misquote), checks that a quoted title appears word for word, and reports what no passage
supports as exact spans of the sentence::

    result = HeuristicVerifier().verify(["Lab results showed potassium at 3.1 mmol/L."], passages)
    result.verdicts[0].attribution_verdict   # AttributionVerdict.contradicted; result.decided_by == ("heuristic",)

Verdicts: contradicted when an asserting contradiction cue fired (a cue caps
`p` below 0.5 however much of the rest is supported); fully_grounded when the
probability `p` below is >= 0.5 (and no unsupported clause); ungrounded when
under `ungrounded_coverage` of it is supported; partially_grounded otherwise.
A cue in `doubt` mode (`HeuristicConfig.cues`; by default the one that fires
when a not-grounded claim puts its own words in place of its aligned evidence
sentence's, under 0.6 of the time right on labelled data) never makes a
sentence contradicted: it keeps it from being grounded and pulls `p` halfway
to 0.5, so its confidence drops and a cascade escalates it.

`confidence` is the confidence in the verdict given. Every sentence gets a
probability `p` of being fully grounded (coverage, local coverage, bigram and
content-bigram overlap, words absent from the evidence, unmatched quantities,
names and superlatives, contradiction strength; every weight, threshold and cue mode is a field of
`transforms.verify.heuristic.config.HeuristicConfig`, re-derived with grouped cross-validation by
`scripts/fit_heuristic.py`); the verdict's `confidence` is p for fully_grounded and its complement for
the rest (`schemas.verdict_confidence`), so `verdict.grounded_probability` is p again, for ROC curves,
calibration and thresholds.
Pieces: `transforms.text.sentences` (splitting), `transforms.text.tokens` (tokens,
stems, weights, cues), `transforms.text.synonyms`, `transforms.text.quantities` (numbers,
units, dates, times), `transforms.verify.heuristic.evidence_index`, `transforms.verify.heuristic.alignment`,
`transforms.verify.heuristic.contradiction` and `transforms.verify.heuristic.slot_cues` (cues in the claim's
slot of an evidence sentence: antonyms, one-sided negations, swapped roles, dropped hedges).
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas import AttributionVerdict, EvidencePassage, SentenceVerdict, verdict_confidence
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.heuristic.alignment import SentenceAnalysis, analyse_sentence, index_evidence
from transforms.verify.heuristic.config import DEFAULT_CONFIG, HeuristicConfig

__all__ = [
    "MAX_SENTENCE_CHARS",
    "UNGROUNDED_COVERAGE",
    "HeuristicVerifier",
    "analysed_verdict",
    "verify_sentence",
]

MAX_SENTENCE_CHARS = DEFAULT_CONFIG.max_sentence_chars
"""Characters of one sentence the default verifier reads (`HeuristicConfig.max_sentence_chars`)."""

UNGROUNDED_COVERAGE = DEFAULT_CONFIG.ungrounded_coverage
"""The default verifier's `HeuristicConfig.ungrounded_coverage`."""


def _verdict_of(a: SentenceAnalysis, c: HeuristicConfig) -> tuple[AttributionVerdict, float]:
    """The verdict and the spec's confidence in it, from the analysis' grounded probability."""
    # Never certain (`max_confidence`): the probability is squeezed into [1 - max, max], keeping its order.
    p = (1.0 - c.max_confidence) + (2.0 * c.max_confidence - 1.0) * a.grounded_probability
    if a.contradictions and p < c.support_threshold:
        verdict = AttributionVerdict.contradicted
    elif p >= c.support_threshold:
        verdict = AttributionVerdict.fully_grounded
    elif a.coverage < c.ungrounded_coverage or not a.sources:
        verdict = AttributionVerdict.ungrounded
    else:
        verdict = AttributionVerdict.partially_grounded
    return verdict, round(verdict_confidence(verdict, p), 4)


def verify_sentence(index: int, sentence: str, evidence, config: HeuristicConfig = DEFAULT_CONFIG) -> SentenceVerdict:
    """The verdict on one sentence against indexed evidence (see `alignment.index_evidence`)."""
    return analysed_verdict(index, sentence, evidence, config)[0]


def analysed_verdict(
    index: int, sentence: str, evidence, config: HeuristicConfig = DEFAULT_CONFIG
) -> tuple[SentenceVerdict, SentenceAnalysis]:
    """The verdict on one sentence and the analysis behind it (which cues fired: `scripts/fit_heuristic.py`)."""
    limit = config.max_sentence_chars
    a = analyse_sentence(sentence[:limit], evidence, config)
    if len(sentence) > limit:
        # A "sentence" this long is a run-on or bad input: check its start, and never call the unread rest grounded.
        a.grounded_probability = min(a.grounded_probability, config.unread_cap)
        a.notes.append(f"only the first {limit} of {len(sentence)} characters were checked")
    verdict, confidence = _verdict_of(a, config)
    contradicted = verdict == AttributionVerdict.contradicted
    out = SentenceVerdict(
        sentence_index=index,
        sentence_text=sentence,
        attribution_verdict=verdict,
        confidence=confidence,
        supporting_evidence_ids=[s.doc_id for s in a.sources],
        supporting_evidence_excerpts=[s.excerpt for s in a.sources],
        unsupported_spans=[] if verdict == AttributionVerdict.fully_grounded else a.unsupported_spans,
        contradicting_evidence_ids=[c.doc_id for c in a.contradictions] if contradicted else [],
        contradicting_evidence_excerpts=[c.excerpt for c in a.contradictions] if contradicted else [],
        multi_source_flag=len({s.doc_id for s in a.sources}) >= 2,
        provenance_notes="; ".join(
            [a.provenance_notes()] + ([f"contradiction: {c.reason}" for c in a.contradictions] if contradicted else [])
        ).strip("; "),
    )
    return out, a


class HeuristicVerifier(Verifier):
    """Offline verifier: aligns words, numbers, dates and negations of each sentence with the evidence."""

    name = "heuristic"
    version = "30"

    def __init__(self, config: HeuristicConfig | dict | None = None):
        if config is None:
            config = DEFAULT_CONFIG
        elif isinstance(config, dict):  # from `--verifier-option config={...}` or a JSON file
            config = HeuristicConfig.model_validate(config)
        elif not isinstance(config, HeuristicConfig):
            raise TypeError(f"config must be a HeuristicConfig or a dict, got {type(config).__name__}")
        self.config = config

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        indexed = index_evidence([(p.doc_id, p.content) for p in evidence])
        c = self.config
        verdicts = [verify_sentence(i, s, indexed, c) for i, s in enumerate(sentences)]
        return VerificationResult.decided(self.name, verdicts)
