"""Deterministic sampling of responses for audit: a hash of the response id, high-risk always kept.

    kept = parsed | "SampleResponses" >> SampleResponses(rate=0.25)

The same response id is kept or dropped on every run and every worker (no
random state), so retries and tests see the same sample. Responses left out are
counted in `groundwatch/sampled_out`, so read = audited + sampled out + dead-lettered.
"""

from __future__ import annotations

import hashlib

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas import ParsedResponse, RiskLevel

__all__ = ["SampleResponses", "is_sampled", "sample_point"]

_SCALE = float(2**64)


def sample_point(response_id: str, salt: str = "") -> float:
    """Where a response id falls in [0, 1): the first 8 bytes of its SHA-256, as a fraction. Another `salt`
    gives a sample independent of this one (the review sample of audited responses is not the audit's)."""
    digest = hashlib.sha256((salt + response_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def is_sampled(parsed: ParsedResponse, rate: float) -> bool:
    """Whether a response is audited at this sample rate; high-risk responses always are."""
    if parsed.response.metadata.risk_level is RiskLevel.high or rate >= 1.0:
        return True
    return sample_point(parsed.response.response_id) < rate


class _SampleDoFn(beam.DoFn):
    def __init__(self, rate: float):
        self._rate = rate
        self._sampled_out = Metrics.counter("groundwatch", "sampled_out")

    def process(self, parsed):
        if is_sampled(parsed, self._rate):
            yield parsed
        else:
            self._sampled_out.inc()


class SampleResponses(beam.PTransform):
    """Keep a deterministic fraction of responses; high-risk ones always."""

    def __init__(self, rate: float):
        super().__init__()
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"sample rate must be in [0, 1], got {rate}")
        self._rate = rate

    def expand(self, responses):
        return responses | "KeepSampled" >> beam.ParDo(_SampleDoFn(self._rate))
