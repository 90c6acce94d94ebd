"""A calibration file, as the verifiers use it at run time: raw score -> calibrated probability, and who decides.

`groundwatch calibrate --fit OUT.json` fits one on labelled data (`transforms.evaluation`); `audit`, `monitor`
and `serve` take it with `--calibration FILE`. It holds, per stage of the cascade (`heuristic`, `model`):

- a monotone map from the stage's raw score (its probability that a sentence is fully grounded, the verdict's
  `grounded_probability`) to a
  calibrated probability of "fully grounded", as the knots of a piecewise-linear function (isotonic fits are
  step functions, which knots express exactly);
- optionally a verdict model (`VerdictModel`): a logistic curve of the logit of the raw score, with its own
  slope for "fully grounded" verdicts and for the others, and an offset per verdict class. A verdict's
  probability then comes from it (`verdict_probability`) and the knots serve callers that have only a score;
- the escalation band: a calibrated probability inside `[low, high]` is not sure enough to reach the target
  accuracy the file was fitted for, so the sentence goes to the next stage (the last stage decides everything).

    calibration = Calibration.load("cal.json")
    p = calibration.stage("heuristic").verdict_probability(verdict)
    calibration.stage("heuristic").escalates(p)

The file's SHA-256 (`Calibration.digest`) is written to the lake beside the verifier version, so every verdict
says which calibration produced its confidence.

A file may also hold a section per tenant (`tenants`), each a calibration of its own fitted on that tenant's
reviews (`groundwatch calibrate --from-lake L --tenant T --fit FILE`); the stages at the top are the default
section, for every other tenant. `calibration.section("acme")` names the section that decides a tenant's
responses and gives it; the lake's `responses.calibration_section` records that name.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from schemas import AttributionVerdict, EvidencePassage, SentenceVerdict, verdict_confidence
from transforms.verify.base import VerificationResult, Verifier

__all__ = [
    "FORMAT",
    "Calibration",
    "CalibratedVerifier",
    "DEFAULT_SECTION",
    "StageCalibration",
    "VERDICT_FEATURES",
    "VerdictModel",
    "calibrated_verdict",
    "calibration_sha256",
    "sigmoid",
    "verdict_features",
]

FORMAT = "groundwatch-calibration/1"
DEFAULT_SECTION = "default"
"""The name of a file's top-level stages, the section of every tenant without one of its own."""

VERDICT_FEATURES = (
    "logit_if_grounded",
    "logit_otherwise",
    "contradicted",
    "ungrounded",
    "partially_grounded",
)
"""The inputs of a `VerdictModel`, all read from the verdict alone (its class and confidence), so stored verdicts
can be recalibrated: the logit of the raw score when the verdict is fully grounded, else 0; the same for the other
verdicts; one indicator per not-grounded class."""

_SCORE_CLIP = 5e-5
"""Scores reach 0 and 1, so their logits are clipped: at half the heuristic's rounding step (confidences have 4
decimals), so a score of 0 stays apart from one of 0.0001 (a clip at 1e-3 merged them, and on labelled data the
sentences the heuristic scores exactly 0 or 1 are right far more often than those just inside)."""


def calibration_sha256(calibration: Calibration | None) -> str | None:
    """The lake's `calibration_sha256` for `calibration`: its file's digest; None without one (or an unsaved one)."""
    return (calibration.digest or None) if calibration is not None else None


def sigmoid(z: float) -> float:
    """The logistic function, without overflow for a large negative z."""
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def verdict_features(score: float, verdict: str) -> tuple[float, ...]:
    """The `VERDICT_FEATURES` of one verdict: its raw grounded probability and its class (an `AttributionVerdict`
    value)."""
    s = min(max(score, _SCORE_CLIP), 1.0 - _SCORE_CLIP)
    z = math.log(s / (1.0 - s))
    grounded = verdict == AttributionVerdict.fully_grounded.value
    return (
        z if grounded else 0.0,
        0.0 if grounded else z,
        float(verdict == AttributionVerdict.contradicted.value),
        float(verdict == AttributionVerdict.ungrounded.value),
        float(verdict == AttributionVerdict.partially_grounded.value),
    )


@dataclass(frozen=True)
class VerdictModel:
    """P(fully grounded) = sigmoid(bias + weights . verdict_features(score, verdict)); monotone in the score for
    every verdict class (the two slopes are >= 0)."""

    bias: float
    weights: tuple[float, ...]
    """One per `VERDICT_FEATURES` name, in that order."""

    def __post_init__(self) -> None:
        if len(self.weights) != len(VERDICT_FEATURES):
            raise ValueError(f"a verdict model needs {len(VERDICT_FEATURES)} weights, got {len(self.weights)}")
        if not all(math.isfinite(w) for w in (self.bias, *self.weights)):
            raise ValueError("verdict model weights must be finite numbers")
        if self.weights[0] < 0 or self.weights[1] < 0:
            raise ValueError("a verdict model's score slopes must be >= 0 (monotone in the score)")

    def probability(self, score: float, verdict: str) -> float:
        z = self.bias + sum(w * x for w, x in zip(self.weights, verdict_features(score, verdict), strict=True))
        return sigmoid(z)

    def to_json(self) -> dict[str, Any]:
        weights = dict(zip(VERDICT_FEATURES, self.weights, strict=True))
        return {"kind": "logistic", "bias": self.bias, "weights": weights}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VerdictModel:
        if data.get("kind") != "logistic" or set(data["weights"]) != set(VERDICT_FEATURES):
            raise ValueError(f"a verdict model is logistic over {', '.join(VERDICT_FEATURES)}")
        return cls(float(data["bias"]), tuple(float(data["weights"][k]) for k in VERDICT_FEATURES))


def calibrated_verdict(verdict: SentenceVerdict, stage: StageCalibration) -> SentenceVerdict:
    """The verdict with its confidence calibrated: its `grounded_probability` becomes the calibrated
    P(fully grounded), and `confidence` keeps meaning "how sure of this verdict", so the threshold reads it as
    before."""
    p = stage.verdict_probability(verdict)
    return verdict.model_copy(update={"confidence": round(verdict_confidence(verdict.attribution_verdict, p), 6)})


@dataclass(frozen=True)
class StageCalibration:
    """One stage's map from raw score (or verdict) to calibrated probability, and the band it escalates."""

    knots_x: tuple[float, ...]
    """Raw scores, increasing, in [0, 1]."""
    knots_y: tuple[float, ...]
    """Calibrated probabilities at those scores, non-decreasing, in [0, 1]."""
    escalate: tuple[float, float] | None = None
    """Calibrated probabilities in [low, high] go to the next stage; None: this stage decides everything."""
    model: VerdictModel | None = None
    """When given, a verdict's probability comes from it; the knots remain for callers with a score only."""

    def __post_init__(self) -> None:
        if len(self.knots_x) != len(self.knots_y) or not self.knots_x:
            raise ValueError("a calibration map needs as many probabilities as scores, at least one")
        if any(b < a for a, b in zip(self.knots_x, self.knots_x[1:], strict=False)):
            raise ValueError("calibration scores must be increasing")
        if any(b < a for a, b in zip(self.knots_y, self.knots_y[1:], strict=False)):
            raise ValueError("a calibration map must be monotone (non-decreasing)")
        if not all(0.0 <= v <= 1.0 for v in (*self.knots_x, *self.knots_y)):
            raise ValueError("calibration scores and probabilities must be in [0, 1]")
        if self.escalate is not None and not 0.0 <= self.escalate[0] <= self.escalate[1] <= 1.0:
            raise ValueError(f"an escalation band must satisfy 0 <= low <= high <= 1, got {self.escalate}")

    def probability(self, score: float) -> float:
        """The calibrated probability of "fully grounded" for a raw score (linear between knots, flat outside)."""
        xs, ys = self.knots_x, self.knots_y
        if score <= xs[0]:
            return ys[0]
        if score >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, score)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (score - x0) / (x1 - x0)

    def probability_of(self, score: float, verdict: str) -> float:
        """The calibrated probability of a verdict given as its raw grounded probability and its class."""
        return self.probability(score) if self.model is None else self.model.probability(score, verdict)

    def verdict_probability(self, verdict: SentenceVerdict) -> float:
        """The calibrated probability of "fully grounded" for a verdict (by the verdict model when there is one)."""
        return self.probability_of(verdict.grounded_probability, verdict.attribution_verdict.value)

    def escalates(self, probability: float) -> bool:
        """Whether a sentence with this calibrated probability must go to the next stage."""
        return self.escalate is not None and self.escalate[0] <= probability <= self.escalate[1]

    def to_json(self) -> dict[str, Any]:
        out = {"knots_x": list(self.knots_x), "knots_y": list(self.knots_y), "escalate": self.escalate}
        return out if self.model is None else {**out, "model": self.model.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageCalibration:
        band = data.get("escalate")
        model = None if data.get("model") is None else VerdictModel.from_json(data["model"])
        return cls(tuple(data["knots_x"]), tuple(data["knots_y"]), None if band is None else (band[0], band[1]), model)


@dataclass(frozen=True)
class Calibration:
    """A whole calibration file: the stages it calibrates, what it was fitted for, and its tenants' sections."""

    stages: dict[str, StageCalibration]
    target_accuracy: float
    """The binary accuracy the escalation bands were chosen to reach on the decided sentences."""
    fitted_on: dict[str, Any] = field(default_factory=dict)
    """What it was fitted on (records, sources, folds, the verifier version): information only."""
    digest: str = ""
    """SHA-256 of the file's bytes (empty for a calibration not read from a file)."""
    tenants: dict[str, Calibration] = field(default_factory=dict)
    """Per tenant, a section of its own (a calibration without sections); the top-level stages are the default."""

    def stage(self, name: str) -> StageCalibration | None:
        return self.stages.get(name)

    def section(self, tenant: str | None) -> tuple[str, Calibration]:
        """The section that decides `tenant`'s responses, by name: its own if the file has one, else the default.
        A section carries the whole file's digest, the one the lake records."""
        if tenant is None or tenant not in self.tenants:
            return DEFAULT_SECTION, replace(self, tenants={}) if self.tenants else self
        return tenant, replace(self.tenants[tenant], digest=self.digest)

    def with_section(self, tenant: str | None, section: Calibration) -> Calibration:
        """This file with `section` as `tenant`'s section (None: as the default stages, keeping the tenants)."""
        if tenant is None:
            return replace(section, tenants=dict(self.tenants), digest="")
        if tenant == DEFAULT_SECTION:
            raise ValueError(f"a tenant cannot be called {DEFAULT_SECTION!r}: that is the default section's name")
        return replace(self, tenants={**self.tenants, tenant: replace(section, tenants={}, digest="")}, digest="")

    def _body(self) -> dict[str, Any]:
        return {
            "target_accuracy": self.target_accuracy,
            "fitted_on": self.fitted_on,
            "stages": {name: stage.to_json() for name, stage in self.stages.items()},
        }

    def to_json(self) -> dict[str, Any]:
        out = {"format": FORMAT, **self._body()}
        # A file without sections keeps the bytes it always had, so its digest does not change.
        return {**out, "tenants": {t: c._body() for t, c in self.tenants.items()}} if self.tenants else out

    def save(self, path: str) -> str:
        """Write the file; returns its digest."""
        data = (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode("utf-8")
        with open(path, "wb") as f:
            f.write(data)
        return hashlib.sha256(data).hexdigest()

    @classmethod
    def _from_body(cls, data: dict[str, Any], digest: str = "") -> Calibration:
        stages = {name: StageCalibration.from_json(s) for name, s in data["stages"].items()}
        return cls(stages, float(data["target_accuracy"]), data.get("fitted_on", {}), digest)

    @classmethod
    def load(cls, path: str) -> Calibration:
        """Read and check a calibration file; ValueError names what is wrong with it."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
            data = json.loads(raw)
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read calibration file {path}: {e}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path} is not a calibration file (format {FORMAT!r} expected)")
        try:
            tenants = {str(t): cls._from_body(body) for t, body in data.get("tenants", {}).items()}
            if DEFAULT_SECTION in tenants:
                raise ValueError(f"a tenant section cannot be called {DEFAULT_SECTION!r}")
            return replace(cls._from_body(data, hashlib.sha256(raw).hexdigest()), tenants=tenants)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"calibration file {path} is invalid: {e}") from None


class CalibratedVerifier(Verifier):
    """A one-stage verifier whose confidences go through a stage's calibration map (`calibrated_verdict`).

    Its name and version are the wrapped verifier's: the lake tells calibrated rows apart by
    `calibration_sha256`, the digest of the file the map came from.
    """

    def __init__(self, inner: Verifier, stage: StageCalibration, *, calibration_sha256: str):
        self._inner, self._stage = inner, stage
        self.name, self.version = inner.name, inner.version
        self.calibration_sha256 = calibration_sha256

    @property
    def escalation_band(self) -> tuple[float, float] | None:
        """The calibrated probabilities its stage is not sure of: the sentences routing calls uncertain."""
        return self._stage.escalate

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        result = self._inner.verify(sentences, evidence)
        verdicts = tuple(calibrated_verdict(v, self._stage) for v in result.verdicts)
        return VerificationResult(verdicts, result.decided_by, result.judge_status, result.judge_calls)
