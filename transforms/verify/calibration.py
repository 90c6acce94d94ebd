"""A calibration file, as the verifiers use it at run time: raw score -> calibrated probability, and who decides.

`groundwatch calibrate --fit OUT.json` fits one on labelled data (`transforms.evaluation`); `audit`, `monitor`
and `serve` take it with `--calibration FILE`. It holds, per stage of the cascade (`heuristic`, `model`):

- a monotone map from the stage's raw score (its belief that a sentence is fully grounded: `grounded_score`) to a
  calibrated probability of "fully grounded", as the knots of a piecewise-linear function (isotonic fits are
  step functions, which knots express exactly);
- the escalation band: a calibrated probability inside `[low, high]` is not sure enough to reach the target
  accuracy the file was fitted for, so the sentence goes to the next stage (the last stage decides everything).

    calibration = Calibration.load("cal.json")
    p = calibration.stage("heuristic").probability(grounded_score(verdict))
    calibration.stage("heuristic").escalates(p)

The file's SHA-256 (`Calibration.digest`) is written to the lake beside the verifier version, so every verdict
says which calibration produced its confidence.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from schemas import AttributionVerdict, SentenceVerdict

__all__ = ["FORMAT", "Calibration", "StageCalibration", "calibrated_verdict", "grounded_score"]

FORMAT = "groundwatch-calibration/1"


def grounded_score(verdict: SentenceVerdict) -> float:
    """A verifier's belief that the sentence is fully grounded: its confidence if it said so, else the complement."""
    if verdict.attribution_verdict == AttributionVerdict.fully_grounded:
        return verdict.confidence
    return 1.0 - verdict.confidence


def calibrated_verdict(verdict: SentenceVerdict, stage: StageCalibration) -> SentenceVerdict:
    """The verdict with its confidence calibrated: P(fully grounded) for a fully grounded verdict, else its
    complement, so `confidence` keeps meaning "how sure of this verdict" and the threshold reads it as before."""
    p = stage.probability(grounded_score(verdict))
    confidence = p if verdict.attribution_verdict == AttributionVerdict.fully_grounded else 1.0 - p
    return verdict.model_copy(update={"confidence": round(confidence, 6)})


@dataclass(frozen=True)
class StageCalibration:
    """One stage's map from raw score to calibrated probability, and the band it escalates."""

    knots_x: tuple[float, ...]
    """Raw scores, increasing, in [0, 1]."""
    knots_y: tuple[float, ...]
    """Calibrated probabilities at those scores, non-decreasing, in [0, 1]."""
    escalate: tuple[float, float] | None = None
    """Calibrated probabilities in [low, high] go to the next stage; None: this stage decides everything."""

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

    def escalates(self, probability: float) -> bool:
        """Whether a sentence with this calibrated probability must go to the next stage."""
        return self.escalate is not None and self.escalate[0] <= probability <= self.escalate[1]

    def to_json(self) -> dict[str, Any]:
        return {"knots_x": list(self.knots_x), "knots_y": list(self.knots_y), "escalate": self.escalate}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageCalibration:
        band = data.get("escalate")
        return cls(tuple(data["knots_x"]), tuple(data["knots_y"]), None if band is None else (band[0], band[1]))


@dataclass(frozen=True)
class Calibration:
    """A whole calibration file: the stages it calibrates and what it was fitted for."""

    stages: dict[str, StageCalibration]
    target_accuracy: float
    """The binary accuracy the escalation bands were chosen to reach on the decided sentences."""
    fitted_on: dict[str, Any] = field(default_factory=dict)
    """What it was fitted on (records, sources, folds, the verifier version): information only."""
    digest: str = ""
    """SHA-256 of the file's bytes (empty for a calibration not read from a file)."""

    def stage(self, name: str) -> StageCalibration | None:
        return self.stages.get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "target_accuracy": self.target_accuracy,
            "fitted_on": self.fitted_on,
            "stages": {name: stage.to_json() for name, stage in self.stages.items()},
        }

    def save(self, path: str) -> str:
        """Write the file; returns its digest."""
        data = (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode("utf-8")
        with open(path, "wb") as f:
            f.write(data)
        return hashlib.sha256(data).hexdigest()

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
            stages = {name: StageCalibration.from_json(s) for name, s in data["stages"].items()}
            return cls(
                stages, float(data["target_accuracy"]), data.get("fitted_on", {}), hashlib.sha256(raw).hexdigest()
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"calibration file {path} is invalid: {e}") from None
