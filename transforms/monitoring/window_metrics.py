"""Window metrics: the audit figures of every window, for all traffic and per slice.

For each window and each slice (all traffic, each retriever_version, generator_model and tenant)
`WindowMetrics` computes: responses audited, sentences, mean and median sentence confidence, mean
and median attribution confidence (below), mean overall faithfulness (of the responses that claim something:
a refusal alone has no score), the shares of each sentence
verdict, attribution coverage and low-confidence claim rates (when claims are logged) and the
citation failure rate (when citations are audited), the abstention rate (the share of responses with a
sentence that declines or says the evidence does not tell), and the retrieval figures (when retrieval was
scored): mean context relevance, the empty-retrieval rate and the mean share of passages used. Where reviewers
labelled sentences, the metrics computed from the lake (`stats_from_rows` with the response's review counts,
`groundwatch metrics`) also hold how many sentences were reviewed and the share whose label agreed with the
verifier's verdict (`transforms.monitoring.review_agreement`), and the same for the random review sample alone
(responses routed `sample`: the unbiased estimate); the pipeline's own rows hold 0, and a bounded run computes
again from the lake the windows it read that hold a review (`pipelines.runner.window_metrics`).
The rows go to the lake's `window_metrics` table, which `groundwatch drift` reads::

    metrics = audited | "WindowMetrics" >> WindowMetrics()          # ("window_metrics", row) pairs
    (rows, metrics) | beam.Flatten() | "WriteAuditLake" >> WriteAuditLake(lake_dir)

The verifier's `confidence` is its confidence in the verdict it gave: a confidently `ungrounded`
sentence has a high one. What spec 000 asks to watch for a retriever regression ("a drop in average
confidence") is how sure the verifier is that sentences are supported: the window's *attribution
confidence* (`mean_attribution_confidence`, `median_attribution_confidence`) is the mean and median of its
sentences' `grounded_probability` (`schemas.SentenceVerdict.grounded_probability`, stored in the lake's
`sentences` table). The columns keep the name the published table, the alerts and the dashboards have always
used; their meaning is that one.

The figures are computed by plain functions over `ResponseStats`, built either from an
`AuditedResponse` (in the pipeline) or from lake rows (`stats_from_rows`), so both paths agree.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from schemas import AttributionVerdict, AuditedResponse
from schemas.base import utc_now
from schemas.monitoring import ALL_TRAFFIC, WindowMetricsRow

__all__ = [
    "UNKNOWN_SLICE",
    "MetricsAccumulator",
    "ResponseStats",
    "WindowMetrics",
    "compute_window_metrics",
    "slices_of",
    "stats_from_audited",
    "stats_from_rows",
    "window_metrics_row",
]

UNKNOWN_SLICE = "unknown"
"""The slice value of responses that did not log the dimension (e.g. no retriever_version)."""

_VERDICTS = (
    AttributionVerdict.fully_grounded,
    AttributionVerdict.partially_grounded,
    AttributionVerdict.ungrounded,
    AttributionVerdict.contradicted,
)


@dataclass(frozen=True)
class ResponseStats:
    """What one audited response contributes to the metrics of its window."""

    response_id: str
    window_start: datetime
    window_end: datetime
    tenant: str
    retriever_version: str | None
    generator_model: str | None
    confidences: tuple[float, ...]
    grounded_probabilities: tuple[float, ...]
    verdict_counts: tuple[int, ...]
    """Sentences judged fully grounded, partially grounded, ungrounded, contradicted."""
    faithfulness: float | None
    """`SentenceAuditReport.scored_faithfulness`: None for an answer that claims nothing (a refusal alone)."""
    insufficient_evidence: bool = False
    needs_review: bool = False
    abstained: bool = False
    """A sentence of the response declines or says the evidence does not tell."""
    claims: int | None = None
    covered_claims: float | None = None
    low_confidence_claims: float | None = None
    citations: int | None = None
    failed_citations: int | None = None
    reviewed: int = 0
    """Sentences a reviewer labelled (the latest label of each)."""
    agreed: int = 0
    """Of those, the sentences whose label is the verdict the verifier gave."""
    sampled: bool = False
    """The response is in the random review sample (route `sample`)."""
    context_relevance: float | None = None
    """The response's mean context relevance; None when retrieval was not scored (or it had no passage)."""
    empty_retrieval: bool | None = None
    passages_used_share: float | None = None


def slices_of(stats: ResponseStats) -> list[tuple[str, str]]:
    """The (dimension, value) slices a response belongs to, all traffic first."""
    return [
        (ALL_TRAFFIC, ALL_TRAFFIC),
        ("retriever_version", stats.retriever_version or UNKNOWN_SLICE),
        ("generator_model", stats.generator_model or UNKNOWN_SLICE),
        ("tenant", stats.tenant or UNKNOWN_SLICE),
    ]


def _score(value: Any) -> float | None:
    """A lake score as a float; None for null (NaN where pandas read it)."""
    return None if value is None or value != value else float(value)


def _claim_counts(count: int | None, coverage: float | None, low_rate: float | None) -> tuple:
    # The claim checker reports rates; back to counts so that a window's rate is pooled over its claims.
    if not count:
        return (count if count == 0 else None), None, None
    covered = coverage * count if coverage is not None else None
    low = low_rate * count if low_rate is not None else None
    return count, covered, low


def stats_from_audited(audited: AuditedResponse) -> ResponseStats:
    """The window-metrics contribution of one audited response."""
    response, report = audited.parsed.response, audited.report
    counts = [0, 0, 0, 0]
    claims_said = [s for s in report.sentences if s.is_claim]  # non-claims state nothing: no part of the figures
    for sentence in claims_said:
        counts[_VERDICTS.index(sentence.attribution_verdict)] += 1
    claims = audited.claims
    claim_count, covered, low = _claim_counts(
        len(claims.claims) if claims is not None else None,
        claims.attribution_coverage_rate if claims is not None else None,
        claims.low_confidence_claim_rate if claims is not None else None,
    )
    summary = audited.citations.summary if audited.citations is not None else None
    return ResponseStats(
        response_id=response.response_id,
        window_start=audited.window_start,
        window_end=audited.window_end,
        tenant=response.metadata.tenant,
        retriever_version=response.metadata.retriever_version,
        generator_model=response.metadata.generator_model,
        confidences=tuple(s.confidence for s in claims_said),
        grounded_probabilities=tuple(s.grounded_probability for s in claims_said),
        verdict_counts=tuple(counts),
        faithfulness=report.scored_faithfulness,
        insufficient_evidence="INSUFFICIENT_EVIDENCE" in report.critical_flags,
        needs_review=bool(audited.review and audited.review.needs_review),
        abstained=report.abstention,
        claims=claim_count,
        covered_claims=covered,
        low_confidence_claims=low,
        citations=summary.total_citations if summary is not None else None,
        failed_citations=summary.failed if summary is not None else None,
        **_retrieval_stats(audited),
    )


def _retrieval_stats(audited: AuditedResponse) -> dict[str, Any]:
    retrieval = audited.retrieval
    if retrieval is None:
        return {}
    return {
        "context_relevance": retrieval.mean_context_relevance,
        "empty_retrieval": retrieval.empty_retrieval,
        "passages_used_share": retrieval.passages_used_share,
    }


def stats_from_rows(
    response: Mapping[str, Any], sentences: Sequence[tuple[str, float, float]], reviews: tuple[int, int] = (0, 0)
) -> ResponseStats:
    """The same contribution rebuilt from a `responses` lake row and its claims' (verdict, confidence, grounded
    probability) from the `sentences` table, with its `(reviewed, agreed)` sentence counts
    (`review_agreement.review_counts`).

    Give the claims only (`claim_kind = 'claim'`, or null in a lake written before the column): the verdict
    counts come from them, since the responses row counts every sentence."""
    claim_count, covered, low = _claim_counts(
        response.get("claim_count"),
        response.get("attribution_coverage_rate"),
        response.get("low_confidence_claim_rate"),
    )
    return ResponseStats(
        response_id=response["response_id"],
        window_start=response["window_start"],
        window_end=response["window_end"],
        tenant=response["tenant"],
        retriever_version=response.get("retriever_version"),
        generator_model=response.get("generator_model"),
        confidences=tuple(float(c) for _, c, _ in sentences),
        grounded_probabilities=tuple(float(p) for _, _, p in sentences),
        verdict_counts=tuple(sum(1 for v, _, _ in sentences if str(v) == str(k.value)) for k in _VERDICTS),
        # None for an answer that claims nothing, also where a lake written before the null holds the spec's 1.
        faithfulness=None
        if not sentences and response.get("sentence_count")
        else _score(response.get("overall_faithfulness_score")),
        insufficient_evidence=bool(response.get("insufficient_evidence")),
        needs_review=bool(response.get("needs_review")),
        abstained=bool(response.get("abstention")),
        claims=claim_count,
        covered_claims=covered,
        low_confidence_claims=low,
        citations=response.get("citation_total"),
        failed_citations=response.get("citation_failed"),
        reviewed=reviews[0],
        agreed=reviews[1],
        sampled="sample" in (response.get("review_routes") or ()),
        context_relevance=response.get("mean_context_relevance"),
        empty_retrieval=response.get("empty_retrieval"),
        passages_used_share=response.get("passages_used_share"),
    )


@dataclass
class _RetrievalTotals:
    """Sums and counts of the retrieval figures, over the responses that have each (None is skipped, not 0)."""

    relevance_sum: float = 0.0
    relevance_n: int = 0
    empty: int = 0
    empty_n: int = 0
    used_sum: float = 0.0
    used_n: int = 0

    def add(self, stats: ResponseStats) -> None:
        if stats.context_relevance is not None:
            self.relevance_sum += stats.context_relevance
            self.relevance_n += 1
        if stats.empty_retrieval is not None:
            self.empty += int(stats.empty_retrieval)
            self.empty_n += 1
        if stats.passages_used_share is not None:
            self.used_sum += stats.passages_used_share
            self.used_n += 1

    def merge(self, other: _RetrievalTotals) -> None:
        for name in ("relevance_sum", "relevance_n", "empty", "empty_n", "used_sum", "used_n"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def figures(self) -> dict[str, float | None]:
        """The `window_metrics` columns: means over the responses that have each figure."""
        return {
            "mean_context_relevance": self.relevance_sum / self.relevance_n if self.relevance_n else None,
            "empty_retrieval_rate": self.empty / self.empty_n if self.empty_n else None,
            "mean_passages_used_share": self.used_sum / self.used_n if self.used_n else None,
        }


@dataclass
class MetricsAccumulator:
    """Running totals of one slice of one window; `merge` makes it a Beam combine accumulator."""

    responses: int = 0
    confidences: list[float] = field(default_factory=list)
    grounded_probabilities: list[float] = field(default_factory=list)
    verdict_counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0])
    faithfulness_sum: float = 0.0
    faithfulness_scored: int = 0
    """Responses with a faithfulness score: those that claim something."""
    insufficient_evidence: int = 0
    needs_review: int = 0
    abstained: int = 0
    claims: int | None = None
    covered_claims: float = 0.0
    low_confidence_claims: float = 0.0
    citations: int | None = None
    failed_citations: int = 0
    reviewed: int = 0
    agreed: int = 0
    sample_reviewed: int = 0
    sample_agreed: int = 0
    retrieval: _RetrievalTotals = field(default_factory=_RetrievalTotals)

    def add(self, stats: ResponseStats) -> MetricsAccumulator:
        self.responses += 1
        self.confidences.extend(stats.confidences)
        self.grounded_probabilities.extend(stats.grounded_probabilities)
        self.verdict_counts = [a + b for a, b in zip(self.verdict_counts, stats.verdict_counts, strict=True)]
        if stats.faithfulness is not None:
            self.faithfulness_sum += stats.faithfulness
            self.faithfulness_scored += 1
        self.insufficient_evidence += int(stats.insufficient_evidence)
        self.needs_review += int(stats.needs_review)
        self.abstained += int(stats.abstained)
        self.reviewed += stats.reviewed
        self.agreed += stats.agreed
        if stats.sampled:
            self.sample_reviewed += stats.reviewed
            self.sample_agreed += stats.agreed
        if stats.claims is not None:
            self.claims = (self.claims or 0) + stats.claims
            self.covered_claims += stats.covered_claims or 0.0
            self.low_confidence_claims += stats.low_confidence_claims or 0.0
        if stats.citations is not None:
            self.citations = (self.citations or 0) + stats.citations
            self.failed_citations += stats.failed_citations or 0
        self.retrieval.add(stats)
        return self

    def merge(self, other: MetricsAccumulator) -> MetricsAccumulator:
        self.responses += other.responses
        self.confidences.extend(other.confidences)
        self.grounded_probabilities.extend(other.grounded_probabilities)
        self.verdict_counts = [a + b for a, b in zip(self.verdict_counts, other.verdict_counts, strict=True)]
        self.faithfulness_sum += other.faithfulness_sum
        self.faithfulness_scored += other.faithfulness_scored
        self.insufficient_evidence += other.insufficient_evidence
        self.needs_review += other.needs_review
        self.abstained += other.abstained
        self.reviewed += other.reviewed
        self.agreed += other.agreed
        self.sample_reviewed += other.sample_reviewed
        self.sample_agreed += other.sample_agreed
        if other.claims is not None:
            self.claims = (self.claims or 0) + other.claims
            self.covered_claims += other.covered_claims
            self.low_confidence_claims += other.low_confidence_claims
        if other.citations is not None:
            self.citations = (self.citations or 0) + other.citations
            self.failed_citations += other.failed_citations
        self.retrieval.merge(other.retrieval)
        return self


def window_metrics_row(
    window_start: datetime,
    window_end: datetime,
    slice_dimension: str,
    slice_value: str,
    acc: MetricsAccumulator,
    computed_at: datetime,
) -> WindowMetricsRow:
    """The `window_metrics` row of one slice of one window from its accumulated totals."""
    sentences = sum(acc.verdict_counts)
    support = acc.grounded_probabilities
    shares = [n / sentences if sentences else None for n in acc.verdict_counts]
    claims = acc.claims
    return WindowMetricsRow(
        window_start=window_start,
        window_end=window_end,
        slice_dimension=slice_dimension,
        slice_value=slice_value,
        responses=acc.responses,
        sentences=sentences,
        mean_confidence=statistics.fmean(acc.confidences) if acc.confidences else None,
        median_confidence=statistics.median(acc.confidences) if acc.confidences else None,
        mean_attribution_confidence=statistics.fmean(support) if support else None,
        median_attribution_confidence=statistics.median(support) if support else None,
        mean_faithfulness=acc.faithfulness_sum / acc.faithfulness_scored if acc.faithfulness_scored else None,
        fully_grounded_share=shares[0],
        partially_grounded_share=shares[1],
        ungrounded_share=shares[2],
        contradicted_share=shares[3],
        insufficient_evidence_responses=acc.insufficient_evidence,
        needs_review_responses=acc.needs_review,
        claims=claims,
        attribution_coverage_rate=acc.covered_claims / claims if claims else None,
        low_confidence_claim_rate=acc.low_confidence_claims / claims if claims else None,
        citations=acc.citations,
        citation_failure_rate=acc.failed_citations / acc.citations if acc.citations else None,
        abstention_rate=acc.abstained / acc.responses if acc.responses else None,
        reviewed_sentences=acc.reviewed,
        review_agreement=acc.agreed / acc.reviewed if acc.reviewed else None,
        sample_reviewed_sentences=acc.sample_reviewed,
        sample_review_agreement=acc.sample_agreed / acc.sample_reviewed if acc.sample_reviewed else None,
        computed_at=computed_at,
        **acc.retrieval.figures(),
    )


def compute_window_metrics(
    stats: Iterable[ResponseStats], computed_at: datetime | None = None
) -> list[WindowMetricsRow]:
    """All window-metrics rows of a batch of responses, ordered by window then slice (outside Beam)."""
    accumulators: dict[tuple, MetricsAccumulator] = {}
    for item in stats:
        for dimension, value in slices_of(item):
            key = (item.window_start, item.window_end, dimension, value)
            accumulators.setdefault(key, MetricsAccumulator()).add(item)
    when = computed_at or datetime.now(UTC)
    return [window_metrics_row(*key, acc, when) for key, acc in sorted(accumulators.items(), key=lambda kv: kv[0])]


def _slice_contributions(audited: Any, stats_of: Callable[[Any], ResponseStats] = stats_from_audited):
    stats = stats_of(audited)
    for dimension, value in slices_of(stats):
        yield (stats.window_start.isoformat(), stats.window_end.isoformat(), dimension, value), stats


class _WindowMetricsCombineFn(beam.CombineFn):
    def create_accumulator(self) -> MetricsAccumulator:
        return MetricsAccumulator()

    def add_input(self, acc: MetricsAccumulator, stats: ResponseStats) -> MetricsAccumulator:
        return acc.add(stats)

    def merge_accumulators(self, accumulators: Iterable[MetricsAccumulator]) -> MetricsAccumulator:
        merged = MetricsAccumulator()
        for acc in accumulators:
            merged.merge(acc)
        return merged

    def extract_output(self, acc: MetricsAccumulator) -> MetricsAccumulator:
        return acc


def _to_lake_row(keyed: tuple, clock: Callable[[], datetime]) -> tuple[str, dict]:
    key, acc = keyed
    start, end, dimension, value = key
    row = window_metrics_row(datetime.fromisoformat(start), datetime.fromisoformat(end), dimension, value, acc, clock())
    return "window_metrics", row.model_dump(mode="python")


class _FirstPaneFn(beam.DoFn):
    """Keep each window's first pane. A later (late) pane holds only the responses that arrived after it, and
    its row would replace the first one in the lake (same key, same file name): the window's figures would
    become those of a few stragglers. Accumulating panes would fix that but, on Prism, keeps every element
    pending until the window's last pane (end + allowed lateness), holding the watermark that long."""

    def __init__(self):
        self._skipped = Metrics.counter("groundwatch.window_metrics", "late_panes_skipped")

    def process(self, element, pane=beam.DoFn.PaneInfoParam):
        if pane.is_first:
            yield element
        else:
            self._skipped.inc()


class WindowMetrics(beam.PTransform):
    """Per window and slice audit figures of `AuditedResponse`s, as `("window_metrics", row)` lake pairs.

    The window bounds come from each response (`window_start`/`window_end`), which the pipeline set
    from its event-time window, so the metrics of a window hold exactly the responses audited in it
    by its first pane (streaming: responses later than that are in the `responses` table, not in these
    figures). With `per_window=False` (bounded runs) all windows are grouped at once, at the end of the input.
    `stats_of` reads an element's figures: elements other than `AuditedResponse`s carry theirs (a stream's
    `transforms.audit.stream.ScoredRows`, whose lane computed them).
    """

    def __init__(
        self,
        clock: Callable[[], datetime] = utc_now,
        *,
        per_window: bool = True,
        stats_of: Callable[[Any], ResponseStats] = stats_from_audited,
    ):
        super().__init__()
        self._clock = clock
        self._per_window = per_window
        self._stats_of = stats_of

    def expand(self, audited):
        clock = self._clock
        if not self._per_window:
            # Bounded input: the key already names the window, and grouping in the global window takes Beam's
            # fast batch path instead of running the trigger machinery once per (window, slice).
            audited = audited | "OneGroupPerSlice" >> beam.WindowInto(GlobalWindows())
        stats = (
            audited
            | "KeyBySlice" >> beam.FlatMap(_slice_contributions, self._stats_of)
            | "CombineSliceStats" >> beam.CombinePerKey(_WindowMetricsCombineFn())
        )
        if self._per_window:
            stats = stats | "FirstPaneOnly" >> beam.ParDo(_FirstPaneFn())
        return stats | "ToWindowMetricsRows" >> beam.Map(_to_lake_row, clock)
