"""The judge as a verifier: `JudgeVerifier` ("openai") and `CascadeVerifier` ("cascade").

Both start from the offline heuristic verdicts. "openai" sends every sentence
of a sampled response to the judge; "cascade" sends only the sentences whose
heuristic confidence falls inside the uncertain band (default 0.5 to 0.8), so
confident verdicts cost nothing; given a model folder (`model_path`), the cascade runs the model stage on
those first and sends the judge only what the model is unsure of (`transforms.verify.model.cascade`, bands
from a calibration file when one is given). A sentence the judge could not settle
(validation failed three times, or the endpoint failed) keeps its heuristic
verdict, and the response is marked for review; nothing undetermined becomes
a pass. The `VerificationResult` names, per sentence, who decided it
("openai" or "heuristic"), and carries the judge's status and call log for
that answer; the verifier keeps nothing about a call, so threads may share it.

The plain functions (`judge_sample_point`, `sentences_to_judge`,
`sentence_item`, `merge_verdicts`) are shared with the Beam path
(`transforms.verify.judge.pipeline`), which runs the same plan through `RunInference`.
Outside Beam (`groundwatch serve` and `gate`, calibration, benchmarks) `verify()` calls the judge
itself, with Beam's backoff helper for 429/5xx and timeouts. A refused connection is not retried there
(nothing listens at the URL: waiting out the backoff, longer than a request's deadline in `serve`, would only
hide that behind a timeout); each failed call is logged as one line, without a traceback, and an answer whose
judge never replied gets `judge_error` with a `judge_calls` row saying why (`harness.failed_outcome`)::

    verifier = make_verifier("cascade", base_url="http://127.0.0.1:8000/v1", model="m", band=(0.5, 0.8))
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from schemas import EvidencePassage, SentenceVerdict
from schemas.base import utc_now
from transforms.verify.base import VerificationResult, Verifier
from transforms.verify.calibration import Calibration, calibration_sha256
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.judge.client import JudgeClient, JudgeUnavailable
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.harness import failed_outcome, judge_items
from transforms.verify.judge.prompts import prompt_version
from transforms.verify.judge.schema import IndexedSentence, JudgeItem, JudgeOutcome, Passage, Task
from transforms.verify.model.cascade import DEFAULT_MODEL_BAND, CascadeStages, StageGate, load_calibration
from transforms.verify.model.verifier import model_digest, model_stage_from

__all__ = [
    "DEFAULT_BAND",
    "CascadeVerifier",
    "cascade_stages",
    "JudgeVerifier",
    "is_retryable",
    "judge_config_from",
    "judge_items_retried",
    "judge_sample_point",
    "merge_verdicts",
    "parse_band",
    "sentence_item",
    "sentences_to_judge",
]

DEFAULT_BAND = (0.5, 0.8)
"""Heuristic confidences in this closed range go to the judge in the cascade."""
JUDGE_NAME = "openai"
FALLBACK_NAME = "heuristic"

_LOG = logging.getLogger(__name__)


def is_retryable(error: Exception) -> bool:
    """Beam's retry filter: only failures a later attempt can fix (429, 5xx, timeouts, lost connections)."""
    return bool(getattr(error, "retryable", False))


def judge_items_retried(client: JudgeClient, task: Task, items: list[JudgeItem]) -> list[JudgeOutcome]:
    """`judge_items` as a command calls it outside Beam (`serve`, `gate`, `replay`): Beam's backoff for what a
    later attempt may fix, never for a refused connection (`_retry_in_process`), each retry one log line."""
    from apache_beam.utils import retry

    call = retry.with_exponential_backoff(
        num_retries=client.config.num_retries, retry_filter=_retry_in_process, logger=_log_retry
    )(judge_items)
    outcomes: list[JudgeOutcome] = call(client, task, items)  # Beam's wrapper is untyped
    return outcomes


def _retry_in_process(error: Exception) -> bool:
    # A refused connection fails in milliseconds and means nothing listens at the URL; the Beam path
    # (JudgeModelHandler) still retries it, a batch job can wait for a judge that restarts, a request cannot.
    return is_retryable(error) and not getattr(error, "refused", False)


def _log_retry(_message: str, delay: float, _function: str, error: str, *_traceback: object) -> None:
    """Beam's retry logger, as one line: its default adds a traceback to every expected, classified failure.
    Beam calls it as `logger(message, delay, function name, "module.Type: text", traceback)`."""
    _LOG.warning("judge call failed, retrying in %.1f s: %s", delay, error.strip().split(": ", 1)[-1])


def parse_band(value: str | Sequence[float], flag: str = "--cascade-band") -> tuple[float, float]:
    """`"LOW,HIGH"` (or a pair) as a checked band within [0, 1]; errors name `flag`."""
    try:
        parts = [float(v) for v in (value.split(",") if isinstance(value, str) else value)]
    except (TypeError, ValueError):
        parts = []
    if len(parts) != 2 or not 0.0 <= parts[0] <= parts[1] <= 1.0:
        raise ValueError(f"{flag} must be LOW,HIGH with 0 <= LOW <= HIGH <= 1, got {value!r}")
    return parts[0], parts[1]


def judge_sample_point(response_id: str) -> float:
    """A point in [0, 1) from the response id, salted so the judge sample is independent of the audit sample."""
    digest = hashlib.sha256(f"groundwatch-judge:{response_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def sentences_to_judge(heuristic: Sequence[SentenceVerdict], *, band: tuple[float, float] | None) -> list[int]:
    """Indexes of the sentences the judge should see if the response is in its sample (`judge_sample_point`): all
    (band None) or the uncertain ones."""
    if band is None:
        return [v.sentence_index for v in heuristic]
    low, high = band
    return [v.sentence_index for v in heuristic if low <= v.confidence <= high]


def sentence_item(
    response_id: str,
    answer: str,
    query: str,
    sentences: Sequence[str],
    indexes: Sequence[int],
    evidence: Sequence[EvidencePassage],
) -> JudgeItem:
    """The judge's view of one answer: the chosen sentences with their indexes, all passages, full answer."""
    return JudgeItem(
        task=Task.sentences,
        response_id=response_id,
        query=query,
        answer=answer,
        evidence=[Passage(evidence_id=p.doc_id, text=p.content) for p in evidence],
        sentences=[IndexedSentence(sentence_index=i, text=sentences[i]) for i in indexes],
    )


def merge_verdicts(
    heuristic: Sequence[SentenceVerdict], outcome: JudgeOutcome | None, decided_by: Sequence[str] | None = None
) -> VerificationResult:
    """Judge verdicts where the judge settled a sentence, the earlier stages' elsewhere; who decided each
    (`decided_by` names the stage of each verdict before the judge, "heuristic" by default); and the judge's
    status and call log (None and none when no sentence went to the judge)."""
    judged = {}
    if outcome is not None and outcome.status == "judged":
        judged = {v.sentence_index: v for v in outcome.sentence_verdicts}
    verdicts = []
    before = list(decided_by) if decided_by is not None else [FALLBACK_NAME] * len(heuristic)
    decided_by = []
    for h, stage in zip(heuristic, before, strict=True):
        j = judged.get(h.sentence_index)
        if j is None:
            verdicts.append(h)
            decided_by.append(stage)
        else:  # the judge's copy of the text was only checked modulo white space; keep the original
            verdicts.append(j.model_copy(update={"sentence_text": h.sentence_text}))
            decided_by.append(JUDGE_NAME)
    if outcome is None:
        return VerificationResult(tuple(verdicts), tuple(decided_by))
    return VerificationResult(tuple(verdicts), tuple(decided_by), outcome.status, tuple(outcome.calls))


def judge_config_from(
    base_url: str | None = None,
    model: str | None = None,
    **options: Any,
) -> JudgeConfig:
    """A `JudgeConfig` from verifier options, with GROUNDWATCH_JUDGE_BASE_URL / _MODEL as defaults."""
    base_url = base_url or os.environ.get("GROUNDWATCH_JUDGE_BASE_URL")
    model = model or os.environ.get("GROUNDWATCH_JUDGE_MODEL")
    if not base_url or not model:
        raise ValueError("the judge needs --judge-base-url and --judge-model (or GROUNDWATCH_JUDGE_BASE_URL/_MODEL)")
    known = {k: v for k, v in options.items() if k in JudgeConfig.model_fields and v is not None}
    return JudgeConfig(base_url=base_url, model=model, **known)


class JudgeVerifier(Verifier):
    """Every sentence of a sampled response judged by an OpenAI-compatible model; heuristic as the fallback."""

    name = "openai"
    version = prompt_version(Task.sentences)
    band: tuple[float, float] | None = None

    def __init__(self, base_url: str | None = None, model: str | None = None, **options: Any):
        self.config = judge_config_from(base_url, model, **options)
        self._fallback = HeuristicVerifier()
        self._client: JudgeClient | None = None  # built on the first judge call, once, whichever thread makes it
        self._client_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(endpoint={self.config.endpoint!r}, model={self.config.model!r})"

    def _judge(self, item: JudgeItem) -> JudgeOutcome:
        with self._client_lock:
            if self._client is None:
                self._client = JudgeClient(self.config)
        try:
            return judge_items_retried(self._client, Task.sentences, [item])[0]
        except JudgeUnavailable as err:  # its message names the endpoint, never the key
            _LOG.warning("no judge verdict for %s, offline verdicts kept: %s", item.response_id, err)
            return failed_outcome(item, self.config, str(err), utc_now())

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        heuristic = self._fallback.verify(sentences, evidence).verdicts
        answer = " ".join(sentences)
        response_id = "answer-" + hashlib.sha256(answer.encode()).hexdigest()[:12]
        indexes = sentences_to_judge(heuristic, band=self.band)
        outcome = None
        if indexes and judge_sample_point(response_id) < self.config.sample_rate:
            outcome = self._judge(sentence_item(response_id, answer, "", sentences, indexes, evidence))
        return merge_verdicts(heuristic, outcome)


class CascadeVerifier(JudgeVerifier):
    """The heuristic first; then, with `model_path`, the model on what the heuristic left uncertain; the judge
    only on what is still uncertain (bands from `calibration` when given: `transforms.verify.model.cascade`)."""

    name = "cascade"
    calibration_sha256: str | None = None
    """The calibration file's digest, when one set the bands (the lake's `responses.calibration_sha256`)."""

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        band: str | Sequence[float] = DEFAULT_BAND,
        *,
        model_path: str | None = None,
        model_top_k: int | None = None,
        model_max_length: int | None = None,
        model_batch_size: int | None = None,
        model_band: str | Sequence[float] | None = None,
        calibration: Calibration | str | None = None,
        **options: Any,
    ):
        super().__init__(base_url, model, **options)
        self.band = parse_band(band)
        if calibration is not None:
            calibration = load_calibration(calibration)
            self.calibration_sha256 = calibration_sha256(calibration)
        self.stages = cascade_stages(
            self.band, calibration, model_path, model_top_k, model_max_length, model_batch_size, model_band
        )
        if self.stages.model is not None:
            self.version = f"{self.version}+model-{model_digest(self.stages.model.model_path)}"

    def verify(self, sentences: Sequence[str], evidence: Sequence[EvidencePassage]) -> VerificationResult:
        heuristic = self._fallback.verify(sentences, evidence).verdicts
        staged = self.stages.run(heuristic, sentences, evidence)
        answer = " ".join(sentences)
        response_id = "answer-" + hashlib.sha256(answer.encode()).hexdigest()[:12]
        outcome = None
        if staged.undecided and judge_sample_point(response_id) < self.config.sample_rate:
            outcome = self._judge(sentence_item(response_id, answer, "", sentences, staged.undecided, evidence))
        return merge_verdicts(staged.verdicts, outcome, staged.decided_by)


def cascade_stages(
    band: tuple[float, float],
    calibration: Calibration | str | None = None,
    model_path: str | None = None,
    model_top_k: int | None = None,
    model_max_length: int | None = None,
    model_batch_size: int | None = None,
    model_band: str | Sequence[float] | None = None,
) -> CascadeStages:
    """The cascade's offline stages (`CascadeStages`) from its options; the model, if any, is loaded now."""
    calibration = load_calibration(calibration)
    model_stage = model_stage_from(model_path, model_top_k, model_max_length, model_batch_size)
    fallback = DEFAULT_MODEL_BAND if model_band is None else parse_band(model_band, "--model-band")
    return CascadeStages(
        StageGate.of(calibration, "heuristic", band=band), model_stage, StageGate.of(calibration, "model", fallback)
    )
