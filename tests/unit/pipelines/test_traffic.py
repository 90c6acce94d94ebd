"""The generated traffic the demo and the benchmarks use: with attribution, and the same answers without it."""

from __future__ import annotations

import pytest

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


def test_default_traffic_is_healthy_and_the_flawed_rate_is_asked_for():
    from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, HEALTHY_FLAW_RATE, Profile, flawed_weights

    assert Profile().verdict_weights["grounded"] == pytest.approx(1 - HEALTHY_FLAW_RATE)
    assert HEALTHY_FLAW_RATE <= 0.05
    # The flawed rate is what the generator drew by default before: same weights, same traffic for a seed.
    old = {"grounded": 0.7, "partial": 0.12, "ungrounded": 0.1, "contradicted": 0.08}
    assert flawed_weights(FLAWED_FLAW_RATE) == pytest.approx(old)
    healthy = list(generate_responses(50, seed=5))
    flawed = list(generate_responses(50, seed=5, flaw_rate=FLAWED_FLAW_RATE))
    assert sum(h["answer"] != f["answer"] for h, f in zip(healthy, flawed, strict=True)) >= 10
    with pytest.raises(ValueError, match="flaw_rate"):
        list(generate_responses(1, flaw_rate=1.5))


def test_as_many_passages_as_a_domain_has_facts_and_fabricated_ids_name_none_of_them():
    # Six passages in the named style ("doc_alpha" to "doc_zeta"): a fabricated citation names an id past the
    # Greek names ("doc_8").
    from pipelines.traffic.facts import DOMAINS

    most = min(len(d.facts) for d in DOMAINS.values())
    responses = [
        LoggedResponse.model_validate(m)
        for m in generate_responses(300, seed=3, sentences=4, passages=most, flaw_rate=0.5)
    ]
    assert {len(r.evidence) for r in responses} == {most}
    assert any(r.evidence[0].doc_id == "doc_alpha" for r in responses)
    fabricated = 0
    for r in responses:
        ids = [p.doc_id for p in r.evidence]
        assert len(set(ids)) == len(ids)
        fabricated += sum(ref.ref not in ids for ref in parse_citations(r))
    assert fabricated > 0
    named = [r for r in responses if r.evidence[0].doc_id == "doc_alpha"]
    assert any(ref.ref == "doc_8" for r in named for ref in parse_citations(r))
