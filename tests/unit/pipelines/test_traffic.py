"""The generated traffic the demo and the benchmarks use: with attribution, and the same answers without it."""

from __future__ import annotations

from pipelines.traffic.synthetic import generate_responses
from schemas import LoggedResponse
from transforms.attribution.markers import parse_citations, strip_markers


def test_unattributed_traffic_is_the_same_answers_without_markers_citations_or_claims():
    attributed = [LoggedResponse.model_validate(m) for m in generate_responses(200, seed=5, sentences=5, passages=5)]
    plain = [
        LoggedResponse.model_validate(m)
        for m in generate_responses(200, seed=5, sentences=5, passages=5, attributed=False)
    ]
    assert sum(len(parse_citations(r)) for r in attributed) > 200  # the default carries citations and claims
    assert sum(bool(r.claims) for r in attributed) > 50
    assert [r.response_id for r in plain] == [r.response_id for r in attributed]
    assert [r.evidence for r in plain] == [r.evidence for r in attributed]
    for before, after in zip(attributed, plain, strict=True):
        assert parse_citations(after) == []
        assert not after.claims and not after.citations
        # The same sentences: only the markers (and the quotes' explicit citation entries) are gone.
        assert " ".join(after.answer.split()) == strip_markers(before.answer)
