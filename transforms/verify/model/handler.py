"""The cross-encoder as a Beam `ModelHandler`, for `RunInference` over (evidence sentence, claim) pairs.

    scored, failed = pairs | RunInference(PairModelHandler("/models/nli", batch_size=32)).with_exception_handling()
    # scored: PredictionResult(example=(evidence, claim), inference=PairScores(...), model_id=<the model folder>)

`load_model()` runs on the worker: RunInference holds the model in Beam's shared handle, one per worker process,
and the loader (`load_scorer`) is cached per process as well, so the verifiers running in the same process share
it. Batching comes from `batch_elements_kwargs` (`batch_size` pairs per `session.run`, fewer at a bundle's
end). A batch the model fails on goes to RunInference's dead-letter output (`with_exception_handling()`), with
the error; nothing else in the pipeline stops.

Beam loads the model in the RunInference DoFn's `setup()`, where `with_exception_handling()` catches nothing: a
model that raised there would fail the whole job. So `load_model()` never raises: a folder that no longer loads
on the worker gives an `UnloadedModel` holding the reason, and every batch sent to it fails with a
`ModelRunError` naming it, which lands in the dead-letter output like any other failed batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from transforms.verify.model.files import ModelFiles
from transforms.verify.model.scorer import ModelRunError, PairScorer, load_scorer
from transforms.verify.model.stage import DEFAULT_BATCH_SIZE

__all__ = ["PairModelHandler", "UnloadedModel"]


class UnloadedModel:
    """What `load_model()` gives when the model does not load: the reason, for every batch's error."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"UnloadedModel({self.reason!r})"


class PairModelHandler(ModelHandler[tuple[str, str], PredictionResult, PairScorer | UnloadedModel]):
    """Scores (evidence, claim) pairs with the ONNX cross-encoder in `model_path`."""

    def __init__(self, model_path: str, *, max_length: int | None = None, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__()
        ModelFiles.of(model_path)  # a missing folder or file fails at construction, naming --model-path
        if batch_size < 1:
            raise ValueError(f"--model-batch-size must be >= 1, got {batch_size}")
        self._path, self._max_length, self._batch_size = model_path, max_length, batch_size

    def __repr__(self) -> str:
        return f"PairModelHandler({self._path!r}, batch_size={self._batch_size})"

    def load_model(self) -> PairScorer | UnloadedModel:
        try:
            return load_scorer(self._path, max_length=self._max_length)
        except Exception as e:  # ModelLoadError, or whatever the files do on this worker: the batches say why
            return UnloadedModel(f"the model did not load: {type(e).__name__}: {e}"[:500])

    def run_inference(
        self,
        batch: Sequence[tuple[str, str]],
        model: PairScorer | UnloadedModel,
        inference_args: dict[str, Any] | None = None,
    ) -> Iterable[PredictionResult]:
        if isinstance(model, UnloadedModel):
            raise ModelRunError(model.reason)
        scores = model.score(list(batch))
        return [PredictionResult(pair, s, self._path) for pair, s in zip(batch, scores, strict=True)]

    def get_num_bytes(self, batch: Sequence[tuple[str, str]]) -> int:
        return sum(len(a.encode()) + len(b.encode()) for a, b in batch)

    def get_metrics_namespace(self) -> str:
        return "groundwatch.model"

    def batch_elements_kwargs(self) -> dict[str, Any]:
        # Full batches: BatchElements would otherwise start at one pair and grow; a bundle's end flushes the rest.
        return {"min_batch_size": self._batch_size, "max_batch_size": self._batch_size}
