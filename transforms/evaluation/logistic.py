"""A small L2-regularised logistic regression, fitted by Newton's method in plain Python, for calibration maps.

    model = fit_verdict_model(scores, verdicts, positive)   # a transforms.verify.calibration.VerdictModel
    model.probability(0.93, "fully_grounded")

Why a model this small: the calibration file is checked on data no one here has seen, so it must carry over.
Five inputs read from the verdict alone (`VERDICT_FEATURES`: the logit of the raw score with one slope for
"fully grounded" verdicts and one for the rest, and an offset per not-grounded class) and a ridge penalty on
standardised inputs keep it to what the labelled set can support; the grouped cross-validation in
`transforms.evaluation.fit_calibration` shows what it is worth held out. Unlike an isotonic map, the curve is
smooth, so sentences of different scores never tie, and ranking by max(p, 1 - p) ranks all of them.

A slope fitted below 0 would make the map fall as the score rises: it is fixed at 0 and the rest refitted, so
the model stays monotone in the score within every verdict class. No numpy: six unknowns, a few hundred rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from transforms.verify.calibration import VERDICT_FEATURES, VerdictModel, sigmoid, verdict_features

__all__ = ["DEFAULT_L2", "fit_logistic", "fit_verdict_model"]

DEFAULT_L2 = 3.0
"""Ridge penalty on the standardised weights (the bias is not penalised), against the sum of log losses: about
what scikit-learn calls C = 0.33: a moderate penalty. On the labelled set C from 0.1 to 1 gave the same
cross-validated figures within their fold-to-fold spread, so the value is not tuned to it."""


_BIAS_L2 = 1e-3
"""A faint pull of the bias towards 0: without it a training part whose labels are all equal sends the bias to
infinity (and the Newton system becomes singular); with it the bias stays finite and barely moves otherwise."""


def _ridge(a: int, c: int, l2: float) -> float:
    if a != c:
        return 0.0
    return l2 if a else _BIAS_L2


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the Hessian is positive definite with the ridge)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-12:
            raise ValueError("singular system in the logistic fit")
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def fit_logistic(
    rows: Sequence[Sequence[float]],
    positive: Sequence[bool],
    *,
    l2: float = DEFAULT_L2,
    fixed_zero: frozenset[int] = frozenset(),
    iterations: int = 50,
) -> tuple[float, list[float]]:
    """(bias, weights) minimising the log loss plus l2/2 * |w|^2 (and a faint penalty on the bias), the inputs
    standardised on these rows (the
    weights returned are for the raw inputs). Inputs in `fixed_zero`, and constant ones, get weight 0."""
    if not rows or len(rows) != len(positive):
        raise ValueError("a logistic fit needs as many labels as rows, at least one")
    if l2 <= 0:
        raise ValueError(f"the ridge penalty must be > 0, got {l2}")
    n, k = len(rows), len(rows[0])
    mean = [sum(r[j] for r in rows) / n for j in range(k)]
    sd = [math.sqrt(sum((r[j] - mean[j]) ** 2 for r in rows) / n) for j in range(k)]
    active = [j for j in range(k) if j not in fixed_zero and sd[j] > 1e-12]
    x = [[1.0] + [(r[j] - mean[j]) / sd[j] for j in active] for r in rows]
    y = [1.0 if p else 0.0 for p in positive]
    beta = [0.0] * (len(active) + 1)
    for _ in range(iterations):
        p = [sigmoid(sum(b * v for b, v in zip(beta, xi, strict=True))) for xi in x]
        m = range(len(beta))
        grad = [sum((p[i] - y[i]) * x[i][a] for i in range(n)) + (l2 * beta[a] if a else 0.0) for a in m]
        w = [p[i] * (1 - p[i]) for i in range(n)]
        grad[0] += _BIAS_L2 * beta[0]
        hess = [[sum(w[i] * x[i][a] * x[i][c] for i in range(n)) + _ridge(a, c, l2) for c in m] for a in m]
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-9:
            break
    weights = [0.0] * k
    bias = beta[0]
    for a, j in enumerate(active, start=1):
        weights[j] = beta[a] / sd[j]
        bias -= beta[a] * mean[j] / sd[j]
    return bias, weights


_SLOPES = (0, 1)  # the indexes of the two score slopes in VERDICT_FEATURES


def fit_verdict_model(
    scores: Sequence[float], verdicts: Sequence[str], positive: Sequence[bool], *, l2: float = DEFAULT_L2
) -> VerdictModel:
    """The `VerdictModel` of these verdicts (raw grounded probability and class each), monotone in the score."""
    if not (len(scores) == len(verdicts) == len(positive)):
        raise ValueError("a verdict model needs a score, a verdict and a label per record")
    rows = [verdict_features(s, v) for s, v in zip(scores, verdicts, strict=True)]
    fixed: frozenset[int] = frozenset()
    while True:
        bias, weights = fit_logistic(rows, positive, l2=l2, fixed_zero=fixed)
        falling = {j for j in _SLOPES if weights[j] < 0}
        if not falling:
            break
        fixed |= falling
    assert len(weights) == len(VERDICT_FEATURES)
    return VerdictModel(bias, tuple(weights))
