"""Pooled statistics of incidents: does a slice still fall without the causes already named?

One window of a slice without its cause holds a dozen responses, whose mean is noise: judged on it, an
ordinary canary window looked like a second cause of one retriever regression. These functions pool the
responses of several windows (the incident's, up to `POOLED_WINDOWS` of the latest) and compare them with
the same responses before the incident (its `REFERENCE_WINDOWS` preceding windows), by a one-sided Welch
t-test of the responses' mean attribution confidence: the incident's question is whether the mean fell, and
with a few dozen responses per side the t-test has more power for a shifted mean than the K-S test the drift
checks use on whole windows. A slice shows a separate cause only when the fall of what is left of it is both
significant and as large as the drift checks tolerate (`max_confidence_drop`)::

    left = residual(frames, ("generator_model", "gen-small-1"), causes, windows, reference)
    if left.separate(p_value, min_drop): ...   # something besides `causes` pulls this slice down
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
from scipy import stats

from schemas.monitoring import ALL_TRAFFIC

__all__ = [
    "BREAKDOWN",
    "BREAKDOWN_RETRIEVAL_HELD",
    "COUNT_COLUMNS",
    "MIN_POOLED_RESPONSES",
    "POOLED_WINDOWS",
    "REFERENCE_WINDOWS",
    "Residual",
    "best_split",
    "breakdown_shares",
    "cause_breakdown",
    "in_slice",
    "outside",
    "pooled_responses",
    "reference_windows",
    "residual",
    "span",
]

POOLED_WINDOWS = 4
"""Latest windows pooled to judge a residual: enough for a few dozen responses of a small slice, few enough
that a cause starting late in a long incident is not diluted by the windows before it."""
REFERENCE_WINDOWS = 6
"""Windows before an incident that are its reference (as many as the drift checks' trailing baseline)."""
BREAKDOWN = {
    "retrieval": ("ungrounded_sentences", "uncited_claims"),
    "generation": ("contradicted_sentences", "misattributed_citations"),
    "citation_hygiene": ("fabricated_citations", "inexact_quotes"),
}
"""Why confidence fell: the evidence lacks the answer, the answer misstates the evidence, or its citations are bad."""
COUNT_COLUMNS = tuple(c for columns in BREAKDOWN.values() for c in columns)
MIN_POOLED_RESPONSES = 20
"""Fewer pooled responses on either side: no conclusion (as the drift checks' `min_responses`)."""


def in_slice(responses: pd.DataFrame, dimension: str, value: str) -> pd.Series:
    """Which responses belong to the slice (all of them for all traffic)."""
    if dimension == ALL_TRAFFIC:
        return pd.Series(True, index=responses.index)
    return responses[dimension] == value


def outside(responses: pd.DataFrame, causes: Iterable[tuple[str, str]]) -> pd.DataFrame:
    """The responses in none of the causes' slices."""
    keep = pd.Series(True, index=responses.index)
    for cause in causes:
        keep &= ~in_slice(responses, *cause)
    return responses[keep]


def span(frames, since: datetime, until: datetime, last: int = POOLED_WINDOWS) -> list[datetime]:
    """The window starts from `since` to `until` (both included), the `last` latest of them."""
    starts = [w for w, _ in frames.windows if since <= w <= until]
    return starts[-last:] if last else starts


def reference_windows(frames, before: datetime, count: int = REFERENCE_WINDOWS) -> list[datetime]:
    """The `count` windows before `before` (the incident's start)."""
    return [w for w, _ in frames.windows if w < before][-count:]


def pooled_responses(frames, windows: Sequence[datetime]) -> pd.DataFrame:
    """The responses of these windows, one frame."""
    parts = [frames.responses_in(w) for w in windows]
    return pd.concat(parts) if parts else frames.responses.iloc[0:0]


@dataclass(frozen=True)
class Residual:
    """A slice's responses without the named causes': now (pooled) against before the incident."""

    responses: int
    reference_responses: int
    mean: float | None
    reference_mean: float | None
    p_value: float

    @property
    def drop(self) -> float:
        """Relative fall of the mean (0.2 = 20% lower); 0 when either side is missing."""
        if self.mean is None or not self.reference_mean:
            return 0.0
        return (self.reference_mean - self.mean) / abs(self.reference_mean)

    def separate(self, p_value: float, min_drop: float) -> bool:
        """Whether what is left of the slice fell significantly and by at least `min_drop`."""
        enough = min(self.responses, self.reference_responses) >= MIN_POOLED_RESPONSES
        return enough and self.p_value < p_value and self.drop >= min_drop


def _confidences(responses: pd.DataFrame) -> pd.Series:
    return responses["mean_attribution_confidence"].dropna()


def residual(
    frames,
    slice_: tuple[str, str],
    causes: Iterable[tuple[str, str]],
    windows: Sequence[datetime],
    reference: Sequence[datetime],
    within: tuple[str, str] = (ALL_TRAFFIC, ALL_TRAFFIC),
) -> Residual:
    """The slice (inside `within`) without `causes`, pooled over `windows`, against the same over `reference`
    (or, for a slice with too few responses there, all the traffic of `reference` inside `within` without `causes`)."""
    causes = list(causes)
    now = _confidences(outside(pooled_responses(frames, windows).pipe(_of, slice_).pipe(_of, within), causes))
    earlier = outside(pooled_responses(frames, reference).pipe(_of, within), causes)
    own = earlier.pipe(_of, slice_)
    # A slice new in the incident (r9) has no history of its own: it is compared with the traffic it
    # replaced, as the drift checks compare a new slice with all traffic's reference.
    before = _confidences(own if len(own) >= MIN_POOLED_RESPONSES else earlier)
    mean = float(now.mean()) if len(now) else None
    ref = float(before.mean()) if len(before) else None
    p = 1.0
    if len(now) >= 2 and len(before) >= 2 and (now.std() > 0 or before.std() > 0):
        p = float(stats.ttest_ind(now, before, equal_var=False, alternative="less").pvalue)
        p = 1.0 if math.isnan(p) else p
    return Residual(len(now), len(before), mean, ref, p)


def _of(responses: pd.DataFrame, slice_: tuple[str, str]) -> pd.DataFrame:
    return responses[in_slice(responses, *slice_)]


def best_split(frames, slice_: tuple[str, str], causes: Iterable[tuple[str, str]], windows: Sequence[datetime]):
    """The window where the slice (without `causes`) most likely started to fall: the split of `windows` into
    before and after with the largest t statistic of the fall (the first window when nothing fell)."""
    causes = list(causes)
    means = []
    for w in windows:
        values = _confidences(outside(_of(frames.responses_in(w), slice_), causes))
        means.append(values)
    best, best_t = windows[0] if windows else None, -math.inf
    for k in range(1, len(windows)):
        before, after = pd.concat(means[:k]), pd.concat(means[k:])
        if len(before) < 2 or len(after) < 2:
            continue
        se = math.sqrt(before.var() / len(before) + after.var() / len(after)) or 1e-9
        t = (before.mean() - after.mean()) / se
        if t > best_t:
            best, best_t = windows[k], t
    return best


def _sentences(frames, windows) -> pd.DataFrame:
    windows = [windows] if isinstance(windows, datetime | pd.Timestamp) else list(windows)
    parts = [frames.sentences_in(w) for w in windows]
    return pd.concat(parts) if parts else frames.sentences.iloc[0:0]


def _counts(frames, windows, responses: pd.DataFrame) -> dict[str, int]:
    ids = set(responses["response_id"])
    sentences = _sentences(frames, windows)
    sentences = sentences[sentences["response_id"].isin(ids)]
    verdicts = sentences["attribution_verdict"].astype(str)
    counts = {
        "ungrounded_sentences": int((verdicts == "ungrounded").sum()),
        "contradicted_sentences": int((verdicts == "contradicted").sum()),
    }
    problems = frames.problems
    problems = problems[problems["response_id"].isin(ids)] if len(problems) else problems
    for column in ("uncited_claims", "misattributed_citations", "fabricated_citations", "inexact_quotes"):
        counts[column] = int(problems[column].sum()) if len(problems) else 0
    return counts


def cause_breakdown(frames, windows, responses: pd.DataFrame, rest: pd.DataFrame | None = None) -> dict[str, int]:
    """Problems of each kind in `responses` (the cause slice's, from the lake rows of `windows`: one window
    start or several), beyond what `rest` (the other traffic of those windows) has per response: ordinary
    traffic has some of every kind, and what the cause added is what tells retrieval from generation."""
    counts = _counts(frames, windows, responses)
    if rest is None or not len(rest) or not len(responses):
        return counts
    usual = _counts(frames, windows, rest)
    scale = len(responses) / len(rest)
    return {k: max(0, round(v - usual[k] * scale)) for k, v in counts.items()}


BREAKDOWN_RETRIEVAL_HELD = {
    "retrieval": (),
    "generation": ("ungrounded_sentences", "uncited_claims", "contradicted_sentences", "misattributed_citations"),
    "citation_hygiene": BREAKDOWN["citation_hygiene"],
}
"""The breakdown when the retrieval scores show the passages as relevant as before: what the answer does not
get from good evidence is the generator's doing (`transforms.monitoring.incident_retrieval`)."""


def breakdown_shares(counts: dict[str, int], *, retrieval_held: bool = False) -> tuple[str, dict[str, float | None]]:
    """The largest kind (`retrieval`, `generation`, `citation_hygiene`, or `unknown`) and each kind's share;
    with `retrieval_held`, by `BREAKDOWN_RETRIEVAL_HELD`."""
    kinds = BREAKDOWN_RETRIEVAL_HELD if retrieval_held else BREAKDOWN
    total = sum(counts.values())
    shares = {k: (sum(counts[c] for c in cols) / total if total else None) for k, cols in kinds.items()}
    cause = max(kinds, key=lambda k: shares[k] or 0.0) if total else "unknown"
    return cause, shares
