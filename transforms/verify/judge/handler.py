"""The judge as a Beam `RemoteModelHandler`, for `RunInference`.

`JudgeModelHandler(config)` writes only what a remote handler must:
`create_client()` builds the `JudgeClient` on the worker (the key is read
there, from the environment, so it never enters the pipeline graph), and
`request()` runs the validation harness over a batch of `JudgeItem`s and
returns one `PredictionResult(item, JudgeOutcome)` per item. Batching
(`BatchElements`), retries with exponential backoff, client-side adaptive
throttling and the dead-letter output (`RunInference(...).with_exception_handling()`)
come from Beam. Only `JudgeUnavailable` errors marked retryable (429, 5xx,
timeouts, lost connections) are retried; a 401 or 404 goes straight to the
dead letters::

    results, failed = items | RunInference(JudgeModelHandler(config)).with_exception_handling()
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from apache_beam.ml.inference.base import PredictionResult, RemoteModelHandler

from transforms.verify.judge.client import JudgeClient
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.harness import judge_items
from transforms.verify.judge.schema import JudgeItem, JudgeOutcome, Task
from transforms.verify.judge.verifier import is_retryable

__all__ = ["JudgeModelHandler"]


class JudgeModelHandler(RemoteModelHandler[JudgeItem, PredictionResult, JudgeClient]):
    """Sends batches of judge items to an OpenAI-compatible endpoint and validates every reply."""

    def __init__(self, config: JudgeConfig, *, throttle_delay_secs: int = 5):
        # One Beam batch fills every concurrent call once. A fixed size (BatchElements would otherwise start at
        # one element and grow) keeps calls full; the end of a bundle flushes a partial batch.
        size = config.answers_per_call * config.max_concurrency
        self._batching_kwargs = {"min_batch_size": size, "max_batch_size": size}
        self._config = config
        # Outcomes of calls that already came back, so that Beam re-sending a batch after one call's 429
        # does not pay again for the others.
        self._done: dict[str, JudgeOutcome] = {}
        super().__init__(
            namespace="groundwatch.judge",
            num_retries=config.num_retries,
            throttle_delay_secs=throttle_delay_secs,
            retry_filter=is_retryable,
        )

    def __repr__(self) -> str:
        return f"JudgeModelHandler(endpoint={self._config.endpoint!r}, model={self._config.model!r})"

    def batch_elements_kwargs(self) -> dict[str, Any]:
        return self._batching_kwargs

    def get_metrics_namespace(self) -> str:
        return "groundwatch.judge"

    def create_client(self) -> JudgeClient:
        return JudgeClient(self._config)

    def request(
        self, batch: Sequence[JudgeItem], model: JudgeClient, inference_args: dict[str, Any] | None = None
    ) -> Iterable[PredictionResult]:
        outcomes: dict[int, JudgeOutcome] = {}
        for task in Task:
            positions = [i for i, item in enumerate(batch) if item.task is task]
            if positions:
                judged = judge_items(model, task, [batch[i] for i in positions], done=self._done)
                outcomes.update(zip(positions, judged, strict=True))
        self._done.clear()
        model_id = f"{self._config.model}@{self._config.endpoint}"
        return [PredictionResult(item, outcomes[i], model_id) for i, item in enumerate(batch)]
