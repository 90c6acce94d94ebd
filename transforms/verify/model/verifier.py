"""`ModelVerifier` ("model"): every sentence judged by the cross-encoder, the heuristic only picking candidates.

    verifier = make_verifier("model", model_path="/models/nli", model_top_k=3)
    result = verifier.verify(sentences, passages)       # result.decided_by == ("model", ...)

The model is loaded when the verifier is built (a bad folder fails there, naming `--model-path`) and once per
process whatever the number of verifiers (`load_scorer`). A model that fails on an answer raises
`ModelRunError` (not retryable): the audit's verify stage turns that response into a dead letter with the
reason, and the run goes on. With a calibration file that has a "model" stage, confidences are calibrated.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

from schemas import EvidencePassage
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.calibration import Calibration, calibration_sha256
from transforms.verify.model.cascade import MODEL, CascadeStages, ModelStage, StageGate, load_calibration
from transforms.verify.model.files import ModelFiles
from transforms.verify.model.stage import DEFAULT_BATCH_SIZE, DEFAULT_CONTRADICTION_THRESHOLD, DEFAULT_TOP_K

__all__ = ["MODEL_VERSION", "ModelVerifier", "model_alone_stages", "model_digest", "model_stage_from", "model_version"]

MODEL_VERSION = "model-1"
"""`ModelVerifier`'s version before the model's digest is known."""


def model_digest(folder: str) -> str:
    """The first 12 hex digits of the SHA-256 of model.onnx, labels.json and tokenizer.json: the model's identity
    in the lake's verifier version."""
    files = ModelFiles.of(folder)
    h = hashlib.sha256()
    for path in (files.model, files.labels, files.tokenizer):
        with open(path, "rb") as f:
            for block in iter(functools.partial(f.read, 1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def model_version(folder: str) -> str:
    """The lake's verifier version of `--verifier model` on the model in `folder`: `model-1+<model_digest>`, in
    the plain verifier and in the pipeline alike."""
    return f"{MODEL_VERSION}+{model_digest(folder)}"


def model_stage_from(
    model_path: str | None,
    model_top_k: int | None = None,
    model_max_length: int | None = None,
    model_batch_size: int | None = None,
    contradiction_threshold: float | None = None,
) -> ModelStage | None:
    """The model stage from the `--model-*` options, its model loaded (so a bad folder fails now); None without a
    path."""
    if not model_path:
        return None
    return _loaded_stage(model_path, model_top_k, model_max_length, model_batch_size, contradiction_threshold)


def _loaded_stage(
    model_path: str,
    model_top_k: int | None,
    model_max_length: int | None,
    model_batch_size: int | None,
    contradiction_threshold: float | None,
) -> ModelStage:
    """`model_stage_from` for a path that is known to be there."""
    stage = ModelStage(
        model_path,
        top_k=DEFAULT_TOP_K if model_top_k is None else model_top_k,
        max_length=model_max_length,
        batch_size=DEFAULT_BATCH_SIZE if model_batch_size is None else model_batch_size,
        contradiction_threshold=DEFAULT_CONTRADICTION_THRESHOLD
        if contradiction_threshold is None
        else contradiction_threshold,
    )
    stage.scorer()
    return stage


def model_alone_stages(
    calibration: Calibration | str | None,
    model_path: str | None,
    model_top_k: int | None = None,
    model_max_length: int | None = None,
    model_batch_size: int | None = None,
) -> CascadeStages:
    """`--verifier model` as cascade stages, for the pipeline: the heuristic's gate hands every claim on (the
    alignment still picks the pairs), and the model decides all of them, calibrated by the file's "model" stage
    as `ModelVerifier` does. The model is loaded now, so a bad folder fails before the run."""
    if not model_path:
        raise ValueError("--verifier model needs --model-path: a folder with model.onnx, tokenizer.json ...")
    stage = _loaded_stage(model_path, model_top_k, model_max_length, model_batch_size, None)
    return CascadeStages(StageGate(band=(0.0, 1.0)), stage, StageGate.of(load_calibration(calibration), MODEL))


class ModelVerifier(Verifier):
    """The cross-encoder alone, on the few evidence sentences the heuristic's alignment ranks best per claim."""

    name = MODEL
    version = MODEL_VERSION

    def __init__(
        self,
        model_path: str | None = None,
        model_top_k: int | None = None,
        model_max_length: int | None = None,
        model_batch_size: int | None = None,
        contradiction_threshold: float | None = None,
        calibration: Calibration | str | None = None,
    ):
        if not model_path:
            raise ValueError("--verifier model needs --model-path: a folder with model.onnx, tokenizer.json ...")
        self.stage = _loaded_stage(model_path, model_top_k, model_max_length, model_batch_size, contradiction_threshold)
        calibration = load_calibration(calibration)
        self._gate = StageGate.of(calibration, MODEL)
        self.version = model_version(model_path)
        self.calibration_sha256 = calibration_sha256(calibration)

    def __repr__(self) -> str:
        return f"ModelVerifier({self.stage.model_path!r}, top_k={self.stage.top_k})"

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        scored = self.stage.verdicts(sentences, evidence)
        return VerificationResult.decided(self.name, [self._gate.decided(scored[i]) for i in range(len(sentences))])
