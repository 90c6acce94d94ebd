"""Window metrics: the plain functions on hand-made responses, the composite in a TestPipeline, and the lake."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime, timedelta

import apache_beam as beam
import duckdb
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.traffic.scenarios import ScenarioSpec, audit_into_lake, scenario_responses
from schemas import LoggedResponse, Origin, ParsedResponse
from tests.support.prism_fixtures import needs_prism, prism_options
from transforms.audit.stages import audit_response
from transforms.io.lake.rows import to_lake_rows
from transforms.monitoring.window_metrics import (
    UNKNOWN_SLICE,
    ResponseStats,
    WindowMetrics,
    compute_window_metrics,
    stats_from_audited,
    stats_from_rows,
)
from transforms.verify.heuristic.verifier import HeuristicVerifier

START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
END = START + timedelta(minutes=1)
FIXED = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _stats(rid, tenant="acme", retriever="r7", confidences=(0.9, 0.6), verdicts=(2, 0, 0, 0), **extra):
    support = tuple(c if i < verdicts[0] else 1 - c for i, c in enumerate(confidences))
    return ResponseStats(
        response_id=rid,
        window_start=START,
        window_end=END,
        tenant=tenant,
        retriever_version=retriever,
        generator_model="gen-1",
        confidences=tuple(confidences),
        grounded_probabilities=support,
        verdict_counts=verdicts,
        faithfulness=extra.pop("faithfulness", 1.0),
        **extra,
    )


def _row(rows, dimension, value):
    (row,) = [r for r in rows if r.slice_dimension == dimension and r.slice_value == value]
    return row


def test_window_metrics_per_slice_with_shares_rates_and_unknown_slices():
    stats = [
        _stats("a", confidences=(0.9, 0.7), verdicts=(2, 0, 0, 0),
               claims=4, covered_claims=4.0, low_confidence_claims=1.0),
        _stats("b", tenant="beta", confidences=(0.8, 0.6, 0.4), verdicts=(1, 1, 1, 0), faithfulness=0.5,
               claims=2, covered_claims=1.0, low_confidence_claims=0.0, citations=4, failed_citations=1),
        _stats("c", retriever=None, confidences=(0.5,), verdicts=(0, 0, 0, 1), faithfulness=0.0,
               needs_review=True),
    ]  # fmt: skip
    rows = compute_window_metrics(stats, FIXED)
    everything = _row(rows, "all", "all")
    assert everything.responses == 3 and everything.sentences == 6
    assert everything.mean_confidence == pytest.approx(statistics.fmean([0.9, 0.7, 0.8, 0.6, 0.4, 0.5]))
    assert everything.median_confidence == pytest.approx(0.65)
    # support: a -> 0.9, 0.7; b -> 0.8 (grounded), 0.4, 0.6; c -> 0.5
    assert everything.mean_attribution_confidence == pytest.approx(statistics.fmean([0.9, 0.7, 0.8, 0.4, 0.6, 0.5]))
    assert everything.mean_faithfulness == pytest.approx(0.5)
    assert everything.fully_grounded_share == pytest.approx(3 / 6)
    assert everything.partially_grounded_share == pytest.approx(1 / 6)
    assert everything.contradicted_share == pytest.approx(1 / 6)
    # pooled over claims, not averaged over responses: (4 + 1) / 6 and 1 / 6
    assert everything.claims == 6
    assert everything.attribution_coverage_rate == pytest.approx(5 / 6)
    assert everything.low_confidence_claim_rate == pytest.approx(1 / 6)
    assert everything.citations == 4 and everything.citation_failure_rate == pytest.approx(0.25)
    assert everything.needs_review_responses == 1

    assert _row(rows, "tenant", "acme").responses == 2
    assert _row(rows, "retriever_version", UNKNOWN_SLICE).responses == 1
    unknown = _row(rows, "retriever_version", UNKNOWN_SLICE)
    assert unknown.claims is None and unknown.attribution_coverage_rate is None
    assert unknown.citations is None and unknown.citation_failure_rate is None
    assert {r.computed_at for r in rows} == {FIXED}


def _audited(count=12, seed=5):
    verifier = HeuristicVerifier()
    spec = ScenarioSpec("stable", windows=2, per_window=count // 2, seed=seed)
    audited = []
    for i, message in enumerate(scenario_responses(spec)):
        response = LoggedResponse.model_validate(message)
        start = response.timestamp.replace(second=0, microsecond=0)
        audited.append(
            audit_response(
                ParsedResponse(response=response, origin=Origin(source="test", offset=i)),
                verifier=verifier,
                window_start=start,
                window_end=start + timedelta(minutes=1),
                now=FIXED,
            )
        )
    return audited


def test_lake_rows_give_the_same_stats_as_the_audited_response():
    for audited in _audited():
        rows = to_lake_rows(audited)
        (response,) = [r for t, r in rows if t == "responses"]
        sentences = sorted((r for t, r in rows if t == "sentences"), key=lambda r: r["sentence_index"])
        rebuilt = stats_from_rows(
            response, [(s["attribution_verdict"], s["confidence"], s["grounded_probability"]) for s in sentences]
        )
        direct = stats_from_audited(audited)
        assert rebuilt.verdict_counts == direct.verdict_counts
        assert rebuilt.grounded_probabilities == pytest.approx(direct.grounded_probabilities)
        assert rebuilt.faithfulness == pytest.approx(direct.faithfulness)


def test_composite_matches_the_plain_function():
    audited = _audited()
    expected = [
        ("window_metrics", r.model_dump()) for r in compute_window_metrics(map(stats_from_audited, audited), FIXED)
    ]
    assert len(expected) > 4
    with TestPipeline(runner="FnApiRunner") as p:
        rows = p | "Audited" >> beam.Create(audited) | "WindowMetrics" >> WindowMetrics(clock=lambda: FIXED)
        assert_that(rows, equal_to(expected), label="CheckRows")


def test_window_metrics_table_in_the_lake(tmp_path):
    spec = ScenarioSpec("stable", windows=3, per_window=15, seed=2)
    messages = list(scenario_responses(spec))
    audit_into_lake(messages, str(tmp_path))
    con = duckdb.connect()
    rows = con.execute(
        "SELECT window_start, responses FROM read_parquet(?) WHERE slice_dimension = 'all' ORDER BY 1",
        [str(tmp_path / "window_metrics" / "**" / "*.parquet")],
    ).fetchall()
    assert len(rows) >= 3
    assert sum(n for _, n in rows) == len(messages)
    per_window = con.execute(
        "SELECT window_start, count(*) FROM read_parquet(?) GROUP BY 1 ORDER BY 1",
        [str(tmp_path / "responses" / "**" / "*.parquet")],
    ).fetchall()
    assert [n for _, n in per_window] == [n for _, n in rows]


@pytest.mark.prism
@needs_prism
def test_a_late_pane_does_not_replace_the_window_figures():
    """Streaming: a late pane's row would replace the first one in the lake (same key, same file) with the figures
    of its few late responses; only each window's first pane becomes a row. Prism runs the real trigger machinery."""
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.transforms.window import FixedWindows, TimestampedValue
    from apache_beam.utils.timestamp import Duration

    everything = _audited(count=12)
    audited = [a for a in everything if a.window_start == everything[0].window_start]
    assert len(audited) >= 3
    on_time, late = audited[:-1], audited[-1]
    event_s = lambda a: a.parsed.response.timestamp.timestamp()  # noqa: E731
    window_end_s = on_time[0].window_end.timestamp()
    stream = (
        TestStream()
        .add_elements([TimestampedValue(a, event_s(a)) for a in on_time])
        .advance_watermark_to(window_end_s + 30)  # the window closes: its on-time pane fires
        .add_elements([TimestampedValue(late, event_s(late))])  # late, but within the allowed lateness
        .advance_watermark_to_infinity()
    )
    with beam.Pipeline(options=prism_options("--streaming")) as p:
        rows = (
            p
            | stream
            | beam.WindowInto(FixedWindows(60), allowed_lateness=Duration(seconds=3600))
            | WindowMetrics(clock=lambda: FIXED)
            | beam.Filter(lambda tr: tr[1]["slice_dimension"] == "all")
            | beam.Map(lambda tr: tr[1]["responses"])
        )
        # Every pane kept would give [n, 1]: the late pane's row, written last, would say the window had 1 response.
        assert_that(rows, equal_to([len(on_time)]))


def test_abstention_rate_is_the_share_of_abstaining_responses_per_slice():
    stats = [
        _stats("a", abstained=True),
        _stats("b", tenant="beta"),
        _stats("c", abstained=True, tenant="beta"),
        _stats("d"),
    ]
    rows = compute_window_metrics(stats, FIXED)
    assert _row(rows, "all", "all").abstention_rate == pytest.approx(2 / 4)
    assert _row(rows, "tenant", "acme").abstention_rate == pytest.approx(1 / 2)
    assert _row(rows, "tenant", "beta").abstention_rate == pytest.approx(1 / 2)
    # From the lake's responses rows as from the audited response.
    rebuilt = stats_from_rows(
        {"response_id": "x", "window_start": START, "window_end": END, "tenant": "acme",
         "overall_faithfulness_score": 1.0, "abstention": True},
        [],
    )  # fmt: skip
    assert rebuilt.abstained
