"""Context relevance, answer relevance and the empty-retrieval flag: offline, lexical and cheap.

A passage is relevant when it is about what the query asks. The score is a BM25-style saturated, weighted
coverage of the query's content words by the passage, with the verifier's own text resources::

    context_relevance("What is the waiting period for dental crowns?",
                      "Major dental services such as crowns have a 12-month waiting period.")   # 1.0
    context_relevance("What is the waiting period for dental crowns?",
                      "Vision exams are covered once every 24 months.")                          # 0.0

How it is computed (see docs/retrieval.md):

- the query's *terms* are the stems (`transforms.text.tokens.stem`) of its content words, each weighted by
  `word_weight` (names and long rare words most, common words little, function words and question-frame
  words such as "explain" or "what" nothing: `transforms.text.query_words`);
- a term's frequency in the passage counts its own stem, a synonym's stem (`synonym_stems`) at
  `synonym_credit`, and, when neither occurs, a word sharing its first `prefix_chars` letters at
  `prefix_credit` ("deductible" / "deduction");
- that frequency is saturated as in BM25 (`k1`, with length normalisation `b` against `avg_len` content
  words) and divided by the saturation of one mention in a passage of average length, capped at 1: one
  mention covers a term, a longer passage needs more mentions for the same credit;
- the relevance is the weighted mean of the terms' credits, in [0, 1]. A query with no content word scores 0.

Answer relevance is the same coverage of the query by the answer's claim sentences, without length
normalisation (a thorough answer is not penalised); sentences that claim nothing (abstentions, greetings,
lead-ins: `transforms.text.claims`) are left out, so "I can't tell you the copay for X" addresses nothing.
Retrieval is *empty* when no passage scores at least `empty_threshold` (chosen on the labelled examples in
tests/data/retrieval; `scripts/bench_relevance.py` prints its precision and recall).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from transforms.text.claims import non_claim_kind
from transforms.text.query_words import QUESTION_FRAME_WORDS
from transforms.text.sentences import split_sentences
from transforms.text.synonyms import synonym_stems
from transforms.text.tokens import stem, tokenize, word_weight

__all__ = [
    "DEFAULT_CONFIG",
    "RelevanceConfig",
    "RetrievalScores",
    "answer_relevance",
    "clear_caches",
    "context_relevance",
    "is_empty_retrieval",
    "query_terms",
    "score_retrieval",
]


@dataclass(frozen=True)
class RelevanceConfig:
    """The tunable weights of the relevance scores, in one place."""

    k1: float = 1.2
    """BM25 term-frequency saturation: higher lets repeated mentions count for longer."""
    b: float = 0.5
    """BM25 length normalisation for passages, 0 (none) to 1 (full)."""
    avg_len: float = 50.0
    """Content words of a typical passage, the length at which one mention earns full credit."""
    synonym_credit: float = 0.8
    """A synonym's mention counts this much of the word's own."""
    prefix_credit: float = 0.6
    """A word sharing the term's first `prefix_chars` letters counts this much (a related form)."""
    prefix_chars: int = 6
    """Letters two stems must share to count as related forms; the query's must be at least this long."""
    empty_threshold: float = 0.6
    """Retrieval is empty when no passage's relevance reaches this."""

    def __post_init__(self) -> None:
        if self.k1 <= 0 or not 0.0 <= self.b <= 1.0 or self.avg_len <= 0:
            raise ValueError(f"need k1 > 0, b in [0, 1], avg_len > 0; got {self.k1}, {self.b}, {self.avg_len}")
        if not 0.0 <= self.empty_threshold <= 1.0:
            raise ValueError(f"empty_threshold must be in [0, 1], got {self.empty_threshold}")


DEFAULT_CONFIG = RelevanceConfig()
_FRAME_STEMS = frozenset(stem(w) for w in QUESTION_FRAME_WORDS) | QUESTION_FRAME_WORDS


@dataclass(frozen=True)
class RetrievalScores:
    """One response's retrieval scores: per passage, their mean and maximum, the answer's, and the flag."""

    passage_relevance: dict[str, float]
    mean_context_relevance: float | None
    max_context_relevance: float | None
    answer_relevance: float | None
    empty_retrieval: bool


@lru_cache(maxsize=4096)
def query_terms(query: str) -> tuple[tuple[str, float], ...]:
    """The query's content stems with their weights (the highest when a stem repeats), in order of appearance."""
    weights: dict[str, float] = {}
    for token in tokenize(query):
        if token.stop or token.stem in _FRAME_STEMS or token.text.lower() in QUESTION_FRAME_WORDS:
            continue
        w = word_weight(token)
        if w > 0:
            weights[token.stem] = max(w, weights.get(token.stem, 0.0))
    return tuple(weights.items())


class _Bag(NamedTuple):
    counts: Counter[str]
    prefixes: Counter[str]
    length: int


@lru_cache(maxsize=4096)
def _bag(text: str, prefix_chars: int) -> _Bag:
    """The stem counts of a text's content words (cached like `tokenize`: passages repeat across responses)."""
    stems = [t.stem for t in tokenize(text) if not t.stop]
    prefixes = Counter([s[:prefix_chars] for s in stems if len(s) >= prefix_chars])
    return _Bag(Counter(stems), prefixes, len(stems))


def _merge(texts: Iterable[str], prefix_chars: int) -> _Bag:
    counts: Counter[str] = Counter()
    prefixes: Counter[str] = Counter()
    for text in texts:
        bag = _bag(text, prefix_chars)
        counts.update(bag.counts)
        prefixes.update(bag.prefixes)
    return _Bag(counts, prefixes, sum(counts.values()))


def _frequency(term: str, bag: _Bag, config: RelevanceConfig) -> float:
    counts = bag.counts
    tf = float(counts.get(term, 0))
    for s in synonym_stems(term):
        tf += config.synonym_credit * counts.get(s, 0)
    if tf == 0 and len(term) >= config.prefix_chars:
        tf = config.prefix_credit * bag.prefixes.get(term[: config.prefix_chars], 0)
    return tf


def _coverage(terms: Sequence[tuple[str, float]], bag: _Bag, config: RelevanceConfig, b: float) -> float:
    total = sum(w for _, w in terms)
    if total == 0:
        return 0.0
    k = config.k1 * (1.0 - b + b * bag.length / config.avg_len)
    got = 0.0
    for term, w in terms:
        tf = _frequency(term, bag, config)
        if tf > 0:
            # Equals 1 for one mention at average length (k == k1 there), so one mention covers a term.
            got += w * min(1.0, tf * (config.k1 + 1.0) / (tf + k))
    return got / total


def context_relevance(query: str, passage: str, config: RelevanceConfig = DEFAULT_CONFIG) -> float:
    """How much `passage` is about `query`, in [0, 1]: the saturated, weighted coverage of its content words."""
    return _coverage(query_terms(query), _bag(passage, config.prefix_chars), config, config.b)


def _claim_sentences(answer: str) -> list[str]:
    return [s for s in split_sentences(answer) if non_claim_kind(s) is None]


def answer_relevance(
    query: str,
    answer: str,
    config: RelevanceConfig = DEFAULT_CONFIG,
    *,
    claim_sentences: Sequence[str] | None = None,
) -> float:
    """How much `answer` addresses `query`, in [0, 1]: coverage of the query by its claim sentences (0 if none).

    Pass `claim_sentences` when the audit has already split the answer and set its non-claims aside: the split
    is most of this function's cost.
    """
    claims = _claim_sentences(answer) if claim_sentences is None else [s for s in claim_sentences if s.strip()]
    if not claims:
        return 0.0
    return _coverage(query_terms(query), _merge(claims, config.prefix_chars), config, 0.0)


def is_empty_retrieval(relevances: Iterable[float], config: RelevanceConfig = DEFAULT_CONFIG) -> bool:
    """Whether no passage is relevant: none reaches `config.empty_threshold` (true for no passages at all)."""
    return not any(r >= config.empty_threshold for r in relevances)


def score_retrieval(
    query: str,
    passages: Mapping[str, str],
    answer: str | None = None,
    config: RelevanceConfig = DEFAULT_CONFIG,
    *,
    claim_sentences: Sequence[str] | None = None,
) -> RetrievalScores:
    """All retrieval scores of one response: `passages` maps evidence id to text; no answer, no answer score.

    `claim_sentences`, when given, are the answer's claim sentences as the audit split them (see
    `answer_relevance`)."""
    per = {pid: context_relevance(query, text, config) for pid, text in passages.items()}
    values = list(per.values())
    return RetrievalScores(
        passage_relevance=per,
        mean_context_relevance=sum(values) / len(values) if values else None,
        max_context_relevance=max(values) if values else None,
        answer_relevance=(
            None if answer is None else answer_relevance(query, answer, config, claim_sentences=claim_sentences)
        ),
        empty_retrieval=is_empty_retrieval(values, config),
    )


def clear_caches() -> None:
    """Forget the cached query terms and passage stem counts (for benchmarks that measure a cold start)."""
    query_terms.cache_clear()
    _bag.cache_clear()
