"""The judge inside Beam: RunInference retries, dead letters, the cascade, and the audit command end to end.

Every test points the real `openai` client at a real HTTP server on 127.0.0.1
(`tests/support/openai_server.py`) whose replies are scripted.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import at, message, raw
from tests.support.openai_server import OpenAIServer, Scripted, data_document
from transforms.audit.stages import score_and_flag
from transforms.text.sentences import split_sentences
from transforms.verify.heuristic.verifier import HeuristicVerifier
from transforms.verify.judge.config import JudgeConfig
from transforms.verify.judge.pipeline import AUDITED, JudgeSentences
from transforms.verify.judge.verifier import judge_sample_point

ANSWER = (
    "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024. "
    "Potassium was 3.1 mmol/L on admission. The patient also enjoys long walks on the beach."
)


def parsed(response_id: str, answer: str = ANSWER) -> ParsedResponse:
    response = LoggedResponse.model_validate(message(response_id, answer=answer))
    return ParsedResponse(response=response, origin=at(1))


def config(server: OpenAIServer, **options) -> JudgeConfig:
    return JudgeConfig(base_url=server.base_url, model="scripted-judge", **options)


def summary(audited):
    """What the tests compare: response id, judge status, who decided each sentence, review reasons."""
    scored = score_and_flag(audited, 0.7)
    return (
        audited.parsed.response.response_id,
        audited.judge_status,
        tuple(audited.decided_by),
        tuple(c.status for c in audited.judge_calls),
        any(r.startswith(str(audited.judge_status)) for r in scored.review.reasons),
    )


def check(responses, judge_config, expected, verifier="openai", band=(0.0, 1.0)):
    """Run JudgeSentences over `responses` and assert the summaries of what comes out equal `expected`."""
    with BeamPipeline(runner="FnApiRunner") as p:
        out = p | beam.Create(responses) | JudgeSentences(verifier, judge_config, threshold=0.7, band=band)
        assert_that(out[AUDITED] | beam.Map(summary), equal_to(expected), label="CheckAudited")


@pytest.mark.server
def test_cascade_sends_only_uncertain_sentences_and_records_who_decided():
    sentences = split_sentences(ANSWER)
    confidences = [v.confidence for v in HeuristicVerifier().verify(sentences, parsed("x").response.evidence).verdicts]
    band = (confidences[1], confidences[1])
    expected = tuple("openai" if c == confidences[1] else "heuristic" for c in confidences)
    assert "heuristic" in expected  # the band must leave something to the heuristic for this test to mean much
    with OpenAIServer() as server:
        expected_rows = [(rid, "judged", expected, ("judged",), False) for rid in ("r-1", "r-2")]
        check([parsed("r-1"), parsed("r-2")], config(server), expected_rows, verifier="cascade", band=band)
        asked = sorted(
            (a["answer_id"], tuple(s["sentence_index"] for s in a["sentences"]))
            for r in server.requests
            for a in data_document(r)["answers"]
        )
    indexes = tuple(i for i, who in enumerate(expected) if who == "openai")
    assert asked == [("r-1", indexes), ("r-2", indexes)]
    assert len(server.requests) == 1  # both answers batched into one call


@pytest.mark.server
def test_a_429_is_retried_by_beam_and_then_judged():
    with OpenAIServer() as server:
        server.script(Scripted(status=429))
        check([parsed("r-1")], config(server, num_retries=2), [("r-1", "judged", ("openai",) * 3, ("judged",), False)])
        assert len(server.requests) == 2


@pytest.mark.server
def test_a_timeout_goes_to_the_dead_letter_output_keeps_heuristic_verdicts_and_asks_for_review():
    with OpenAIServer() as server:
        server.script(Scripted(delay_s=2.0))
        expected = [("r-1", "judge_error", ("heuristic",) * 3, ("judge_error",), True)]
        check([parsed("r-1")], config(server, timeout_s=0.5, num_retries=0), expected)


@pytest.mark.server
def test_three_invalid_replies_keep_heuristic_verdicts_and_ask_for_review():
    with OpenAIServer() as server:
        server.script(*[Scripted(content="I think it is all fine.")] * 3)
        statuses = ("judge_validation_failed",) * 3
        check([parsed("r-1")], config(server), [("r-1", "judge_validation_failed", ("heuristic",) * 3, statuses, True)])
        assert len(server.requests) == 3


@pytest.mark.server
def test_the_judge_sample_rate_leaves_unsampled_responses_to_the_heuristic():
    ids = [f"r-{i}" for i in range(12)]
    sampled = {rid for rid in ids if judge_sample_point(rid) < 0.5}
    assert 0 < len(sampled) < 12
    expected = [
        (rid, "judged", ("openai",) * 3, ("judged",), False)
        if rid in sampled
        else (rid, None, ("heuristic",) * 3, (), False)
        for rid in ids
    ]
    with OpenAIServer() as server:
        check([parsed(rid) for rid in ids], config(server, sample_rate=0.5), expected)
        asked = {a["answer_id"] for r in server.requests for a in data_document(r)["answers"]}
    assert asked == sampled


SECRET = "sk-groundwatch-test-3b1f9e77c0d24a58"


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")


@pytest.mark.server
def test_audit_command_with_the_judge_never_leaks_the_api_key(tmp_path, monkeypatch, caplog, capsys):
    monkeypatch.setenv("GROUNDWATCH_JUDGE_API_KEY", SECRET)
    traffic = tmp_path / "traffic.jsonl"
    lines = [raw(message(f"r-{i}", answer=ANSWER, timestamp=f"2026-11-29T09:0{i}:10Z")) for i in range(4)]
    traffic.write_bytes(b"\n".join(lines) + b"\n")
    lake = tmp_path / "lake"
    caplog.set_level(logging.DEBUG)  # the SDK and httpx log requests at DEBUG: they must not carry the key
    with OpenAIServer() as server:
        # A server that echoes the credential in its error must not get it into the lake either.
        server.script(Scripted(status=401, error_message=f"Incorrect API key provided: {SECRET}"))
        code = groundwatch(
            [
                "audit",
                "--input",
                str(traffic),
                "--lake",
                str(lake),
                "--verifier",
                "openai",
                "--judge-base-url",
                server.base_url,
                "--judge-model",
                "scripted-judge",
                "--judge-answers-per-call",
                "1",
                "--judge-max-concurrency",
                "1",
                "--window-seconds",
                "3600",
            ]
        )
        authorizations = {h.get("Authorization") for h in server.headers}
    assert code == 0
    assert authorizations == {f"Bearer {SECRET}"}  # the key was used ...
    out = capsys.readouterr()
    assert SECRET not in caplog.text and SECRET not in out.out and SECRET not in out.err  # ... never logged
    files = list(lake.rglob("*.parquet"))
    assert files
    for path in files:  # ... and never stored: every string cell of every table, and the raw bytes
        assert SECRET.encode() not in path.read_bytes()
        for column in pq.read_table(path).to_pylist():
            assert not any(SECRET in s for v in column.values() for s in _strings(v))
    con = connect_lake(str(lake))
    calls = con.execute("SELECT response_id, status, error FROM judge_calls ORDER BY response_id").fetchall()
    statuses = [status for _, status, _ in calls]
    assert statuses.count("judge_error") == 1 and statuses.count("judged") == 3
    assert "[API_KEY]" in next(error for _, status, error in calls if status == "judge_error")
    endpoints = con.execute("SELECT DISTINCT judge_endpoint FROM judge_calls").fetchall()
    assert endpoints == [(server.base_url,)]
    decided = dict(
        con.execute("SELECT response_id, list_distinct(list(decided_by)) FROM sentences GROUP BY 1").fetchall()
    )
    failed = next(rid for rid, status, _ in calls if status == "judge_error")
    assert decided[failed] == ["heuristic"]
    assert all(v == ["openai"] for rid, v in decided.items() if rid != failed)
    review = dict(con.execute("SELECT response_id, review_reasons FROM responses").fetchall())
    assert any(r.startswith("judge_error") for r in review[failed])


def test_audit_command_refuses_the_judge_without_an_endpoint(tmp_path, capsys):
    traffic = tmp_path / "traffic.jsonl"
    traffic.write_bytes(raw(message("r-1")) + b"\n")
    code = groundwatch(["audit", "--input", str(traffic), "--lake", str(tmp_path / "lake"), "--verifier", "cascade"])
    assert code == 2 and "--judge-base-url" in capsys.readouterr().err


@pytest.mark.server
@pytest.mark.parametrize("evidence", [[], [{"doc_id": "1", "content": "  "}]])
def test_no_evidence_never_reaches_the_judge(evidence):
    response = ParsedResponse(response=LoggedResponse.model_validate(message("r-0", evidence=evidence)), origin=at(1))
    with OpenAIServer() as server:
        check([response], config(server), [("r-0", None, (), (), False)])
        assert server.requests == []


@pytest.mark.server
def test_outside_beam_the_judge_verifier_reports_its_status_to_routing():
    from transforms.audit.stages import audit_response
    from transforms.verify.registry import make_verifier

    now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    with OpenAIServer() as server:
        server.script(*[Scripted(content="not an audit")] * 3)
        verifier = make_verifier("openai", base_url=server.base_url, model="scripted-judge")
        failed = audit_response(parsed("r-1"), verifier=verifier, window_start=now, window_end=now, now=now)
        judged = audit_response(parsed("r-2"), verifier=verifier, window_start=now, window_end=now, now=now)
    assert (failed.judge_status, len(failed.judge_calls), set(failed.decided_by)) == (
        "judge_validation_failed",
        3,
        {"heuristic"},
    )
    assert any(r.startswith("judge_validation_failed") for r in failed.review.reasons)
    assert (judged.judge_status, len(judged.judge_calls), set(judged.decided_by)) == ("judged", 1, {"openai"})


def test_a_response_the_judges_plan_fails_on_is_dead_lettered_like_any_stage_failure():
    """The judge's plan (the heuristic's verdicts, the sentences to judge) failing on one response gives the
    dead letter every other stage gives (`stage_failed_dead_letter`): stage `verify`, the error in the shared
    `stage_failed: <stage>: <type>: <message>` form, the message's original bytes and origin."""
    from apache_beam.transforms.window import GlobalWindow

    from transforms.ingest.parse import DEAD_LETTERS
    from transforms.verify.judge.pipeline import _PlanDoFn

    now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    parsed = ParsedResponse(
        response=LoggedResponse.model_validate(message("r-bad")), origin=at(7), raw=raw(message("r-bad"))
    )
    broken = parsed.model_copy(update={"response": parsed.response.model_copy(update={"evidence": None})})
    plan = _PlanDoFn(band=(0.0, 1.0), clock=lambda: now)
    plan.setup()
    (out,) = plan.process(broken, window=GlobalWindow())
    assert out.tag == DEAD_LETTERS
    dead = out.value
    assert (dead.stage, dead.raw_payload, dead.origin_offset, dead.received_at) == (
        "verify",
        raw(message("r-bad")),
        7,
        now,
    )
    assert dead.error.startswith("stage_failed: verify: TypeError: "), dead.error
