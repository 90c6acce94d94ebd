"""Audit one response: verify its sentences, run the later audit steps, score it and decide on review.

The plain function does it all, for code that runs outside Beam (benchmarks, calibration, replay)::

    audited = audit_response(parsed, verifier=make_verifier("heuristic"), threshold=0.7,
                             window_start=start, window_end=end, now=datetime.now(timezone.utc))

In the pipeline the same work is split into composites, each a thin wrapper over a plain function::

    audited = (windowed
               | "VerifySentences" >> VerifySentences("heuristic", threshold=0.7)   # [AUDITED], [DEAD_LETTERS]
               ...)
    audited[AUDITED] | "AuditCitations" >> ApplyAuditStep(audit_citations, stage="citations")
                     | "ScoreRetrieval" >> ScoreRetrieval()        # relevance and evidence use
                     | "ScoreAndFlag" >> ScoreAndFlag(threshold=0.7)

An audit step is any `AuditStep`: a plain function `AuditedResponse -> AuditedResponse` (citation audit,
claim checks, ...). A step or verifier that raises turns that response into a dead letter (stage named),
unless the exception has `retryable = True`, which is re-raised so the runner retries the bundle.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas import AuditedResponse, ParsedResponse
from schemas.base import utc_now
from transforms.audit.limits import bound_response
from transforms.audit.routing import decide_review
from transforms.ingest.parse import DEAD_LETTERS, METRICS_NAMESPACE, stage_failed_dead_letter
from transforms.ingest.windows import window_bounds
from transforms.retrieval.report import score_retrieval_step
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD, Verifier, audit_sentences
from transforms.verify.registry import VERIFIERS, available_verifiers, make_verifier
from transforms.verify.tenants import verifier_for

__all__ = [
    "AUDITED",
    "ApplyAuditStep",
    "AuditStep",
    "ScoreAndFlag",
    "ScoreRetrieval",
    "ToLakeRows",
    "VerifySentences",
    "audit_response",
    "score_and_flag",
    "settle_garbage_collector",
    "verify_response",
]

AUDITED = "audited"
AuditStep = Callable[[AuditedResponse], AuditedResponse]

GC_THRESHOLDS = (50_000, 20, 20)
"""CPython's cycle-collector thresholds in a process that audits (the defaults are 700, 10, 10)."""
_gc_settled = False


def settle_garbage_collector() -> None:
    """Tune the cycle collector for auditing, once per process: freeze what is alive (Beam, the models, the
    verifier's tables) and collect young objects every 50,000 allocations rather than every 700.

    The heuristic allocates many small short-lived objects (tokens, alignment items, verdicts), which reference
    counting frees; at the default threshold the collector still ran every few hundred allocations and walked
    the long-lived ones each time it reached the older generations. With 5,000 benchmark responses on two
    workers this cut CPU per response by about 10-13% (`scripts/bench_audit.py`, six runs each, alternated:
    129-159 responses per CPU second against 115-140), for a few MiB more memory.
    """
    global _gc_settled
    if not _gc_settled:
        _gc_settled = True
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)


def verify_response(
    parsed: ParsedResponse,
    *,
    verifier: Verifier,
    threshold: float,
    window_start: datetime,
    window_end: datetime,
    now: datetime,
) -> AuditedResponse:
    """The sentence audit of one response, not yet routed.

    What is past the audit's limits (`transforms.audit.limits`) is left out of this and every later stage
    (the AuditedResponse carries the response as audited; its raw bytes stay whole) and named in the critical
    flags."""
    response, exceeded = bound_response(parsed.response)
    if exceeded:
        parsed = parsed.model_copy(update={"response": response})
    # A calibration file with tenant sections calibrates each tenant's verdicts by its own section.
    verifier, section = verifier_for(verifier, response.metadata.tenant)
    report, result = audit_sentences(
        response.response_id,
        response.answer,
        response.evidence,
        verifier,
        threshold=threshold,
        verification_date=now.date(),
    )
    if exceeded:
        report = report.model_copy(update={"critical_flags": [*report.critical_flags, *exceeded]})
    return AuditedResponse(
        parsed=parsed,
        window_start=window_start,
        window_end=window_end,
        verifier=verifier.name,
        verifier_version=verifier.version,
        calibration_sha256=getattr(verifier, "calibration_sha256", None) or None,
        calibration_section=section,
        escalation_band=getattr(verifier, "escalation_band", None),
        report=report,
        decided_by=list(result.decided_by),
        audited_at=now,
        judge_status=result.judge_status,
        judge_calls=list(result.judge_calls),
    )


def score_and_flag(audited: AuditedResponse, threshold: float, review_sample: float = 0.0) -> AuditedResponse:
    """The audited response with its routing decision (`review_sample`: the random share of confident ones)."""
    return audited.model_copy(update={"review": decide_review(audited, threshold, review_sample)})


def audit_response(
    parsed: ParsedResponse,
    *,
    verifier: Verifier,
    threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
    window_start: datetime,
    window_end: datetime,
    now: datetime,
    steps: Iterable[AuditStep] = (),
    review_sample: float = 0.0,
) -> AuditedResponse:
    """Verify, run each audit step in order, score retrieval, then score and route: the whole audit of one
    response."""
    audited = verify_response(
        parsed, verifier=verifier, threshold=threshold, window_start=window_start, window_end=window_end, now=now
    )
    for step in steps:
        audited = step(audited)
    return score_and_flag(score_retrieval_step(audited), threshold, review_sample)


class _VerifyDoFn(beam.DoFn):
    def __init__(self, verifier_name: str, verifier_config: Mapping[str, Any], threshold: float, clock):
        self._name, self._config, self._threshold, self._clock = verifier_name, dict(verifier_config), threshold, clock
        self._verifier: Verifier | None = None

    def setup(self):
        self._verifier = make_verifier(self._name, **self._config)
        settle_garbage_collector()

    def process(self, parsed: ParsedResponse, window=beam.DoFn.WindowParam):
        now = self._clock()
        try:
            start, end = window_bounds(window, parsed.response.timestamp)
            yield verify_response(
                parsed, verifier=self._verifier, threshold=self._threshold, window_start=start, window_end=end, now=now
            )
        except Exception as e:  # one bad response must not stop the run
            if getattr(e, "retryable", False):
                raise
            yield beam.pvalue.TaggedOutput(DEAD_LETTERS, stage_failed_dead_letter(parsed, "verify", e, now))


class VerifySentences(beam.PTransform):
    """Verify every sentence of each response with the named verifier (built once per worker in setup()).

    Returns a tagged result: `[AUDITED]` AuditedResponses with their window bounds, `[DEAD_LETTERS]`.
    """

    def __init__(
        self,
        verifier: str = "heuristic",
        *,
        threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
        verifier_config: Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] = utc_now,
    ):
        super().__init__()
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"confidence threshold must be in [0, 1], got {threshold}")
        self._verifier, self._threshold, self._clock = verifier, threshold, clock
        self._config = {"threshold": threshold, **(verifier_config or {})}
        if verifier not in VERIFIERS:  # fail at construction, not on the first element
            raise ValueError(f"unknown verifier {verifier!r}; choose one of: {', '.join(available_verifiers())}")
        self._judge = None
        # The LLM judge and the model stage run through RunInference (batched, one model per worker process),
        # not one call per element in the verify DoFn.
        if verifier in ("openai", "cascade", "model"):
            from transforms.verify.judge.pipeline import judge_sentences  # kept lazy: start-up (RunInference)

            self._judge = judge_sentences(verifier, self._config, threshold=threshold, clock=clock)

    def expand(self, responses):
        if self._judge is not None:
            return responses | "Judge" >> self._judge
        fn = _VerifyDoFn(self._verifier, self._config, self._threshold, self._clock)
        return responses | "Verify" >> beam.ParDo(fn).with_outputs(DEAD_LETTERS, main=AUDITED)


class _StepDoFn(beam.DoFn):
    def __init__(self, step: AuditStep, stage: str, clock):
        self._step, self._stage, self._clock = step, stage, clock

    def setup(self):
        settle_garbage_collector()

    def process(self, audited: AuditedResponse):
        try:
            yield self._step(audited)
        except Exception as e:
            if getattr(e, "retryable", False):
                raise
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_dead_letter(audited.parsed, self._stage, e, self._clock())
            )


class ApplyAuditStep(beam.PTransform):
    """Run one plain audit step over every AuditedResponse; returns `[AUDITED]` and `[DEAD_LETTERS]`."""

    def __init__(self, step: AuditStep, *, stage: str, clock: Callable[[], datetime] = utc_now):
        super().__init__()
        if not callable(step):
            raise TypeError(f"audit step {stage!r} must be callable")
        self._step, self._stage, self._clock = step, stage, clock

    def expand(self, audited):
        fn = _StepDoFn(self._step, self._stage, self._clock)
        return audited | "Apply" >> beam.ParDo(fn).with_outputs(DEAD_LETTERS, main=AUDITED)


class ScoreRetrieval(beam.PTransform):
    """Score each audited response's retrieval: context relevance of its passages, answer relevance, the
    empty-retrieval flag and evidence use (`transforms.retrieval.report`).

    Returns a tagged result: `[AUDITED]` responses with `retrieval` filled, `[DEAD_LETTERS]` those it failed on.
    """

    def __init__(self, *, clock: Callable[[], datetime] = utc_now):
        super().__init__()
        self._clock = clock

    def expand(self, audited):
        return audited | "Score" >> ApplyAuditStep(score_retrieval_step, stage="retrieval", clock=self._clock)


class _ScoreDoFn(beam.DoFn):
    def __init__(self, threshold: float, review_sample: float, clock, count: bool):
        self._threshold, self._review_sample, self._clock, self._count = threshold, review_sample, clock, count
        self._audited = Metrics.counter(METRICS_NAMESPACE, "audited")
        self._review = Metrics.counter(METRICS_NAMESPACE, "needs_review")

    def process(self, audited: AuditedResponse):
        try:
            scored = score_and_flag(audited, self._threshold, self._review_sample)
        except Exception as e:  # one response that routing cannot decide must not stop the run
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_dead_letter(audited.parsed, "score", e, self._clock())
            )
            return
        if self._count:
            self._audited.inc()
            if scored.review.needs_review:
                self._review.inc()
        yield scored


class ScoreAndFlag(beam.PTransform):
    """Decide, for each audited response, whether it goes to human review; counts audited and needs_review.

    Returns a tagged result: `[AUDITED]` scored responses and `[DEAD_LETTERS]` (responses scoring failed on).
    `review_sample`: the share of confident responses sent to review at random (`transforms.audit.routing`).
    `count=False` leaves the counting to a later stage (a stream counts after dropping repeated ids).
    """

    def __init__(
        self,
        threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
        *,
        review_sample: float = 0.0,
        clock: Callable[[], datetime] = utc_now,
        count: bool = True,
    ):
        super().__init__()
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"confidence threshold must be in [0, 1], got {threshold}")
        if not 0.0 <= review_sample <= 1.0:
            raise ValueError(f"review sample must be in [0, 1], got {review_sample}")
        self._threshold, self._review_sample, self._clock, self._count = threshold, review_sample, clock, count

    def expand(self, audited):
        fn = _ScoreDoFn(self._threshold, self._review_sample, self._clock, self._count)
        return audited | "Route" >> beam.ParDo(fn).with_outputs(DEAD_LETTERS, main=AUDITED)


class _LakeRowsDoFn(beam.DoFn):
    def __init__(self, to_rows: Callable[[AuditedResponse], Any], clock, counted: bool):
        self._to_rows, self._clock, self._counted = to_rows, clock, counted

    def process(self, audited: AuditedResponse):
        try:
            rows = self._to_rows(audited)
        except Exception as e:  # all of a response's rows or none, and its dead letter instead
            if self._counted:
                # It was counted audited when scored; it leaves that count for the dead letters', so they add up.
                Metrics.counter(METRICS_NAMESPACE, "audited").dec()
                if audited.review is not None and audited.review.needs_review:
                    Metrics.counter(METRICS_NAMESPACE, "needs_review").dec()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTERS, stage_failed_dead_letter(audited.parsed, "lake_rows", e, self._clock())
            )
            return
        yield rows


class ToLakeRows(beam.PTransform):
    """The `(table, row)` pairs of each scored response (`to_rows`, e.g. `transforms.io.lake.rows.to_lake_rows`),
    or whatever `to_rows` builds around them (a stream's `transforms.audit.stream.ScoredRows`).

    Returns a tagged result: `[AUDITED]` one list of pairs per response (`WriteAuditLake` takes them as they
    are), `[DEAD_LETTERS]` the responses whose rows could not be built. One element per response rather than
    one per row: each element costs the runner a few microseconds in every step, its window assignment
    before the bounded writer about ten, and a response makes about twenty rows. `counted=False`: the
    responses were not counted audited when scored (`ScoreAndFlag(count=False)`), so a failure uncounts nothing.
    """

    def __init__(
        self,
        to_rows: Callable[[AuditedResponse], Any],
        *,
        clock: Callable[[], datetime] = utc_now,
        counted: bool = True,
    ):
        super().__init__()
        self._to_rows, self._clock, self._counted = to_rows, clock, counted

    def expand(self, scored):
        fn = _LakeRowsDoFn(self._to_rows, self._clock, self._counted)
        return scored | "Build" >> beam.ParDo(fn).with_outputs(DEAD_LETTERS, main=AUDITED)
