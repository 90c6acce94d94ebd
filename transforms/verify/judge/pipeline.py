"""`JudgeSentences`: the staged sentence audit (heuristic, model, LLM judge) as a Beam composite over `RunInference`.

    verified = responses | "VerifySentences" >> JudgeSentences("cascade", judge_config, threshold=0.7)
    verified[AUDITED], verified[DEAD_LETTERS]

The steps, each labelled:

1. `PlanJudgeWork`: split each response, run the heuristic verifier and, in a cascade, its gate: which
   sentences it leaves open ("openai": all). `--verifier model` runs no heuristic: every claim is left open,
   with a placeholder verdict the model stage replaces. Responses are keyed by id.
2. `ModelStage` (a cascade given `--model-path`, and `--verifier model`): `RunModelStage`, the model through
   `RunInference(PairModelHandler)` on the (evidence sentence, claim) pairs of the open sentences, merged back
   per sentence; what the model's gate leaves open goes on (`transforms.verify.model.pipeline`).
3. `PickJudgeSentences`: the judge item of each response in the judge sample with sentences still open.
4. `RunJudge`: `RunInference(JudgeModelHandler)` over the judge items; Beam
   batches several answers into one call, retries 429/5xx with backoff and
   throttles. Its dead-letter output (`FailedJudgeCalls`) is turned into
   `judge_error` outcomes with a `judge_calls` row each: nothing is dropped.
5. `JoinJudgeOutcomes` (CoGroupByKey per window) and `MergeVerdicts`: the
   judge's verdicts where it settled a sentence, the earlier stages' elsewhere,
   `decided_by` per sentence, `judge_status` and the call log on the
   `AuditedResponse` (the lake writes them to `judge_calls`). `--verifier model` has no judge: its plans go
   straight to `MergeVerdicts`.

The result has the same outputs as `transforms.audit.stages.VerifySentences`, so the
audit and monitor pipelines use either by the `--verifier` flag.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import RunInference

from schemas import AttributionVerdict, AuditedResponse, ParsedResponse, SentenceVerdict
from schemas.base import utc_now
from transforms.ingest.parse import DEAD_LETTERS, stage_failed_dead_letter
from transforms.ingest.windows import window_bounds
from transforms.verify.base import AnswerSentences, build_report, prepare_sentences
from transforms.verify.calibration import DEFAULT_SECTION, calibration_sha256
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.handler import JudgeModelHandler
from transforms.verify.judge.harness import failed_outcome
from transforms.verify.judge.prompts import prompt_version
from transforms.verify.judge.schema import JudgeItem, JudgeOutcome, Task
from transforms.verify.judge.verifier import (
    DEFAULT_BAND,
    cascade_stages,
    judge_config_from,
    judge_sample_point,
    merge_verdicts,
    parse_band,
    sentence_item,
    sentences_to_judge,
)
from transforms.verify.model.cascade import CascadeStages, load_calibration
from transforms.verify.model.pipeline import PLANS, RunModelStage
from transforms.verify.model.verifier import model_alone_stages, model_digest, model_version

__all__ = [
    "AUDITED",
    "JUDGE_NAMESPACE",
    "JUDGE_VERIFIERS",
    "STAGED_VERIFIERS",
    "JudgeSentences",
    "failed_outcomes",
    "judge_sentences",
]

AUDITED = "audited"
JUDGE_NAMESPACE = "groundwatch.judge"
JUDGE_VERIFIERS = ("openai", "cascade")
STAGED_VERIFIERS = (*JUDGE_VERIFIERS, "model")
"""The verifiers this composite runs: the judge's two, and the model alone (`--verifier model`)."""


class _Plan(NamedTuple):
    parsed: ParsedResponse
    heuristic: tuple[SentenceVerdict, ...]
    has_evidence: bool
    window_start: datetime
    window_end: datetime
    now: datetime
    decided_by: tuple[str, ...] | None = None  # the stage of each verdict before the judge; None: all heuristic
    prepared: AnswerSentences | None = None  # the answer's claims and non-claims; None: no evidence
    undecided: tuple[int, ...] = ()  # the claims the stages so far left open: the next stage's to decide


def _awaiting_model(sentences: Sequence[str]) -> tuple[SentenceVerdict, ...]:
    """Stand-ins for the heuristic's verdicts when the model decides every claim: the model stage replaces each."""
    return tuple(
        SentenceVerdict(
            sentence_index=i,
            sentence_text=text,
            attribution_verdict=AttributionVerdict.ungrounded,
            confidence=0.0,
            provenance_notes="awaiting the model stage",
        )
        for i, text in enumerate(sentences)
    )


class _PlanDoFn(beam.DoFn):
    def __init__(
        self,
        band: tuple[float, float] | None,
        clock: Callable[[], datetime],
        stages: CascadeStages | None = None,
        *,
        model_alone: bool = False,
    ) -> None:
        self._band, self._clock, self._stages, self._model_alone = band, clock, stages, model_alone

    def setup(self) -> None:
        self._heuristic = None if self._model_alone else HeuristicVerifier()

    def process(self, parsed: ParsedResponse, window: Any = beam.DoFn.WindowParam) -> Iterator[Any]:
        """Yields (response id, `_Plan`) and, tagged, dead letters."""
        r, now = parsed.response, self._clock()
        start, end = window_bounds(window, r.timestamp)
        try:
            has_evidence = any(p.content.strip() for p in r.evidence)
            prepared = prepare_sentences(r.answer) if has_evidence else None
            sentences = prepared.claims if prepared is not None else []
            decided_by: tuple[str, ...] | None = None
            undecided: Sequence[int]
            if self._heuristic is None:  # the model alone: it replaces every verdict, so the heuristic gives none
                heuristic = _awaiting_model(sentences)
                decided_by, undecided = ("model",) * len(sentences), range(len(sentences))
            elif self._stages is None:
                heuristic = self._heuristic.verify(sentences, r.evidence).verdicts if sentences else ()
                undecided = sentences_to_judge(heuristic, band=self._band)  # the judge's sample: PickJudgeSentences
            else:  # the cascade: what the heuristic's gate leaves open goes to the model stage, if any, then the judge
                heuristic = self._heuristic.verify(sentences, r.evidence).verdicts if sentences else ()
                staged = self._stages.gate_heuristic(heuristic)
                heuristic, decided_by, undecided = staged.verdicts, staged.decided_by, staged.undecided
        except Exception as e:  # one bad response must not stop the run
            yield beam.pvalue.TaggedOutput(DEAD_LETTERS, stage_failed_dead_letter(parsed, "verify", e, now))
            return
        plan = _Plan(parsed, tuple(heuristic), has_evidence, start, end, now, decided_by, prepared, tuple(undecided))
        yield r.response_id, plan


class _PickDoFn(beam.DoFn):
    def __init__(self, sample_rate: float) -> None:
        self._rate = sample_rate
        self._sent = Metrics.counter(JUDGE_NAMESPACE, "sentences_to_judge")
        self._kept = Metrics.counter(JUDGE_NAMESPACE, "sentences_kept_heuristic")

    def process(self, element: tuple[str, _Plan]) -> Iterator[JudgeItem]:
        """The judge item of a sampled response with sentences left open (the sample is the response id's)."""
        response_id, plan = element
        r = plan.parsed.response
        indexes = list(plan.undecided) if judge_sample_point(response_id) < self._rate else []
        self._sent.inc(len(indexes))
        self._kept.inc(len(plan.heuristic) - len(indexes))
        if indexes:
            assert plan.prepared is not None  # only claims are left open, and a plan without claims has none
            yield sentence_item(response_id, r.answer, r.query, plan.prepared.claims, indexes, r.evidence)


def failed_outcomes(
    failure: tuple[Sequence[JudgeItem], tuple[object, object, object]], config: JudgeConfig, now: datetime
) -> list[tuple[str, JudgeOutcome]]:
    """Turn one dead-lettered batch `(items, (type, repr, traceback))` into `judge_error` outcomes, logged."""
    batch, (_, reason, _) = failure
    Metrics.counter(JUDGE_NAMESPACE, "judge_errors").inc(len(batch))
    error = " ".join(str(reason).split())[:500]
    return [(item.response_id, failed_outcome(item, config, error, now, answers_in_call=len(batch))) for item in batch]


class _MergeDoFn(beam.DoFn):
    def __init__(self, verifier_name: str, threshold: float, version: str, calibration_sha256: str | None) -> None:
        self._name, self._threshold, self._version = verifier_name, threshold, version
        self._calibration_sha256 = calibration_sha256
        self._statuses = {s: Metrics.counter(JUDGE_NAMESPACE, s) for s in ("judged", "judge_validation_failed")}

    def process(self, element: tuple[str, Mapping[str, Iterable[Any]]]) -> Iterator[AuditedResponse]:
        """One response id's plans (one per duplicate) and judge outcomes, as audited responses."""
        _, grouped = element
        outcomes: Iterable[JudgeOutcome] = grouped["outcome"]
        plans: Iterable[_Plan] = grouped["plan"]
        outcome = next((o for o in outcomes if o.task is Task.sentences), None)
        if outcome is not None and outcome.status in self._statuses:
            self._statuses[outcome.status].inc()
        for plan in plans:
            result = merge_verdicts(plan.heuristic, outcome, plan.decided_by)
            if plan.prepared is not None:  # the judge saw claims only; the non-claims go back in between
                result = plan.prepared.assemble_result(result)
            report = build_report(
                plan.parsed.response.response_id,
                result.verdicts,
                threshold=self._threshold,
                verification_date=plan.now.date(),
                evidence_empty=not plan.has_evidence,
            )
            yield AuditedResponse(
                parsed=plan.parsed,
                window_start=plan.window_start,
                window_end=plan.window_end,
                verifier=self._name,
                verifier_version=self._version,
                calibration_sha256=self._calibration_sha256,
                calibration_section=DEFAULT_SECTION if self._calibration_sha256 else None,
                report=report,
                decided_by=list(result.decided_by) if plan.has_evidence else [],
                audited_at=plan.now,
                judge_status=result.judge_status,
                judge_calls=list(result.judge_calls),
            )
            outcome = None if outcome is None else outcome.model_copy(update={"calls": []})  # log once


class JudgeSentences(beam.PTransform):
    """Verify sentences in stages: "openai" (the judge on all of a sampled response), "cascade" (heuristic, the
    model if given, the judge on what is left open) or "model" (the model on every claim, no judge).

    Returns `{AUDITED: AuditedResponses, DEAD_LETTERS: DeadLetterRows}`, like `VerifySentences`.
    `calibration_sha256` (the calibration file's digest, when one set the stages' bands and confidences) is
    written on every response, as the lake's `responses.calibration_sha256`.
    """

    def __init__(
        self,
        verifier: str,
        config: JudgeConfig | None,
        *,
        threshold: float,
        band: tuple[float, float] = DEFAULT_BAND,
        stages: CascadeStages | None = None,
        calibration_sha256: str | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        super().__init__()
        if verifier not in STAGED_VERIFIERS:
            raise ValueError(f"JudgeSentences runs {', '.join(STAGED_VERIFIERS)}, not {verifier!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"confidence threshold must be in [0, 1], got {threshold}")
        if (config is None) != (verifier == "model"):
            raise ValueError(f"--verifier {verifier}: " + ("no judge to configure" if config else "needs the judge"))
        if verifier == "model" and (stages is None or stages.model is None):
            raise ValueError("--verifier model needs --model-path: a folder with model.onnx, tokenizer.json ...")
        self._verifier, self._config, self._threshold, self._clock = verifier, config, threshold, clock
        self._band = band if verifier == "cascade" else None
        # The offline stages (`CascadeStages`: heuristic gate, optional model stage); "openai" has none.
        self._stages = stages if verifier != "openai" else None
        self._calibration_sha256 = calibration_sha256 if self._stages is not None else None
        model = self._stages.model if self._stages is not None else None
        self._version = prompt_version(Task.sentences)
        if model is not None:
            if verifier == "model":
                self._version = model_version(model.model_path)
            else:
                self._version += f"+model-{model_digest(model.model_path)}"

    def expand(self, responses: PCollection) -> dict[str, PCollection]:
        config, clock, stages = self._config, self._clock, self._stages
        plan = _PlanDoFn(self._band, clock, stages, model_alone=self._verifier == "model")
        planned = responses | "PlanJudgeWork" >> beam.ParDo(plan).with_outputs(DEAD_LETTERS, main="plans")
        plans, dead = planned["plans"], [planned[DEAD_LETTERS]]
        if stages is not None and stages.model is not None:
            modelled = plans | "ModelStage" >> RunModelStage(stages)
            plans, dead = modelled[PLANS], [*dead, modelled[DEAD_LETTERS]]
        merge = _MergeDoFn(self._verifier, self._threshold, self._version, self._calibration_sha256)
        if config is None:  # the model alone: no judge to wait for
            audited = plans | "AsUnjudged" >> beam.Map(_unjudged) | "MergeVerdicts" >> beam.ParDo(merge)
        else:
            audited = self._judged(plans, config, clock, merge)
        dead_letters = dead[0] if len(dead) == 1 else tuple(dead) | "FlattenVerifyDeadLetters" >> beam.Flatten()
        return {AUDITED: audited, DEAD_LETTERS: dead_letters}

    @staticmethod
    def _judged(
        plans: PCollection, config: JudgeConfig, clock: Callable[[], datetime], merge: beam.DoFn
    ) -> PCollection:
        items = plans | "PickJudgeSentences" >> beam.ParDo(_PickDoFn(config.sample_rate))
        judged, failed = items | "RunJudge" >> RunInference(JudgeModelHandler(config)).with_exception_handling()
        outcomes = (
            judged | "OutcomeByResponse" >> beam.Map(lambda result: (result.example.response_id, result.inference)),
            failed.failed_inferences
            | "FailedJudgeCalls" >> beam.FlatMap(lambda failure: failed_outcomes(failure, config, clock())),
        ) | "FlattenOutcomes" >> beam.Flatten()
        return (
            {"plan": plans, "outcome": outcomes}
            | "JoinJudgeOutcomes" >> beam.CoGroupByKey()
            | "MergeVerdicts" >> beam.ParDo(merge)
        )


def _unjudged(element: tuple[str, _Plan]) -> tuple[str, dict[str, list[Any]]]:
    """A plan as `MergeVerdicts` takes it, with no judge outcome."""
    key, plan = element
    return key, {"plan": [plan], "outcome": []}


def judge_sentences(
    verifier: str, verifier_config: Mapping[str, Any], *, threshold: float, clock: Callable[[], datetime] = utc_now
) -> JudgeSentences:
    """`JudgeSentences` from the verifier options `VerifySentences` carries (base_url, model, band, model_path,
    calibration, ...); a model folder given is loaded now, so a bad one fails before the run."""
    options = dict(verifier_config)
    band = parse_band(options.pop("band", None) or DEFAULT_BAND)
    stage_options = {k: options.pop(k, None) for k in _STAGE_OPTIONS}
    digest = None
    if stage_options["calibration"] is not None:
        calibration = stage_options["calibration"] = load_calibration(stage_options["calibration"])
        digest = calibration_sha256(calibration)
    if verifier == "model":
        stage_options.pop("model_band")  # the model alone decides every claim: no band to hand any on
        alone = model_alone_stages(**stage_options)
        return JudgeSentences(verifier, None, threshold=threshold, stages=alone, calibration_sha256=digest, clock=clock)
    stages = cascade_stages(band, **stage_options) if verifier == "cascade" else None
    config = judge_config_from(options.pop("base_url", None), options.pop("model", None), **options)
    return JudgeSentences(
        verifier, config, threshold=threshold, band=band, stages=stages, calibration_sha256=digest, clock=clock
    )


_STAGE_OPTIONS = ("calibration", "model_path", "model_top_k", "model_max_length", "model_batch_size", "model_band")
"""The cascade's stage options: `cascade_stages`' keywords after the band (`model_alone_stages`' but the last)."""
