"""The calibration map families `groundwatch calibrate --map` fits: each turns labelled scores into a
`StageCalibration` without band (the band comes after, from held-out probabilities: `fit_calibration`).

    stage = MAPS["logistic"](scores, verdicts, positive)
    stage.probability_of(0.93, "fully_grounded")

- `isotonic`: pool-adjacent-violators from the raw grounded probability to the observed rate of "fully grounded";
  follows any monotone curve, but its flat steps tie many sentences.
- `logistic`: the isotonic knots (for callers that have only a score) and a `VerdictModel` of the verdict's
  score and class (`transforms.evaluation.logistic`), smooth, so distinct verdicts never tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from transforms.evaluation.logistic import fit_verdict_model
from transforms.verify.calibration import StageCalibration

__all__ = ["MAPS", "MAP_NAMES", "MapFit", "fit_isotonic", "fit_logistic_map", "isotonic_fit"]


def isotonic_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The least-squares non-decreasing fit of ys on xs (pool adjacent violators), as the knots of
    `StageCalibration`: each pooled block is flat from its smallest to its largest x, linear between blocks."""
    if not xs or len(xs) != len(ys):
        raise ValueError("an isotonic fit needs as many labels as scores, at least one")
    tied: dict[float, list[float]] = {}  # one value per score: equal scores are pooled before anything else
    for x, y in zip(xs, ys, strict=True):
        point = tied.setdefault(x, [0.0, 0])
        point[0] += y
        point[1] += 1
    blocks: list[list[float]] = []  # [sum of y, count, smallest x, largest x]
    for x in sorted(tied):
        blocks.append([tied[x][0], tied[x][1], x, x])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count, _, hi = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
            blocks[-1][3] = hi
    knots_x, knots_y = [], []
    for total, count, lo, hi in blocks:
        mean = round(total / count, 6)
        for x in (lo, hi) if hi > lo else (lo,):
            knots_x.append(x)
            knots_y.append(mean)
    return tuple(knots_x), tuple(knots_y)


MapFit = Callable[[Sequence[float], Sequence[str] | None, Sequence[bool]], StageCalibration]
"""fit(scores, verdicts or None, positive) -> a stage calibration without band: one map family."""


def fit_isotonic(scores: Sequence[float], verdicts: Sequence[str] | None, positive: Sequence[bool]) -> StageCalibration:
    """The isotonic map of the scores (verdicts unused)."""
    return StageCalibration(*isotonic_fit(list(scores), [float(y) for y in positive]))


def fit_logistic_map(
    scores: Sequence[float], verdicts: Sequence[str] | None, positive: Sequence[bool]
) -> StageCalibration:
    """The isotonic knots of the scores (for score-only callers) and the verdict model of score and class."""
    if verdicts is None:
        raise ValueError("the logistic map needs each record's verdict")
    return replace(fit_isotonic(scores, None, positive), model=fit_verdict_model(scores, verdicts, positive))


MAPS: dict[str, MapFit] = {"isotonic": fit_isotonic, "logistic": fit_logistic_map}
"""The map families `groundwatch calibrate --map` offers."""

MAP_NAMES = {
    "isotonic": "isotonic (pool adjacent violators)",
    "logistic": "logistic over the verdict (logit of the raw score, slope per grounded/not, offset per class), "
    "ridge-regularised; isotonic knots for score-only callers",
}
