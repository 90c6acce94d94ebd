"""The audit pipeline's composites and whole graph: bad input never crashes it, counts add up, windows reach rows."""

from __future__ import annotations

from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.test_stream import TestStream as BeamTestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from dashboards.views import connect_lake
from pipelines.runner.audit_graph import build_pipeline
from pipelines.runner.bounded import run_audit as run
from pipelines.runner.counts import counts_from_result
from schemas import LoggedResponse, ParsedResponse
from tests.support.audit_messages import BAD_MESSAGES, at, message, raw
from transforms.audit.stages import AUDITED, ScoreAndFlag, VerifySentences
from transforms.ingest.parse import PARSED, DropDuplicateResponses, ParseResponses
from transforms.ingest.windows import WindowByEventTime

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _options(lake, *extra) -> PipelineOptions:
    return PipelineOptions([f"--lake={lake}", "--runner=FnApiRunner", *extra])


def _every_kind_of_input():
    good = [(raw(message(f"ok-{i}", timestamp=f"2026-11-29T09:0{i}:10Z")), at(i + 1)) for i in range(5)]
    empty = (raw(message("no-evidence", evidence=[])), at(20))
    duplicate = (raw(message("ok-1", timestamp="2026-11-29T09:01:10Z")), at(21))
    bad = [(payload, at(30 + i)) for i, payload in enumerate(BAD_MESSAGES.values())]
    return [*good, empty, duplicate, *bad]


def test_every_bad_input_is_dead_lettered_and_counts_add_up(tmp_path):
    inputs = _every_kind_of_input()
    with BeamPipeline(options=_options(tmp_path / "lake")) as p:
        out = build_pipeline(p, p.options, source=p | beam.Create(inputs))
        assert_that(
            out["audited"] | beam.Map(lambda a: a.parsed.response.response_id),
            equal_to(["ok-0", "ok-1", "ok-2", "ok-3", "ok-4", "no-evidence"]),
            label="CheckAudited",
        )
        assert_that(
            out["dead_letters"] | beam.Map(lambda d: d.error.split(":")[0]),
            equal_to([*BAD_MESSAGES, "duplicate_response_id"]),
            label="CheckDeadLetters",
        )
    counts = counts_from_result(p.result)
    assert (counts.read, counts.audited, counts.sampled_out, counts.dead_lettered) == (len(inputs), 6, 0, 8)
    assert counts.adds_up
    assert counts.dead_letter_reasons == {reason: 1 for reason in [*BAD_MESSAGES, "duplicate_response_id"]}

    con = connect_lake(str(tmp_path / "lake"))
    assert con.execute("SELECT count(*) FROM dead_letters").fetchone()[0] == 8
    payloads = dict(con.execute("SELECT split_part(error, ':', 1), raw_payload FROM dead_letters").fetchall())
    assert payloads["not_utf8"] == BAD_MESSAGES["not_utf8"]
    assert payloads["duplicate_response_id"] == inputs[6][0]
    flags, critical = con.execute(
        "SELECT input_flags, critical_flags FROM responses WHERE response_id = 'no-evidence'"
    ).fetchone()
    assert flags == ["empty_evidence"] and critical == ["INSUFFICIENT_EVIDENCE"]


def test_window_bounds_reach_every_lake_row(tmp_path):
    inputs = [
        (raw(message("a", timestamp="2026-11-29T09:00:59.900Z")), at(1)),
        (raw(message("b", timestamp="2026-11-29T09:01:00Z")), at(2)),
        (raw(message("c", timestamp=1795942901000)), at(3)),  # epoch ms: 2026-11-29T09:01:41Z
    ]
    with BeamPipeline(options=_options(tmp_path / "lake", "--window_seconds=30")) as p:
        build_pipeline(p, p.options, source=p | beam.Create(inputs))
    con = connect_lake(str(tmp_path / "lake"))
    rows = con.execute(
        "SELECT response_id, strftime(window_start, '%H:%M:%S'), strftime(window_end, '%H:%M:%S')"
        " FROM responses ORDER BY 1"
    ).fetchall()
    assert rows == [("a", "09:00:30", "09:01:00"), ("b", "09:01:00", "09:01:30"), ("c", "09:01:30", "09:02:00")]
    sentence_windows = con.execute("SELECT DISTINCT response_id, window_start FROM sentences").fetchall()
    assert len(sentence_windows) == 3


def test_sampling_in_the_pipeline_counts_what_it_leaves_out(tmp_path):
    low = [(raw(message(f"low-{i}", metadata={"risk_level": "low"})), at(i + 1)) for i in range(40)]
    high = [(raw(message(f"high-{i}", metadata={"risk_level": "high"})), at(100 + i)) for i in range(5)]
    with BeamPipeline(options=_options(tmp_path / "lake", "--sample_rate=0.2")) as p:
        build_pipeline(p, p.options, source=p | beam.Create(low + high))
    counts = counts_from_result(p.result)
    assert counts.read == 45 and counts.adds_up and counts.dead_lettered == 0
    assert 0 < counts.sampled_out < 40 and counts.audited >= 5
    audited_ids = {
        r[0] for r in connect_lake(str(tmp_path / "lake")).execute("SELECT response_id FROM responses").fetchall()
    }
    assert {f"high-{i}" for i in range(5)} <= audited_ids and len(audited_ids) == counts.audited


def test_run_reads_a_jsonl_file_and_prints_counts(tmp_path):
    path = tmp_path / "traffic.jsonl"
    lines = [raw(message(f"f-{i}")) for i in range(3)] + [b"", b"{nope", BAD_MESSAGES["not_utf8"]]
    path.write_bytes(b"\n".join(lines) + b"\n")
    printed = []
    counts = run([f"--input={path}", f"--lake={tmp_path / 'lake'}"], out=printed.append)
    assert (counts.read, counts.audited, counts.dead_lettered) == (5, 3, 2)  # the blank line is no message
    assert "read" in printed[0] and str(tmp_path / "lake") in printed[0]
    origins = (
        connect_lake(str(tmp_path / "lake")).execute("SELECT origin_offset FROM dead_letters ORDER BY 1").fetchall()
    )
    assert origins == [(5,), (6,)]


def test_run_reads_a_glob_of_plain_and_compressed_files(tmp_path):
    import gzip

    (tmp_path / "a.jsonl").write_bytes(raw(message("a-1")) + b"\n" + raw(message("a-2")) + b"\n")
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(raw(message("b-1")) + b"\n" + raw(message("a-1")) + b"\n"))
    counts = run([f"--input={tmp_path}/*.jsonl*", f"--lake={tmp_path / 'lake'}"], out=lambda _: None)
    assert (counts.read, counts.audited, counts.dead_letter_reasons) == (4, 3, {"duplicate_response_id": 1})
    con = connect_lake(str(tmp_path / "lake"))
    sources = con.execute("SELECT response_id, origin_source, origin_offset FROM responses ORDER BY 1").fetchall()
    assert sources == [
        ("a-1", f"file:{tmp_path}/a.jsonl", 1),
        ("a-2", f"file:{tmp_path}/a.jsonl", 2),
        ("b-1", f"file:{tmp_path}/b.jsonl.gz", 1),
    ]


def test_bad_options_raise_naming_the_flag(tmp_path):
    with pytest.raises(ValueError, match="--input"):
        run([f"--input={tmp_path / 'missing*.jsonl'}", f"--lake={tmp_path}"])
    with pytest.raises(ValueError, match="--sample-rate"):
        run([f"--input={__file__}", f"--lake={tmp_path}", "--sample_rate=2"])
    with pytest.raises(ValueError, match="--verifier"):
        run([f"--input={__file__}", f"--lake={tmp_path}", "--verifier=nope"])


def _parsed(response_id: str, timestamp: str) -> ParsedResponse:
    return ParsedResponse(
        response=LoggedResponse.model_validate(message(response_id, timestamp=timestamp)), origin=at(1)
    )


def test_verify_and_score_composites_route_contradictions():
    contradicted = message("k", answer="Lab results showed potassium at 3.1 mmol/L on admission [2].")
    with BeamPipeline(runner="FnApiRunner") as p:
        responses = p | beam.Create(
            [ParsedResponse(response=LoggedResponse.model_validate(contradicted), origin=at(1))]
        )
        verified = responses | VerifySentences("heuristic", threshold=0.7, clock=lambda: NOW)
        scored = (verified[AUDITED] | ScoreAndFlag(0.7))[AUDITED]
        assert_that(
            scored | beam.Map(lambda a: (a.review.needs_review, a.review.reasons[0], a.audited_at)),
            equal_to([(True, "sentence 0 contradicted by evidence 2", NOW)]),
        )


def test_a_process_that_audits_tunes_its_garbage_collector(monkeypatch):
    """The verifier's worker raises the cycle collector's thresholds and freezes what is alive at set-up."""
    import gc

    from transforms.audit import stages as audit
    from transforms.audit.stages import GC_THRESHOLDS

    # As in a fresh process: an earlier test in this one may already have tuned it.
    defaults = gc.get_threshold()
    monkeypatch.setattr(audit, "_gc_settled", False)
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        with BeamPipeline(runner="FnApiRunner") as p:  # in process: the DoFn's set-up runs here
            parsed = ParsedResponse(response=LoggedResponse.model_validate(message("g")), origin=at(1))
            responses = p | beam.Create([parsed])
            _ = responses | VerifySentences("heuristic", threshold=0.7, clock=lambda: NOW)
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.set_threshold(*defaults)


def test_unknown_verifier_fails_at_construction():
    with pytest.raises(ValueError, match="unknown verifier"):
        VerifySentences("no-such-verifier")


def test_windows_with_out_of_order_and_late_elements():
    """Event-time windows on a stream: an out-of-order element lands in its own window; a late one within the
    allowed lateness is still audited, in the window its timestamp says."""

    def element(response_id, ts):
        msg = raw(message(response_id, timestamp=ts))
        seconds = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        return TimestampedValue((msg, at(1, source=f"kafka:{response_id}")), seconds)

    t0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC).timestamp()
    stream = (
        BeamTestStream()
        .advance_watermark_to(t0)
        .add_elements([element("first", "2026-11-29T09:00:20Z"), element("next-minute", "2026-11-29T09:01:05Z")])
        .add_elements([element("out-of-order", "2026-11-29T09:00:40Z")])  # earlier than the one before it
        .advance_watermark_to(t0 + 125)  # both windows are complete
        .add_elements([element("late", "2026-11-29T09:00:50Z")])  # behind the watermark, within lateness
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions(["--runner=BundleBasedDirectRunner"])
    options.view_as(StandardOptions).streaming = True
    with BeamPipeline(options=options) as p:
        parsed = p | stream | ParseResponses()
        windowed = parsed[PARSED] | WindowByEventTime(60, allowed_lateness_seconds=600)
        unique = windowed | DropDuplicateResponses()
        verified = unique[PARSED] | VerifySentences("heuristic", clock=lambda: NOW)
        assert_that(
            verified[AUDITED] | beam.Map(lambda a: (a.parsed.response.response_id, a.window_start.strftime("%H:%M"))),
            equal_to([("first", "09:00"), ("out-of-order", "09:00"), ("late", "09:00"), ("next-minute", "09:01")]),
        )


def test_streaming_graph_dedupes_per_window_and_writes_each_window(tmp_path):
    """The same graph in streaming mode (what `groundwatch monitor` runs): per-window dedupe, a file per window."""

    def element(response_id, ts, line):
        seconds = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        return TimestampedValue((raw(message(response_id, timestamp=ts)), at(line, source="kafka:t")), seconds)

    t0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC).timestamp()
    stream = (
        BeamTestStream()
        .advance_watermark_to(t0)
        .add_elements([element("a", "2026-11-29T09:00:10Z", 1), element("a", "2026-11-29T09:00:10Z", 2)])
        .add_elements([element("b", "2026-11-29T09:01:10Z", 3), TimestampedValue((b"{nope", at(4)), t0 + 75)])
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions([f"--lake={tmp_path / 'lake'}", "--runner=BundleBasedDirectRunner"])
    options.view_as(StandardOptions).streaming = True
    with BeamPipeline(options=options) as p:
        out = build_pipeline(p, p.options, source=p | stream)
        assert_that(
            # A stream's audited elements are ScoredRows: what its lanes send back (transforms.audit.stream).
            out["audited"] | beam.Map(lambda a: (a.response_id, a.stats.window_start.strftime("%H:%M"))),
            equal_to([("a", "09:00"), ("b", "09:01")]),
            label="CheckAudited",
        )
    con = connect_lake(str(tmp_path / "lake"))
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 2
    reasons = sorted(r for (r,) in con.execute("SELECT split_part(error, ':', 1) FROM dead_letters").fetchall())
    assert reasons == ["duplicate_response_id", "malformed_json"]
    files = con.execute(
        "SELECT count(DISTINCT filename) FROM read_parquet('"
        + str(tmp_path / "lake")
        + "/responses/**/*.parquet', filename = true)"
    ).fetchone()[0]
    assert files == 2  # one per window
