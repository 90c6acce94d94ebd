"""Accuracy of a verifier against human labels: the metrics behind `groundwatch calibrate`.

Plain Python over plain values, so the numbers are easy to check by hand:

    items = [Scored(gold="fully_grounded", predicted="ungrounded", acceptable=("fully_grounded",),
                    score=0.2, source="WiCE")]
    metrics = classification_metrics(items, SENTENCE_LABELS, positive="fully_grounded")

A `Scored` item is one labeled sentence (or one labeled citation) with the
verifier's label, its confidence in that label (the spec's `confidence`, which the
pipeline's threshold reads) and a *positive score*: the verifier's probability that
the item is in the positive class, fully grounded (for a citation, SUPPORTS: the
claim fully grounded in the cited passage). That is the verdict's
`grounded_probability` (`schemas.SentenceVerdict`), never re-derived here. ROC-AUC,
the reliability bins and the risk-coverage curve use the score; the threshold sweep
uses the confidence and mirrors the pipeline's flag rule (`flags_sentence`), so its
recommendation can be used as `--confidence-threshold`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CITATION_LABELS",
    "COVERAGES",
    "SENTENCE_LABELS",
    "Scored",
    "ThresholdPoint",
    "accuracy",
    "balanced_accuracy",
    "bootstrap_intervals",
    "classification_metrics",
    "cohen_kappa",
    "compatible_recall",
    "confusion_matrix",
    "expected_calibration_error",
    "flags_sentence",
    "macro_f1",
    "per_class",
    "recommend_threshold",
    "reliability_bins",
    "risk_coverage",
    "roc_auc",
    "roc_curve",
    "span_token_f1",
    "threshold_sweep",
]

SENTENCE_LABELS = ("fully_grounded", "partially_grounded", "ungrounded", "contradicted")
CITATION_LABELS = ("SUPPORTS", "PARTIALLY_SUPPORTS", "CONTRADICTS", "UNRELATED")
_FLAGGED_VERDICTS = frozenset({"ungrounded", "contradicted"})
_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Scored:
    """One labeled item with the verifier's label, its confidence and its positive score."""

    gold: str
    predicted: str
    acceptable: tuple[str, ...] = ()
    score: float = 0.5
    """The verifier's probability that the item is positive (fully grounded / SUPPORTS): its grounded probability."""
    confidence: float = 0.5
    """The verifier's confidence in `predicted`, as the pipeline's threshold sees it."""
    source: str = ""


def confusion_matrix(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> list[list[int]]:
    """Counts with rows = gold label and columns = predicted label, both in `labels` order."""
    index = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for g, p in zip(gold, predicted, strict=True):
        matrix[index[g]][index[p]] += 1
    return matrix


def accuracy(gold: Sequence[object], predicted: Sequence[object]) -> float | None:
    """Fraction of exact agreements; None on an empty set."""
    if not gold:
        return None
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def per_class(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support (gold count) of every label; 0 where a ratio is undefined."""
    out = {}
    for label in labels:
        tp = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        n_pred = sum(p == label for p in predicted)
        n_gold = sum(g == label for g in gold)
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[label] = {"precision": precision, "recall": recall, "f1": f1, "support": n_gold, "predicted": n_pred}
    return out


def compatible_recall(items: Sequence[Scored], labels: Sequence[str]) -> dict[str, float | None]:
    """Per gold label, the share of its items whose prediction the annotation allows (`acceptable`, else the label).

    Where a source cannot tell two classes apart (a derived label), this is the recall to read: a SummEdits
    edit labelled contradicted may be predicted ungrounded and still agree with the humans.
    """
    out: dict[str, float | None] = {}
    for label in labels:
        members = [it for it in items if it.gold == label]
        ok = sum(it.predicted in (it.acceptable or (it.gold,)) for it in members)
        out[label] = ok / len(members) if members else None
    return out


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> float | None:
    """Mean F1 over the labels that occur in the gold or the predictions (as scikit-learn does by default)."""
    present = [label for label in labels if label in set(gold) | set(predicted)]
    if not present:
        return None
    scores = per_class(gold, predicted, present)
    return sum(scores[label]["f1"] for label in present) / len(present)


def balanced_accuracy(gold: Sequence[bool], predicted: Sequence[bool]) -> float | None:
    """Mean recall of the classes present in the gold (one class only: its recall)."""
    recalls = []
    for cls in (True, False):
        members = [p for g, p in zip(gold, predicted, strict=True) if g == cls]
        if members:
            recalls.append(sum(p == cls for p in members) / len(members))
    return sum(recalls) / len(recalls) if recalls else None


def cohen_kappa(gold: Sequence[str], predicted: Sequence[str]) -> float | None:
    """Agreement beyond chance, (p_o - p_e) / (1 - p_e); None when chance agreement is already 1."""
    n = len(gold)
    if not n:
        return None
    labels = set(gold) | set(predicted)
    observed = sum(g == p for g, p in zip(gold, predicted, strict=True)) / n
    expected = sum((sum(g == lab for g in gold) / n) * (sum(p == lab for p in predicted) / n) for lab in labels)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def roc_auc(positive: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Probability that a random positive scores above a random negative (ties count half); None if one class."""
    pos = [s for y, s in zip(positive, scores, strict=True) if y]
    neg = [s for y, s in zip(positive, scores, strict=True) if not y]
    if not pos or not neg:
        return None
    # Rank-sum form of the Mann-Whitney U statistic: O(n log n) instead of comparing every pair.
    ordered = sorted(scores)
    ranks: dict[float, float] = {}
    i = 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j] == ordered[i]:
            j += 1
        ranks[ordered[i]] = (i + j + 1) / 2.0  # mean of 1-based ranks i+1 .. j
        i = j
    rank_sum = sum(ranks[s] for s in pos)
    return (rank_sum - len(pos) * (len(pos) + 1) / 2.0) / (len(pos) * len(neg))


def roc_curve(positive: Sequence[bool], scores: Sequence[float]) -> list[tuple[float, float, float]]:
    """(false positive rate, true positive rate, threshold) points, from the strictest threshold down."""
    n_pos = sum(positive)
    n_neg = len(positive) - n_pos
    points = [(0.0, 0.0, float("inf"))]
    for t in sorted(set(scores), reverse=True):
        tp = sum(y and s >= t for y, s in zip(positive, scores, strict=True))
        fp = sum((not y) and s >= t for y, s in zip(positive, scores, strict=True))
        points.append((fp / n_neg if n_neg else 0.0, tp / n_pos if n_pos else 0.0, t))
    return points


def reliability_bins(positive: Sequence[bool], scores: Sequence[float], bins: int = 10) -> list[dict[str, float]]:
    """Equal-width bins of the score with the mean score and the observed positive rate of each non-empty bin."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [(y, s) for y, s in zip(positive, scores, strict=True) if lo <= s < hi or (b == bins - 1 and s == hi)]
        if members:
            out.append(
                {
                    "lo": lo,
                    "hi": hi,
                    "count": len(members),
                    "mean_score": sum(s for _, s in members) / len(members),
                    "positive_rate": sum(y for y, _ in members) / len(members),
                }
            )
    return out


def expected_calibration_error(bins: Iterable[dict[str, float]]) -> float | None:
    """Count-weighted mean gap between mean score and positive rate over the reliability bins."""
    bins = list(bins)
    total = sum(b["count"] for b in bins)
    if not total:
        return None
    return sum(b["count"] * abs(b["mean_score"] - b["positive_rate"]) for b in bins) / total


COVERAGES = tuple(round(0.1 * i, 1) for i in range(1, 11))
"""The shares of sentences a risk-coverage table reports: the most confident 10%, 20%, ... 100%."""


def risk_coverage(
    positive: Sequence[bool],
    scores: Sequence[float],
    *,
    coverages: Sequence[float] = COVERAGES,
    tiebreak: Sequence[float] | None = None,
) -> list[dict[str, float | None]]:
    """Binary accuracy and balanced accuracy of the most confident share of the items, for each share.

    The call is `score >= 0.5` (fully grounded) and its confidence `|score - 0.5|`: the binary decision is
    the one the escalation band and the flag act on, and a 4-way verdict's own confidence would rank a
    "partially grounded, 0.6" above a "fully grounded, 0.55" although both are near a coin toss for the
    grounded-or-not question. `tiebreak` (same length) orders items of equal confidence, most confident
    first (an isotonic map gives many equal scores); without it ties keep their input order.
    """
    n = len(scores)
    keys = [abs(s - 0.5) for s in scores]
    second = tiebreak if tiebreak is not None else [0.0] * n
    order = sorted(range(n), key=lambda i: (-keys[i], -second[i], i))
    out = []
    for share in coverages:
        top = order[: max(1, round(share * n))] if n else []
        gold = [positive[i] for i in top]
        called = [scores[i] >= 0.5 for i in top]
        out.append(
            {
                "coverage": share,
                "count": len(top),
                "min_confidence": keys[top[-1]] + 0.5 if top else None,
                "binary_accuracy": accuracy(gold, called),
                "balanced_accuracy": balanced_accuracy(gold, called) if top else None,
            }
        )
    return out


def _tokens(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _marked(text: str, spans: Iterable[str]) -> set[int]:
    """Indexes of the tokens of `text` covered by any span (every occurrence; case-insensitive fallback)."""
    covered: set[tuple[int, int]] = set()
    lowered = text.lower()
    for span in spans:
        span = span.strip()
        if not span:
            continue
        haystack, needle = (text, span) if span in text else (lowered, span.lower())
        start = haystack.find(needle)
        while start >= 0:
            covered.add((start, start + len(needle)))
            start = haystack.find(needle, start + 1)
    return {i for i, (a, b) in enumerate(_tokens(text)) if any(a < e and s < b for s, e in covered)}


def span_token_f1(text: str, gold_spans: Sequence[str], predicted_spans: Sequence[str]) -> tuple[int, int, int]:
    """(true positive, predicted, gold) token counts of the unsupported spans of one text; sum them for micro F1."""
    gold = _marked(text, gold_spans)
    pred = _marked(text, predicted_spans)
    return len(gold & pred), len(pred), len(gold)


def flags_sentence(predicted: str, confidence: float, threshold: float) -> bool:
    """The pipeline's critical-flag rule: an ungrounded or contradicted verdict, or confidence under threshold."""
    return predicted in _FLAGGED_VERDICTS or confidence < threshold


@dataclass(frozen=True)
class ThresholdPoint:
    """Flagging quality at one confidence threshold; 'positive' here means not fully grounded."""

    threshold: float
    flagged: int
    precision: float | None
    recall: float | None


def threshold_sweep(
    items: Sequence[Scored],
    *,
    positive: str = "fully_grounded",
    rule: Callable[[str, float, float], bool] = flags_sentence,
    thresholds: Sequence[float] | None = None,
) -> list[ThresholdPoint]:
    """Precision and recall of the flag rule for catching items whose gold label is not `positive`."""
    if thresholds is None:
        thresholds = [round(0.01 * i, 2) for i in range(101)]
    bad = [it.gold != positive for it in items]
    n_bad = sum(bad)
    points = []
    for t in thresholds:
        flagged = [rule(it.predicted, it.confidence, t) for it in items]
        tp = sum(f and b for f, b in zip(flagged, bad, strict=True))
        n_flagged = sum(flagged)
        points.append(
            ThresholdPoint(
                threshold=t,
                flagged=n_flagged,
                precision=tp / n_flagged if n_flagged else None,
                recall=tp / n_bad if n_bad else None,
            )
        )
    return points


def recommend_threshold(
    points: Sequence[ThresholdPoint], *, target_precision: float | None = None, target_recall: float | None = None
) -> ThresholdPoint | None:
    """The threshold meeting the target: for precision the one with most recall, for recall the fewest flags.

    None when no threshold in the sweep reaches the target.
    """
    if target_precision is not None and target_recall is None:
        ok = [p for p in points if p.precision is not None and p.precision >= target_precision]
        return max(ok, key=lambda p: (p.recall or 0.0, -p.threshold), default=None)
    if target_recall is not None and target_precision is None:
        ok = [p for p in points if p.recall is not None and p.recall >= target_recall]
        return min(ok, key=lambda p: (p.flagged, p.threshold), default=None)
    raise ValueError("give exactly one of target_precision and target_recall")


def bootstrap_intervals(
    items: Sequence[Scored], *, positive: str, resamples: int = 200, seed: int = 0, level: float = 0.95
) -> dict[str, tuple[float, float] | None]:
    """Percentile bootstrap intervals of strict accuracy, binary balanced accuracy and ROC-AUC.

    Resampling the labeled items shows how much of a difference between two verifier versions is noise:
    on a few hundred records, a few points of balanced accuracy often are.
    """
    rng = random.Random(seed)
    draws: dict[str, list[float]] = {"accuracy": [], "binary_balanced_accuracy": [], "roc_auc": []}
    n = len(items)
    for _ in range(resamples if n else 0):
        sample = [items[rng.randrange(n)] for _ in range(n)]
        gold_pos = [it.gold == positive for it in sample]
        drawn = {
            "accuracy": accuracy([it.gold for it in sample], [it.predicted for it in sample]),
            "binary_balanced_accuracy": balanced_accuracy(gold_pos, [it.predicted == positive for it in sample]),
            "roc_auc": roc_auc(gold_pos, [it.score for it in sample]),
        }
        for name, value in drawn.items():
            if value is not None:
                draws[name].append(value)
    tail = (1.0 - level) / 2.0
    out: dict[str, tuple[float, float] | None] = {}
    for name, values in draws.items():
        values.sort()
        if len(values) < 2:
            out[name] = None
            continue
        lo = values[int(tail * (len(values) - 1))]
        hi = values[int(round((1.0 - tail) * (len(values) - 1)))]
        out[name] = (lo, hi)
    return out


def classification_metrics(items: Sequence[Scored], labels: Sequence[str], *, positive: str) -> dict:
    """Strict, compatible and binary scores, kappa, ROC-AUC, calibration and the confusion matrix of `items`."""
    gold = [it.gold for it in items]
    pred = [it.predicted for it in items]
    is_pos = [g == positive for g in gold]
    pred_pos = [p == positive for p in pred]
    scores = [it.score for it in items]
    bins = reliability_bins(is_pos, scores)
    acceptable = [it for it in items if it.acceptable]
    return {
        "n": len(items),
        "accuracy": accuracy(gold, pred),
        "macro_f1": macro_f1(gold, pred, labels),
        "compatible_accuracy": (
            sum(it.predicted in it.acceptable for it in acceptable) / len(acceptable) if acceptable else None
        ),
        "binary_balanced_accuracy": balanced_accuracy(is_pos, pred_pos),
        "binary_accuracy": accuracy(is_pos, pred_pos),
        "cohen_kappa": cohen_kappa(gold, pred),
        "roc_auc": roc_auc(is_pos, scores),
        "expected_calibration_error": expected_calibration_error(bins),
        "labels": list(labels),
        "confusion_matrix": confusion_matrix(gold, pred, labels),
        "per_class": per_class(gold, pred, labels),
        "compatible_recall": compatible_recall(items, labels),
        "reliability": bins,
    }
