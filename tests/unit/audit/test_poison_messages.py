"""No single message stops a run: whatever stage fails on one message, it becomes a dead letter naming the stage
and keeping the message's original bytes, its neighbours are audited, and the counts add up."""

from __future__ import annotations

from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from dashboards.views import connect_lake
from pipelines.runner.audit_graph import build_pipeline
from pipelines.runner.bounded import exit_code
from pipelines.runner.bounded import run_audit as run
from pipelines.runner.counts import counts_from_result
from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message, raw
from transforms.audit.stages import AUDITED, ToLakeRows, audit_response
from transforms.ingest.parse import DEAD_LETTERS, ParseError, parse_message, response_id_of
from transforms.io.lake.rows import to_lake_rows
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.registry import VERIFIERS, make_verifier, register_verifier

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DEEP = b"[" * 1000 + b"]" * 1000
"""A JSON array nested 1,000 deep: deeper than Python's JSON reader can recurse."""
DEEP_IN_OBJECT = raw(message("deep-field"))[:-1] + b', "trace": ' + DEEP + b"}"
"""A valid response with the deep array as a field's value."""


def test_deep_json_is_malformed_json_and_has_no_response_id():
    for payload in (DEEP, DEEP_IN_OBJECT):
        assert response_id_of(payload) is None  # raised RecursionError, which stopped the pass planning
        try:
            parse_message(payload)
        except ParseError as e:
            assert e.reason == "malformed_json"
            assert "recursion" in e.message or "deep" in e.message
        else:
            raise AssertionError("a 1,000-deep message was accepted")


def test_a_file_with_deep_lines_audits_every_neighbour(tmp_path):
    neighbours = [raw(message(f"ok-{i}", timestamp=f"2026-11-29T09:0{i}:10Z")) for i in range(4)]
    lines = [neighbours[0], DEEP, neighbours[1], DEEP_IN_OBJECT, neighbours[2], neighbours[3]]
    path = tmp_path / "traffic.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    lake = tmp_path / "lake"
    argv = [f"--input={path}", f"--lake={lake}"]

    assert exit_code("audit", lambda a: run(a, out=lambda _: None), argv) == 0
    counts = run(argv, out=lambda _: None)  # again, for the counts (a re-run overwrites the same files)
    assert (counts.read, counts.audited, counts.dead_lettered) == (6, 4, 2) and counts.adds_up
    assert counts.dead_letter_reasons == {"malformed_json": 2}

    con = connect_lake(str(lake))
    ids = {r[0] for r in con.execute("SELECT response_id FROM responses").fetchall()}
    assert ids == {f"ok-{i}" for i in range(4)}
    dead = con.execute("SELECT origin_offset, stage, error, raw_payload FROM dead_letters ORDER BY 1").fetchall()
    assert [(line, stage) for line, stage, _, _ in dead] == [(2, "parse"), (4, "parse")]
    assert all(error.startswith("malformed_json: ") for _, _, error, _ in dead)
    assert [payload for *_, payload in dead] == [DEEP, DEEP_IN_OBJECT]


class _FailsOnPoison(HeuristicVerifier):
    """The heuristic, except that an answer sentence containing POISON makes it raise (as a bug of ours would)."""

    name = "fails_on_poison"

    def verify(self, sentences, evidence):
        if any("POISON" in s for s in sentences):
            raise RecursionError("maximum recursion depth exceeded (test verifier)")
        return super().verify(sentences, evidence)


def test_a_verifier_that_raises_on_one_response_dead_letters_it_with_the_stage_and_its_bytes(tmp_path):
    register_verifier("fails_on_poison", _FailsOnPoison)
    try:
        poison = raw(message("poison", answer="POISON was prescribed at 50 mg [1]."))
        inputs = [(raw(message("ok-a")), at(1)), (poison, at(2)), (raw(message("ok-b")), at(3))]
        options = PipelineOptions([f"--lake={tmp_path / 'lake'}", "--runner=FnApiRunner", "--verifier=fails_on_poison"])
        with BeamPipeline(options=options) as p:
            out = build_pipeline(p, p.options, source=p | beam.Create(inputs))
            assert_that(
                out["audited"] | beam.Map(lambda a: a.parsed.response.response_id),
                equal_to(["ok-a", "ok-b"]),
                label="CheckAudited",
            )
        counts = counts_from_result(p.result)
        assert (counts.read, counts.audited, counts.dead_lettered) == (3, 2, 1) and counts.adds_up
        assert counts.dead_letter_reasons == {"verify_failed": 1}
        stage, error, payload, offset = (
            connect_lake(str(tmp_path / "lake"))
            .execute("SELECT stage, error, raw_payload, origin_offset FROM dead_letters")
            .fetchone()
        )
        assert (stage, offset) == ("verify", 2)
        assert error.startswith("stage_failed: verify: RecursionError: maximum recursion depth exceeded")
        assert payload == poison  # the bytes as read, not the response written again
    finally:
        VERIFIERS.pop("fails_on_poison", None)


def _audited(payload: bytes):
    parsed = ParsedResponse(
        response=LoggedResponse.model_validate_json(payload), origin=at(1), raw=payload, input_flags=[]
    )
    verifier = make_verifier("heuristic")
    return audit_response(parsed, verifier=verifier, window_start=NOW, window_end=NOW, now=NOW)


def _rows_unless_broken(audited):
    if audited.parsed.response.response_id == "broken-rows":
        raise ValueError("row builder failed")
    return to_lake_rows(audited)


def test_a_response_whose_lake_rows_fail_becomes_a_dead_letter_and_leaves_the_audited_count(tmp_path):
    good, broken = raw(message("fine")), raw(message("broken-rows"))
    scored = [_audited(good), _audited(broken)]
    with BeamPipeline(runner="FnApiRunner") as p:
        rows = p | beam.Create(scored) | ToLakeRows(_rows_unless_broken, clock=lambda: NOW)
        assert_that(
            rows[AUDITED] | beam.Map(lambda pairs: [(t, row["response_id"]) for t, row in pairs if t == "responses"]),
            equal_to([[("responses", "fine")]]),  # all of a response's rows in one element
            label="CheckRows",
        )
        assert_that(
            rows[DEAD_LETTERS] | beam.Map(lambda d: (d.stage, d.error, d.raw_payload)),
            equal_to([("lake_rows", "stage_failed: lake_rows: ValueError: row builder failed", broken)]),
            label="CheckDead",
        )
    counts = counts_from_result(p.result)
    # It had been counted audited when scored (not here: -1) and is counted a dead letter instead.
    assert counts.audited == -1 and counts.dead_letter_reasons == {"lake_rows_failed": 1}
