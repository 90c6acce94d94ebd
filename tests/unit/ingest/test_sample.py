"""Deterministic sampling: the same ids always, the asked fraction, high risk always kept, the rest counted."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message
from transforms.ingest.sample import SampleResponses, is_sampled, sample_point


def parsed(response_id: str, risk: str = "low") -> ParsedResponse:
    msg = message(response_id, metadata={"tenant": "t", "risk_level": risk})
    return ParsedResponse(response=LoggedResponse.model_validate(msg), origin=at(1))


def test_sample_point_is_deterministic_and_in_unit_interval():
    points = [sample_point(f"resp-{i}") for i in range(500)]
    assert points == [sample_point(f"resp-{i}") for i in range(500)]
    assert all(0.0 <= x < 1.0 for x in points)


def test_fraction_kept_is_close_to_the_rate():
    responses = [parsed(f"resp-{i}") for i in range(4000)]
    kept = sum(is_sampled(r, 0.25) for r in responses)
    assert 0.22 * 4000 < kept < 0.28 * 4000


def test_lower_rate_keeps_a_subset_of_a_higher_rate():
    responses = [parsed(f"resp-{i}") for i in range(1000)]
    low = {r.response.response_id for r in responses if is_sampled(r, 0.1)}
    high = {r.response.response_id for r in responses if is_sampled(r, 0.5)}
    assert low < high


def test_high_risk_is_always_kept_and_rate_bounds():
    assert all(is_sampled(parsed(f"h-{i}", "high"), 0.0) for i in range(100))
    assert not any(is_sampled(parsed(f"l-{i}", "low"), 0.0) for i in range(100))
    assert all(is_sampled(parsed(f"l-{i}", "medium"), 1.0) for i in range(100))


@pytest.mark.parametrize("rate", [-0.1, 1.5])
def test_bad_rate_raises_at_construction(rate):
    with pytest.raises(ValueError, match="sample rate"):
        SampleResponses(rate)


def test_sample_responses_keeps_expected_ids_and_counts_the_rest():
    responses = [parsed(f"resp-{i}") for i in range(200)] + [parsed(f"risky-{i}", "high") for i in range(20)]
    expected = [r.response.response_id for r in responses if is_sampled(r, 0.3)]
    with BeamPipeline(runner="FnApiRunner") as p:
        kept = p | beam.Create(responses) | SampleResponses(0.3) | beam.Map(lambda r: r.response.response_id)
        assert_that(kept, equal_to(expected))
    counters = p.result.metrics().query(MetricsFilter().with_name("sampled_out"))["counters"]
    assert sum(c.committed for c in counters) == len(responses) - len(expected)
    assert all(f"risky-{i}" in expected for i in range(20))
