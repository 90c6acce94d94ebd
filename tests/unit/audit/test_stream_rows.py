"""A stream's lanes score each response and build its rows (`transforms.audit.stream`): what they send on must
be exactly what a bounded run builds from the same response, cost less to send, and still drop duplicates."""

from __future__ import annotations

from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to
from pydantic import BaseModel

from pipelines.runner.counts import counts_from_result
from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message, raw
from transforms.audit.stages import AUDITED, score_and_flag, verify_response
from transforms.audit.steps import audit_steps
from transforms.audit.stream import CountAudited, ScoredRows, ScoreToRows, drop_duplicate_rows, scored_rows
from transforms.ingest.parse import DEAD_LETTERS, PARSED
from transforms.io.kafka.sink import review_message
from transforms.io.lake.rows import to_lake_rows
from transforms.monitoring.window_metrics import stats_from_audited
from transforms.retrieval.report import score_retrieval_step
from transforms.verify.registry import make_verifier

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
THRESHOLD = 0.7


def _audited(payload: bytes, offset: int = 1):
    """A response audited up to routing, as a lane holds it before `ScoreToRows`."""
    parsed = ParsedResponse(
        response=LoggedResponse.model_validate_json(payload), origin=at(offset, source="kafka:t"), raw=payload
    )
    audited = verify_response(
        parsed, verifier=make_verifier("heuristic"), threshold=THRESHOLD, window_start=NOW, window_end=NOW, now=NOW
    )
    for _, _, step in audit_steps(THRESHOLD):
        audited = step(audited)
    return score_retrieval_step(audited)


def _flagged_payload() -> bytes:
    """A response the heuristic sends to review: its answer says what its evidence does not."""
    return raw(message("flagged", answer="The court awarded damages of nine million dollars to the tenant."))


def test_scored_rows_hold_what_a_bounded_run_builds_from_the_same_response():
    for payload in (raw(message("plain")), _flagged_payload()):
        audited = _audited(payload)
        scored = score_and_flag(audited, THRESHOLD, 0.5)
        out = scored_rows(scored, rows=to_lake_rows, threshold=THRESHOLD, now=lambda: NOW)
        assert out.rows == to_lake_rows(scored)
        assert out.stats == stats_from_audited(scored)
        assert out.review_message == review_message(scored, THRESHOLD)
        assert out.needs_review == scored.review.needs_review
        assert (out.response_id, out.origin, out.raw) == (
            scored.parsed.response.response_id,
            scored.parsed.origin,
            payload,
        )
        assert out.audited_at == scored.audited_at
    flagged = scored_rows(
        score_and_flag(_audited(_flagged_payload()), THRESHOLD), rows=to_lake_rows, threshold=THRESHOLD
    )
    assert flagged.needs_review and flagged.review_message is not None, "the review path was exercised"


def test_score_to_rows_routes_with_its_options_and_builds_what_the_plain_functions_build():
    """In a pipeline, `ScoreToRows` routes with its threshold and review sample, then builds `scored_rows`: the
    same ScoredRows, after Beam has encoded and decoded them between its steps."""
    payloads = [raw(message(f"r-{i}")) for i in range(6)] + [_flagged_payload()]
    audited = [_audited(payload, offset) for offset, payload in enumerate(payloads)]
    expected = [
        scored_rows(score_and_flag(a, THRESHOLD, 0.5), rows=to_lake_rows, threshold=THRESHOLD, now=lambda: NOW)
        for a in audited
    ]
    assert len({e.needs_review for e in expected}) == 2, "some routed to review, some not"
    with BeamPipeline(runner="FnApiRunner") as p:
        built = (
            p | beam.Create(audited) | ScoreToRows(THRESHOLD, rows=to_lake_rows, review_sample=0.5, clock=lambda: NOW)
        )
        assert_that(built[AUDITED], equal_to(expected))
        assert_that(built[DEAD_LETTERS], equal_to([]), label="NoDeadLetters")


def test_scored_rows_are_plain_data_that_beams_coder_round_trips():
    """What crosses from a lane holds no pydantic model but its small origin: Beam pickles it whole, with no
    model's own pickling hooks to run (the speed is in docs/benchmarks.md, not asserted here)."""
    out = scored_rows(score_and_flag(_audited(_flagged_payload()), THRESHOLD), rows=to_lake_rows, threshold=THRESHOLD)
    coder = coders.FastPrimitivesCoder()
    assert coder.decode(coder.encode(out)) == out
    values = [v for _, row in out.rows for v in row.values()] + list(vars(out.stats).values())
    nested = values + [x for v in values if isinstance(v, (list, tuple)) for x in v]
    assert not [v for v in nested if isinstance(v, BaseModel)]


def _rows_unless_broken(audited):
    if audited.parsed.response.response_id == "broken-rows":
        raise ValueError("row builder failed")
    return to_lake_rows(audited)


def test_score_to_rows_dead_letters_a_response_whose_rows_fail_and_counts_nothing_audited():
    good, broken = raw(message("fine")), raw(message("broken-rows"))
    with BeamPipeline(runner="FnApiRunner") as p:
        built = (
            p
            | beam.Create([_audited(good), _audited(broken)])
            | ScoreToRows(THRESHOLD, rows=_rows_unless_broken, clock=lambda: NOW)
        )
        assert_that(built[AUDITED] | beam.Map(lambda s: s.response_id), equal_to(["fine"]), label="CheckRows")
        assert_that(
            built[DEAD_LETTERS] | beam.Map(lambda d: (d.stage, d.error, d.raw_payload)),
            equal_to([("lake_rows", "stage_failed: lake_rows: ValueError: row builder failed", broken)]),
            label="CheckDead",
        )
    counts = counts_from_result(p.result)
    # Counting is left to CountAudited, after the dedupe: a repeated copy must not count twice.
    assert counts.audited == 0 and counts.dead_letter_reasons == {"lake_rows_failed": 1}


def test_duplicates_of_scored_rows_keep_the_first_copy_read_and_count_it_once():
    payload = raw(message("twice"))
    copies = [
        scored_rows(score_and_flag(_audited(payload, offset), THRESHOLD), rows=to_lake_rows, threshold=THRESHOLD)
        for offset in (9, 4)
    ]
    assert all(isinstance(c, ScoredRows) for c in copies)
    with BeamPipeline(runner="FnApiRunner") as p:
        unique = p | beam.Create(copies) | drop_duplicate_rows(clock=lambda: NOW)
        kept = unique[PARSED] | CountAudited()
        assert_that(kept | beam.Map(lambda s: (s.response_id, s.origin.offset)), equal_to([("twice", 4)]))
        assert_that(
            unique[DEAD_LETTERS] | beam.Map(lambda d: (d.origin_offset, d.raw_payload, d.error.split(":")[0])),
            equal_to([(9, payload, "duplicate_response_id")]),
            label="CheckDuplicate",
        )
    counts = counts_from_result(p.result)
    assert counts.audited == 1 and counts.dead_letter_reasons == {"duplicate_response_id": 1}
