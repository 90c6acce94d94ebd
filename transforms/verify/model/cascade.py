"""The cascade's routing: heuristic, then model, then judge, each stage seeing only what the one before left open.

    stages = CascadeStages(heuristic_gate=StageGate.of(calibration, "heuristic", band=(0.5, 0.8)),
                           model=ModelStage("/models/nli"), model_gate=StageGate.of(calibration, "model"))
    staged = stages.run(heuristic_verdicts, sentences, evidence)
    staged.verdicts, staged.decided_by, staged.undecided      # undecided: the indexes the judge should see

A stage escalates a verdict by its gate: with a calibration file, when the stage's calibrated probability of
"fully grounded" falls in the file's escalation band (`StageCalibration.escalates`); without one (or when the
file has no entry for the stage), when the verdict's raw confidence lies in a band (`--cascade-band` for the
heuristic, `DEFAULT_MODEL_BAND` for the model). Verdicts a calibrated stage gives carry its calibrated
confidence (the judge's fallbacks too). Without a model the cascade is heuristic then judge, as before. A
sentence the judge then fails to settle keeps the verdict of the stage before it, and `decided_by` names that
stage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemas import EvidencePassage, SentenceVerdict
from transforms.verify.calibration import Calibration, StageCalibration, calibrated_verdict
from transforms.verify.model.scorer import PairScorer, load_scorer
from transforms.verify.model.stage import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_CONTRADICTION_THRESHOLD,
    DEFAULT_TOP_K,
    model_verdicts,
)

__all__ = ["DEFAULT_MODEL_BAND", "CascadeStages", "ModelStage", "StageGate", "Staged", "load_calibration"]

DEFAULT_MODEL_BAND = (0.0, 0.8)
"""Without a calibration file, model verdicts with a confidence in this closed range go on to the judge: the
model decides only where it gives its verdict more than 0.8 (a confidence under 0.5 happens when no label of
three has a majority)."""

HEURISTIC, MODEL = "heuristic", "model"


def load_calibration(calibration: Calibration | str | None) -> Calibration | None:
    """A `Calibration`, or one read from a path (ValueError names the problem), or None."""
    if calibration is None or isinstance(calibration, Calibration):
        return calibration
    return Calibration.load(str(calibration))


@dataclass(frozen=True)
class StageGate:
    """When one stage hands a verdict on: by its calibration's band, else by a band on raw confidence."""

    calibration: StageCalibration | None = None
    band: tuple[float, float] | None = None

    @classmethod
    def of(cls, calibration: Calibration | None, stage: str, band: tuple[float, float] | None = None) -> StageGate:
        return cls(calibration.stage(stage) if calibration is not None else None, band)

    def escalates(self, verdict: SentenceVerdict) -> bool:
        if self.calibration is not None:
            return self.calibration.escalates(self.calibration.verdict_probability(verdict))
        return self.band is not None and self.band[0] <= verdict.confidence <= self.band[1]

    def decided(self, verdict: SentenceVerdict) -> SentenceVerdict:
        """The verdict as this stage writes it when it decides: calibrated if the stage has a calibration."""
        return verdict if self.calibration is None else calibrated_verdict(verdict, self.calibration)


@dataclass(frozen=True)
class ModelStage:
    """Configuration of the model stage; the model itself is loaded once per process (`load_scorer`)."""

    model_path: str
    top_k: int = DEFAULT_TOP_K
    max_length: int | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    contradiction_threshold: float = DEFAULT_CONTRADICTION_THRESHOLD

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"--model-top-k must be >= 1, got {self.top_k}")
        if self.batch_size < 1:
            raise ValueError(f"--model-batch-size must be >= 1, got {self.batch_size}")
        if self.max_length is not None and self.max_length < 8:
            raise ValueError(f"--model-max-length must be >= 8, got {self.max_length}")

    def scorer(self) -> PairScorer:
        return load_scorer(self.model_path, max_length=self.max_length)

    def verdicts(
        self, sentences: Sequence[str], evidence: Sequence[EvidencePassage], indexes: Sequence[int] | None = None
    ) -> dict[int, SentenceVerdict]:
        return model_verdicts(
            self.scorer(),
            sentences,
            evidence,
            indexes=indexes,
            top_k=self.top_k,
            batch_size=self.batch_size,
            contradiction_threshold=self.contradiction_threshold,
        )


@dataclass(frozen=True)
class Staged:
    """The verdicts after the offline stages, who decided each, and the indexes left for the judge."""

    verdicts: tuple[SentenceVerdict, ...]
    decided_by: tuple[str, ...]
    undecided: tuple[int, ...]


@dataclass(frozen=True)
class CascadeStages:
    """The offline part of the cascade: the heuristic's gate, and optionally the model stage and its gate."""

    heuristic_gate: StageGate
    model: ModelStage | None = None
    model_gate: StageGate = StageGate(band=DEFAULT_MODEL_BAND)

    def run(
        self, heuristic: Sequence[SentenceVerdict], sentences: Sequence[str], evidence: Sequence[EvidencePassage]
    ) -> Staged:
        staged = self.gate_heuristic(heuristic)
        if self.model is None or not staged.undecided:
            return staged
        return self.apply_model(staged, self.model.verdicts(sentences, evidence, staged.undecided))

    def gate_heuristic(self, heuristic: Sequence[SentenceVerdict]) -> Staged:
        """The heuristic's verdicts as its gate writes them, and the indexes it escalates."""
        # Every verdict a stage gives is written as that stage's (calibrated) one, the judge's fallbacks included.
        verdicts = tuple(self.heuristic_gate.decided(v) for v in heuristic)
        open_ = tuple(v.sentence_index for v in heuristic if self.heuristic_gate.escalates(v))
        return Staged(verdicts, (HEURISTIC,) * len(heuristic), open_)

    def apply_model(self, staged: Staged, scored: Mapping[int, SentenceVerdict]) -> Staged:
        """`staged` with the model's verdicts (`scored`, by index) on what it left open, and what the model's
        gate escalates in turn. The same step whether the model ran here or in Beam's RunInference."""
        verdicts, decided_by, still_open = list(staged.verdicts), list(staged.decided_by), []
        for i in staged.undecided:
            verdicts[i], decided_by[i] = self.model_gate.decided(scored[i]), MODEL
            if self.model_gate.escalates(scored[i]):
                still_open.append(i)
        return Staged(tuple(verdicts), tuple(decided_by), tuple(still_open))
