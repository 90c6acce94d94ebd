"""Drift detection: each new window against a reference, with Evidently reports and tests.

This is a stage that reads the lake, not a Beam transform, because a check needs what a
per-window pipeline step does not hold: the raw confidences of N earlier windows (the trailing
baseline, minus the windows that were themselves alerting), and the alerts still open from earlier
windows, across restarts. The lake has both, so `groundwatch drift` works the same after a bounded
`audit` run, beside a streaming `monitor`, or from cron, and re-running it is idempotent.

For every window and slice (all traffic, each retriever_version, generator_model and tenant) with
at least `min_responses` responses, one Evidently `Report` with tests checks:

- `confidence_drift`: K-S test of responses' mean attribution confidence (see `transforms.monitoring.window_metrics`):
  p-value below `drift_p_value` / (slices judged in the window) with a lower mean,
- `faithfulness_drift`: K-S test of responses' overall faithfulness, likewise,
- `mean_confidence_drop`: mean attribution confidence >= reference - `max_confidence_drop` x reference (10%);
  it alerts only when the K-S test also finds the distribution moved (a 10% swing is noise in a small window),
- `abstention_rise`: the share of responses with an abstaining sentence at most `max_abstention_rise` (10
  points) over the reference's, unless a binomial test finds the rise insignificant
  (`transforms.monitoring.abstention`),
- `context_relevance_drop`, `empty_retrieval_rise` and `evidence_use_drop`: the passages' relevance to the
  query fell, the share of responses with no relevant passage rose, or the answers drew on fewer of their
  passages (`transforms.monitoring.retrieval_checks`), when the lake has retrieval scores,
- `attribution_coverage` >= 95% and `low_confidence_claims` <= 10% (spec 004), when claims are logged,
- `review_agreement_drop`: the share of reviewed sentences whose reviewer agreed with the verifier, where
  reviews exist (`transforms.monitoring.review_agreement`).

The reference of a slice is its last `baseline_windows` windows that had enough responses and raised
no drift alert, or the fixed period the user names; a slice without enough history of its own (a new
retriever_version) is compared with the same reference of all traffic. Windows with too few responses
are recorded as `insufficient_data`, never as drift. Alerts are episodes (`transforms.monitoring.alerts`).

A slice too small for one window (a tenant with fifty answers a day, in one-minute windows) grows: its
windows since its last check are pooled, window after window, until they hold `min_responses`; then that
span is checked, in the row of the window that completed it (`span_start` names its first window), and the
next span starts. Its reference is its own last `baseline_windows` spans. A span reaches back at most
`max_span_hours` (a week by default): older windows drop out of it, so a slice that stays too small is still
`insufficient_data`, and its first checks wait for a reference of that many spans (`no_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC, CheckStatus, DriftCheckRow
from transforms.monitoring.abstention import ABSTENTION_CHECK, abstention_check
from transforms.monitoring.evidently_report import (
    column_name,
    frames_for_report,
    present,
    report_metrics,
    run_report,
    series,
    snapshot_results,
)
from transforms.monitoring.lake_frames import LakeFrames
from transforms.monitoring.plans import CHECK_COLUMNS, DriftConfig, SlicePlan
from transforms.monitoring.retrieval_checks import RETRIEVAL_CHECKS, retrieval_checks
from transforms.monitoring.review_agreement import agreement_check
from transforms.monitoring.times import span_text

__all__ = [
    "DRIFT_CHECKS",
    "DriftConfig",
    "History",
    "SlicePlan",
    "WindowEvaluation",
    "column_name",
    "eligible_history",
    "evaluate_window",
    "record_baseline",
]

DRIFT_CHECKS = ("confidence_drift", "faithfulness_drift", "mean_confidence_drop", ABSTENTION_CHECK, *RETRIEVAL_CHECKS)
"""The checks comparing a window with its reference; a window failing one is kept out of later baselines."""
_OPERATIONAL_CHECKS = ("attribution_coverage", "low_confidence_claims")
INCONCLUSIVE_P_VALUE = 0.05
"""A downward shift with a K-S p-value between `drift_p_value` and this is `inconclusive`: it keeps an open
alert open (and the window out of baselines) without raising a new one."""


def _slice(frame: pd.DataFrame, dimension: str, value: str) -> pd.DataFrame:
    return frame if dimension == ALL_TRAFFIC else frame[frame[dimension] == value]


@dataclass
class WindowEvaluation:
    """The outcome of checking one window: one row per check and slice, and what the alerts need."""

    window_start: datetime
    window_end: datetime
    checks: list[DriftCheckRow] = field(default_factory=list)
    plans: dict[tuple[str, str], SlicePlan] = field(default_factory=dict)
    snapshot: object | None = None
    p_threshold: float = 0.0
    """The K-S p-value threshold each slice judged on this window alone was tested at (a slice judged over a
    span: `drift_p_value` over the window's spans)."""

    def failing(self) -> list[DriftCheckRow]:
        return [c for c in self.checks if c.status == CheckStatus.alert]


Span = tuple[datetime, datetime]
"""The windows a check covered: its first window's start and its own (the same for a window alone)."""


@dataclass
class History:
    """What the checks so far leave for the next: per slice, the spans that may serve as its baseline (enough
    data, no drift alert), and where a small slice's span still growing began."""

    eligible: dict[tuple[str, str], list[Span]] = field(default_factory=dict)
    growing: dict[tuple[str, str], datetime] = field(default_factory=dict)


def eligible_history(frames: LakeFrames, config: DriftConfig) -> History:
    """The history the lake's drift checks leave (`History`), for a run that goes on from them."""
    checks = frames.drift_checks
    history = History()
    if not len(checks):
        return history
    spans = checks.get("span_start", pd.Series(pd.NaT, index=checks.index)).fillna(checks["window_start"])
    checks = checks.assign(span_start=spans)
    kept = checks[checks["in_baseline"].fillna(False).astype(bool)]
    for (start, dimension, value, first), _ in kept.groupby(
        ["window_start", "slice_dimension", "slice_value", "span_start"]
    ):
        span = (pd.Timestamp(first).to_pydatetime(), pd.Timestamp(start).to_pydatetime())
        history.eligible.setdefault((dimension, value), []).append(span)
    history.eligible = {k: sorted(v, key=lambda s: s[1]) for k, v in history.eligible.items()}
    # A slice whose last windows were all too small is growing a span from the first of them.
    short = checks["status"] == CheckStatus.insufficient_data.value
    for (dimension, value), rows in checks.groupby(["slice_dimension", "slice_value"]):
        decided = rows[~short.loc[rows.index]]["window_start"]
        pending = rows[short.loc[rows.index]]["window_start"]
        if len(decided):
            pending = pending[pending > decided.max()]
        if len(pending):
            history.growing[(dimension, value)] = pd.Timestamp(pending.min()).to_pydatetime()
    return history


def _reference(frames: LakeFrames, plan: SlicePlan, history: History, window_start: datetime, config: DriftConfig):
    """The reference responses and sentences of a slice, and how to describe them."""
    if config.fixed_reference:

        def in_period(frame):
            return frame[
                (frame["window_start"] >= config.reference_from) & (frame["window_start"] < config.reference_to)
            ]

        period = f"{config.reference_from:%Y-%m-%d %H:%M}..{config.reference_to:%Y-%m-%d %H:%M}"
        for dimension, value, label in (
            (plan.dimension, plan.value, "slice"),
            (ALL_TRAFFIC, ALL_TRAFFIC, "all traffic"),
        ):
            responses = _slice(in_period(frames.responses), dimension, value)
            if len(responses) >= config.min_responses:
                sentences = _slice(in_period(frames.sentences), dimension, value)
                return responses, sentences, f"fixed period {period} of {label}"
        return None, None, f"fixed period {period}"
    for dimension, value, label in (
        (plan.dimension, plan.value, "this slice"),
        (ALL_TRAFFIC, ALL_TRAFFIC, "all traffic"),
    ):
        spans = [s for s in history.eligible.get((dimension, value), []) if s[1] < window_start]
        spans = spans[-config.baseline_windows :]
        if len(spans) < config.baseline_windows:
            continue  # a baseline of one or two windows would call their noise drift: wait for a full one
        # A slice checked over spans, without spans of its own yet, is compared with its own responses in all
        # traffic's reference windows where they are enough: a tenant's level is not all traffic's.
        own = plan.span_start is not None and dimension == ALL_TRAFFIC
        responses = pd.concat([_slice(frames.responses_over(*s), *plan.key) for s in spans]) if own else None
        if responses is None or len(responses) < config.min_responses:
            own, responses = False, pd.concat([_slice(frames.responses_over(*s), dimension, value) for s in spans])
        if len(responses) < config.min_responses:
            continue
        key = plan.key if own else (dimension, value)
        sentences = pd.concat([_slice(frames.sentences_over(*s), *key) for s in spans])
        what = "windows" if all(first == last for first, last in spans) else "spans"
        label = f"{label}, this slice's responses" if own else label
        return (
            responses,
            sentences,
            f"trailing {len(spans)} {what} of {label} "
            f"({span_text(spans[0][0], spans[-1][1], '..', date=False, beside=window_start)})",
        )
    return None, None, "no baseline yet"


def _plans(frames: LakeFrames, window_start: datetime, history: History, config: DriftConfig) -> list[SlicePlan]:
    responses, sentences = frames.responses_in(window_start), frames.sentences_in(window_start)
    plans = []
    for row in frames.metrics_in(window_start).sort_values(["slice_dimension", "slice_value"]).to_dict("records"):
        dimension, value = row["slice_dimension"], row["slice_value"]
        plan = SlicePlan(
            dimension, value, _slice(responses, dimension, value), _slice(sentences, dimension, value), row
        )
        if len(plan.responses) < config.min_responses:
            _grow(plan, frames, window_start, history, config)
        if len(plan.responses) < config.min_responses:
            plan.status = CheckStatus.insufficient_data
        else:
            plan.reference_responses, plan.reference_sentences, plan.reference_label = _reference(
                frames, plan, history, window_start, config
            )
            if plan.reference_responses is None:
                plan.status = CheckStatus.no_reference
        plans.append(plan)
    return plans


def _has_data(check: str, responses: pd.DataFrame) -> bool:
    column = CHECK_COLUMNS.get(check)
    return column is None or (column in responses and bool(responses[column].notna().any()))


def _grow(plan: SlicePlan, frames: LakeFrames, window_start: datetime, history: History, config: DriftConfig):
    """Pool a small slice's windows since its span began (at most `max_span_hours` back) with this one."""
    first = history.growing.get(plan.key)
    if first is None or not config.max_span_hours:
        return
    first = max(pd.Timestamp(first), pd.Timestamp(window_start) - timedelta(hours=config.max_span_hours))
    grown = _slice(frames.responses_over(first, window_start), *plan.key)
    if len(grown) > len(plan.responses):
        first = grown["window_start"].min()
        plan.responses, plan.span_start = grown, pd.Timestamp(first).to_pydatetime()
        plan.sentences = _slice(frames.sentences_over(first, window_start), *plan.key)


def _check_rows(
    plan: SlicePlan, values: dict, passed: dict, window, config: DriftConfig, now, p_threshold: float
) -> list[DriftCheckRow]:
    d, v = plan.key
    base = dict(
        window_start=window[0],
        window_end=window[1],
        slice_dimension=d,
        slice_value=v,
        current_responses=len(plan.responses),
        checked_at=now,
        reference_responses=0 if plan.reference_responses is None else len(plan.reference_responses),
        reference=plan.reference_label or ("not needed" if plan.status is None else plan.status.value),
        span_start=plan.span_start if plan.status != CheckStatus.insufficient_data else None,
    )
    checks = [c for c in DRIFT_CHECKS if _has_data(c, plan.responses)] + [
        c
        for c, m in zip(_OPERATIONAL_CHECKS, ("attribution_coverage_rate", "low_confidence_claim_rate"), strict=True)
        if present(plan.metrics.get(m))
    ]
    if plan.status is not None:
        return [DriftCheckRow(**base, check=c, status=plan.status, test="not run") for c in checks]
    rows = []
    for check, metric in (("confidence_drift", "response_confidence"), ("faithfulness_drift", "faithfulness")):
        column = column_name(metric, d, v)
        p_value = float(values[("ValueDrift", column)])
        current, reference = series(plan, metric), series(plan, metric, reference=True)
        # A drift toward better verdicts is not a regression: only a significant shift down alerts.
        down = current.mean() < reference.mean()
        if not passed[("ValueDrift", column)] and down:
            status = CheckStatus.alert
        elif down and p_value < INCONCLUSIVE_P_VALUE:
            status = CheckStatus.inconclusive  # neither raises nor clears: a regression's noisier windows
        else:
            status = CheckStatus.ok
        rows.append(
            DriftCheckRow(
                **base,
                check=check,
                status=status,
                test=f"K-S p_value < {p_threshold:.2g} ({config.drift_p_value:g} over the window's slices; shift down)",
                current_value=float(current.mean()),
                reference_value=float(reference.mean()),
                p_value=p_value,
                threshold=p_threshold,
            )
        )
    column = column_name("attribution_confidence", d, v)
    reference_mean = float(series(plan, "attribution_confidence", reference=True).mean())
    # In a window of a few dozen responses a 10% swing of the mean is ordinary noise: the drop alerts
    # only when the K-S test agrees that the distribution moved.
    if passed[("MeanValue", column)]:
        status = CheckStatus.ok
    elif rows[0].status == CheckStatus.alert:
        status = CheckStatus.alert
    else:
        status = CheckStatus.inconclusive
    rows.append(
        DriftCheckRow(
            **base,
            check="mean_confidence_drop",
            status=status,
            test=f"mean attribution confidence >= reference - {config.max_confidence_drop:.0%} (and K-S agrees)",
            current_value=float(values[("MeanValue", column)]),
            reference_value=reference_mean,
            threshold=reference_mean * (1 - config.max_confidence_drop),
        )
    )
    rows += [row for row in (abstention_check(plan, base, config, p_threshold),) if row is not None]
    rows += [row for row in (agreement_check(plan, base, config, p_threshold),) if row is not None]
    rows += retrieval_checks(plan, base, config, p_threshold)
    for check, metric, test, threshold in (
        ("attribution_coverage", "attribution_coverage_rate", "attribution coverage rate >=", config.min_coverage),
        (
            "low_confidence_claims",
            "low_confidence_claim_rate",
            "low-confidence claim rate <=",
            config.max_low_confidence,
        ),
    ):
        key = ("MeanValue", column_name(metric, d, v))
        if present(plan.metrics.get(metric)) and key not in passed:
            # Too few claims to raise an alert; but a rate inside its limit still counts towards clearing one.
            rate = float(plan.metrics[metric])
            within = rate >= threshold if check == "attribution_coverage" else rate <= threshold
            rows.append(
                DriftCheckRow(
                    **base,
                    check=check,
                    status=CheckStatus.ok if within else CheckStatus.insufficient_data,
                    test=f"{test} {threshold:g} (fewer than {config.min_claims} claims: not enough to alert)",
                    current_value=float(plan.metrics[metric]),
                    threshold=threshold,
                )
            )
        elif key in passed:
            rows.append(
                DriftCheckRow(
                    **base,
                    check=check,
                    status=CheckStatus.ok if passed[key] else CheckStatus.alert,
                    test=f"{test} {threshold:g}",
                    current_value=float(values[key]),
                    threshold=threshold,
                )
            )
    return rows


def evaluate_window(
    frames: LakeFrames,
    window: tuple[datetime, datetime],
    history: History,
    config: DriftConfig,
    now: datetime | None = None,
) -> WindowEvaluation:
    """Check every slice of one window against the reference `history` gives it (see `record_baseline`)."""
    now = now or datetime.now(UTC)
    plans = _plans(frames, window[0], history, config)
    evaluation = WindowEvaluation(window[0], window[1], plans={p.key: p for p in plans})
    values, passed = {}, {}
    # Bonferroni over the slices judged in this window: with a dozen slices tested every window, an
    # uncorrected 0.001 would still raise a false alarm every few hours of ordinary traffic. The slices judged
    # over spans are a family of their own: their tests do not make the window's own slices less sensitive.
    judged = [p for p in plans if p.status is None]
    spans = sum(1 for p in judged if p.span_start is not None)
    evaluation.p_threshold = config.drift_p_value / max(1, len(judged) - spans)
    thresholds = {
        p.key: config.drift_p_value / max(1, spans) if p.span_start is not None else evaluation.p_threshold
        for p in plans
    }
    metrics = report_metrics(plans, config, thresholds)
    if metrics:
        current, reference = frames_for_report(plans, config)
        evaluation.snapshot = run_report(current, reference, metrics, timestamp=window[0])
        values, passed = snapshot_results(evaluation.snapshot)
    for plan in plans:
        evaluation.checks.extend(_check_rows(plan, values, passed, window, config, now, thresholds[plan.key]))
    return evaluation


def record_baseline(evaluation: WindowEvaluation, history: History, drifting: set[tuple[str, str]]) -> None:
    """Add the window (or the span it completed) to the baseline of each slice that had enough responses and is
    not drifting; a slice too small for it goes on growing its span, one that was checked starts a new one.

    `drifting` holds the slices with a drift alert still open after this window: while a regression
    lasts, its windows stay out of the reference even when one of them happens to pass.
    """
    by_slice: dict[tuple[str, str], list[DriftCheckRow]] = {}
    for row in evaluation.checks:
        by_slice.setdefault((row.slice_dimension, row.slice_value), []).append(row)
    for key, rows in by_slice.items():
        eligible = (
            all(
                r.status not in (CheckStatus.insufficient_data, CheckStatus.inconclusive)
                for r in rows
                if r.check in DRIFT_CHECKS
            )
            and not any(r.status == CheckStatus.alert and r.check in DRIFT_CHECKS for r in rows)
            and key not in drifting
        )
        for row in rows:
            row.in_baseline = eligible
        plan = evaluation.plans.get(key)
        if plan is not None and plan.status == CheckStatus.insufficient_data:
            history.growing.setdefault(key, evaluation.window_start)
            continue
        history.growing.pop(key, None)
        if eligible:
            first = plan.span_start if plan is not None and plan.span_start is not None else evaluation.window_start
            history.eligible.setdefault(key, []).append((first, evaluation.window_start))
