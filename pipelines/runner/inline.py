"""The audit of single responses outside Beam, for `groundwatch serve` and `groundwatch gate`.

Both run exactly what the audit pipeline runs for one response (`transforms.audit.stages.audit_response`
with the pipeline's own audit steps, `transforms.audit.steps.audit_steps`), only without a runner::

    auditor = InlineAuditor("heuristic", threshold=0.7)
    audited = auditor.audit(auditor.parse(raw_bytes))        # ParseError for a message the pipeline dead-letters

Judge-backed verifiers keep per-call state, so each thread gets its own verifier and steps (`threading.local`).
A judge that does not answer in time is never a pass: `undetermined` turns the offline verdict into one that
needs review and says why, its routes those of the offline audit plus `flagged` (a judge that failed).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas import AuditedResponse, Origin, ParsedResponse, ReviewDecision, ReviewRoute
from transforms.audit.stages import audit_response
from transforms.audit.steps import audit_steps
from transforms.ingest.parse import input_flags, parse_message
from transforms.ingest.windows import DEFAULT_WINDOW_SECONDS
from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
from transforms.verify.registry import available_verifiers, make_verifier

__all__ = ["JUDGE_TIMEOUT_STATUS", "JUDGE_VERIFIERS", "InlineAuditor", "undetermined"]

JUDGE_VERIFIERS = ("openai", "cascade")
"""Verifiers that call the LLM judge (network, seconds): the service runs them in threads, with a deadline."""
JUDGE_TIMEOUT_STATUS = "judge_timeout"
"""`judge_status` of a response whose judge did not answer within the service's per-request timeout."""


class InlineAuditor:
    """The whole audit of one response (verify, citation audit, claim checks, routing), in process.

    `verifier_config` is what `make_verifier` takes (the judge options of `pipelines.options.judge`).
    `source` names where responses came from in their `Origin` (e.g. `serve`, `file:/path`).
    """

    def __init__(
        self,
        verifier: str = "heuristic",
        *,
        threshold: float = DEFAULT_CONFIDENCE_THRESHOLD,
        verifier_config: dict[str, Any] | None = None,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
        source: str = "serve",
    ):
        if verifier not in available_verifiers():
            raise ValueError(f"--verifier {verifier!r} is unknown; choose one of: {', '.join(available_verifiers())}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"--confidence-threshold must be in [0, 1], got {threshold}")
        self.verifier_name, self.threshold, self.source = verifier, threshold, source
        self._config = {"threshold": threshold, **(verifier_config or {})}
        self._window = timedelta(seconds=window_seconds)
        self._local = threading.local()
        self._parts()  # build once here, so a bad judge configuration fails at start, not on the first request

    @property
    def uses_judge(self) -> bool:
        return self.verifier_name in JUDGE_VERIFIERS

    def _parts(self):
        parts = getattr(self._local, "parts", None)
        if parts is None:
            verifier = make_verifier(self.verifier_name, **self._config)
            steps = [step for _, _, step in audit_steps(self.threshold)]
            parts = self._local.parts = (verifier, steps)
        return parts

    def parse(self, raw: bytes, *, offset: int | None = None) -> ParsedResponse:
        """The message as the pipeline parses it; raises `ParseError` (reason, message) when it would dead-letter."""
        response = parse_message(raw)
        return ParsedResponse(
            response=response,
            origin=Origin(source=self.source, offset=offset),
            input_flags=input_flags(response),
            raw=bytes(raw),
        )

    def audit(self, parsed: ParsedResponse, *, now: datetime | None = None) -> AuditedResponse:
        """The scored and routed AuditedResponse, from the same stage function as the pipeline."""
        verifier, steps = self._parts()
        now = now or datetime.now(UTC)
        start = _window_start(parsed.response.timestamp, self._window)
        return audit_response(
            parsed,
            verifier=verifier,
            threshold=self.threshold,
            window_start=start,
            window_end=start + self._window,
            now=now,
            steps=steps,
        )


def _window_start(when: datetime, size: timedelta) -> datetime:
    """The start of the fixed event-time window holding `when`, as `WindowByEventTime` would assign it."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    return epoch + ((when.astimezone(UTC) - epoch) // size) * size


def undetermined(offline: AuditedResponse, *, verifier: str, timeout_s: float) -> AuditedResponse:
    """The offline verdict of a response whose judge did not answer in time: routed to review, never passed."""
    reason = (
        f"{JUDGE_TIMEOUT_STATUS}: the {verifier} judge gave no verdict within {timeout_s:g} s; "
        "offline verdicts kept, undetermined"
    )
    review = offline.review or ReviewDecision(needs_review=False)
    # The offline audit's routes stand (what it found is routed as it would be had the judge answered), and the
    # missing verdict is a judge that failed: `flagged`, as routing files judge_error.
    routes = list(dict.fromkeys([ReviewRoute.flagged, *review.routes]))
    return offline.model_copy(
        update={
            "judge_status": JUDGE_TIMEOUT_STATUS,
            "review": ReviewDecision(needs_review=True, reasons=[reason, *review.reasons], routes=routes),
        }
    )
