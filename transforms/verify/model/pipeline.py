"""`RunModelStage`: the model stage in the pipeline, through Beam's `RunInference` over (evidence, claim) pairs.

    modelled = plans | "ModelStage" >> RunModelStage(stages)      # plans: (response id, plan)
    modelled[PLANS], modelled[DEAD_LETTERS]

A plan is the verify step's record of one response (`_Plan` in `transforms.verify.judge.pipeline`, a NamedTuple):
this stage reads its `parsed`, `prepared` (the answer's claims) and `now`, and its staged verdicts (`heuristic`,
`decided_by`, `undecided`: the verdicts so far, who gave each, the indexes left open), and writes the last three
back with `_replace`. The steps, each labelled:

1. `PlanModelPairs`: for each plan with sentences left open, the `top_k` evidence sentences the heuristic's
   alignment ranks best for each (`plan_sentences`), as keyed pairs `(response id, (evidence, claim))`. A plan
   with nothing open skips the model.
2. `RunModel`: `RunInference(KeyedModelHandler(PairModelHandler))` with `with_exception_handling()`. Beam batches
   pairs across responses (up to `batch_size` per ONNX Runtime call) and loads the model once per worker
   process, in `load_model` (a model that does not load fails every batch, with the reason).
3. `RescoreFailedBatches`: one bad pair fails its whole batch, so the pairs of a failed batch are scored again,
   one per call; only the pairs that fail alone stay failed.
4. `JoinModelScores` (CoGroupByKey per window) and `MergeModelVerdicts`: the model's verdicts from the scores
   (`verdicts_from_scores`), through the model's gate (`CascadeStages.apply_model`), exactly as the plain
   cascade does it. A response with a failed pair is a dead letter (stage `verify`, `ModelRunError` and the
   reason, the original bytes); the others go on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.ml.inference.base import KeyedModelHandler, RunInference

from transforms.ingest.parse import DEAD_LETTERS, stage_failed_dead_letter
from transforms.verify.model.cascade import CascadeStages, Staged
from transforms.verify.model.files import ModelFiles, read_label_map
from transforms.verify.model.handler import PairModelHandler
from transforms.verify.model.scorer import ModelRunError, PairScores
from transforms.verify.model.stage import SentenceWork, plan_sentences, verdicts_from_scores

__all__ = ["MODEL_NAMESPACE", "PLANS", "RunModelStage"]

PLANS = "plans"
MODEL_NAMESPACE = "groundwatch.model"
"""RunInference's metrics (`num_inferences`, `failed_batches_counter`, ...) and the stage's own counters."""
_PAIRS = "pairs"
_SKIP = "skip"


class _PairsDoFn(beam.DoFn):
    def __init__(self, top_k: int) -> None:
        self._top_k = top_k
        self._pairs = beam.metrics.Metrics.counter(MODEL_NAMESPACE, "pairs_to_score")

    def process(self, element: tuple[str, Any]) -> Iterator[Any]:
        """Yields (key, (plan, work)) for the join and, tagged, the pairs to score; or the plan, tagged skip; or,
        tagged, the dead letter of a response whose pairs cannot be planned."""
        key, plan = element
        if not plan.undecided:
            yield beam.pvalue.TaggedOutput(_SKIP, element)
            return
        try:
            work = plan_sentences(plan.prepared.claims, plan.parsed.response.evidence, plan.undecided, self._top_k)
        except Exception as e:  # one bad response must not stop the run (with the model alone, this is its first
            # pass over the evidence: no heuristic ran before it)
            yield beam.pvalue.TaggedOutput(DEAD_LETTERS, stage_failed_dead_letter(plan.parsed, "verify", e, plan.now))
            return
        yield key, (plan, tuple(work))
        pairs = list(dict.fromkeys(pair for w in work for pair in w.pairs()))  # a pair asked twice is scored once
        self._pairs.inc(len(pairs))
        for pair in pairs:
            yield beam.pvalue.TaggedOutput(_PAIRS, (key, pair))


class _MergeDoFn(beam.DoFn):
    def __init__(self, stages: CascadeStages, can_contradict: bool) -> None:
        self._stages, self._can_contradict = stages, can_contradict

    def process(self, element: tuple[str, Mapping[str, Iterable[Any]]]) -> Iterator[Any]:
        key, grouped = element
        scores: dict[tuple[str, str], PairScores] = dict(grouped["scores"])
        failed: dict[tuple[str, str], ModelRunError] = dict(grouped["failed"])
        for plan, work in grouped["plan"]:
            yield self._merged(key, plan, work, scores, failed)

    def _merged(self, key: str, plan: Any, work: tuple[SentenceWork, ...], scores, failed) -> Any:
        pairs = [pair for w in work for pair in w.pairs()]
        error = next((failed[p] for p in pairs if p in failed), None)
        if error is None and any(p not in scores for p in pairs):
            error = ModelRunError("the model gave no score for a pair")
        if error is not None:
            row = stage_failed_dead_letter(plan.parsed, "verify", error, plan.now)
            return beam.pvalue.TaggedOutput(DEAD_LETTERS, row)
        model = self._stages.model
        assert model is not None  # RunModelStage is only built with a model
        scored = verdicts_from_scores(
            work,
            [scores[p] for p in pairs],
            can_contradict=self._can_contradict,
            contradiction_threshold=model.contradiction_threshold,
        )
        staged = self._stages.apply_model(Staged(plan.heuristic, plan.decided_by, plan.undecided), scored)
        return key, plan._replace(heuristic=staged.verdicts, decided_by=staged.decided_by, undecided=staged.undecided)


def _scored(result: tuple[str, Any]) -> tuple[str, tuple[tuple[str, str], PairScores]]:
    key, prediction = result
    return key, (prediction.example, prediction.inference)


def _failed_pairs(failure: tuple[list[tuple[str, Any]], Any]) -> list[tuple[str, tuple[str, str]]]:
    batch, _ = failure
    return list(batch)


def _failure_error(exception: tuple[Any, Any, Any]) -> ModelRunError:
    """A RunInference dead letter's `(type, repr, traceback lines)` as the `ModelRunError` the response's dead
    letter names: the model's own error with its message, any other with its type's name before the message.
    RunInference keeps the exception's type and text, not the exception itself, so it is built again here."""
    kind, text, lines = exception
    last = str(lines[-1]).strip() if lines else str(text)
    message = last.split(": ", 1)[1] if ": " in last else str(text)
    if isinstance(kind, type) and issubclass(kind, ModelRunError):
        return ModelRunError(message)
    return ModelRunError(f"{getattr(kind, '__name__', str(kind))}: {message}")


def _failed_errors(
    failure: tuple[list[tuple[str, Any]], Any],
) -> list[tuple[str, tuple[tuple[str, str], ModelRunError]]]:
    batch, exception = failure
    error = _failure_error(exception)
    return [(key, (tuple(pair), error)) for key, pair in batch]


class RunModelStage(beam.PTransform):
    """The model stage of `stages` on keyed plans, through RunInference; returns `{PLANS, DEAD_LETTERS}`."""

    def __init__(self, stages: CascadeStages) -> None:
        super().__init__()
        if stages.model is None:
            raise ValueError("RunModelStage needs a model stage (--model-path)")
        self._stages, model = stages, stages.model
        self._top_k = model.top_k
        files = ModelFiles.of(model.model_path)
        self._can_contradict = read_label_map(files.labels, model.model_path).can_contradict
        self._handler = PairModelHandler(model.model_path, max_length=model.max_length, batch_size=model.batch_size)
        self._single = PairModelHandler(model.model_path, max_length=model.max_length, batch_size=1)

    def expand(self, plans: PCollection) -> dict[str, PCollection]:
        planned = plans | "PlanModelPairs" >> beam.ParDo(_PairsDoFn(self._top_k)).with_outputs(
            _PAIRS, _SKIP, DEAD_LETTERS, main="work"
        )
        scored, failed = planned[_PAIRS] | "RunModel" >> (
            RunInference(KeyedModelHandler(self._handler)).with_exception_handling()
        )
        rescored, still_failed = (
            failed.failed_inferences
            | "PairsOfFailedBatches" >> beam.FlatMap(_failed_pairs)
            | "RescoreFailedBatches" >> RunInference(KeyedModelHandler(self._single)).with_exception_handling()
        )
        scores = (
            scored | "ScoresByResponse" >> beam.Map(_scored),
            rescored | "RescoresByResponse" >> beam.Map(_scored),
        ) | "FlattenScores" >> beam.Flatten()
        failures = still_failed.failed_inferences | "FailedPairs" >> beam.FlatMap(_failed_errors)
        merged = (
            {"plan": planned["work"], "scores": scores, "failed": failures}
            | "JoinModelScores" >> beam.CoGroupByKey()
            | "MergeModelVerdicts"
            >> beam.ParDo(_MergeDoFn(self._stages, self._can_contradict)).with_outputs(DEAD_LETTERS, main=PLANS)
        )
        out = (merged[PLANS], planned[_SKIP]) | "JoinSkippedPlans" >> beam.Flatten()
        dead = (planned[DEAD_LETTERS], merged[DEAD_LETTERS]) | "ModelStageDeadLetters" >> beam.Flatten()
        return {PLANS: out, DEAD_LETTERS: dead}
