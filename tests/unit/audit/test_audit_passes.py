"""A large JSONL input is audited in passes of at most `--max-records-per-run` lines, and the passes write
the lake one run would: every line read once, duplicates dropped across passes, whole-window metrics."""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from dataclasses import replace

import apache_beam as beam
import pytest
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.options.pipeline_options import PipelineOptions

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from pipelines.runner.bounded import _line_range_pieces, pipeline_options, run_checked
from pipelines.runner.bounded import run_audit as run
from pipelines.runner.passes import plan_jsonl_passes
from schemas import Origin
from tests.support.audit_messages import message, raw
from tests.support.lake_rows import lake_rows
from transforms.ingest.parse import METRICS_NAMESPACE, first_copy
from transforms.io.jsonl import LineRange, iter_jsonl_messages, split_line_ranges
from transforms.io.lake.writer import LAKE_METRICS_NAMESPACE


def _write(path, lines: list[bytes]) -> str:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return str(path)


def _sample(lines: int) -> list[bytes]:
    """The shipped sample traffic's first `lines` lines (answers of tens of windows, and broken lines)."""
    with open(sample_traffic_path(), "rb") as f:
        return f.read().splitlines()[:lines]


def _read(ranges) -> list[tuple[str, int]]:
    out = []
    for lines in ranges:
        with FileSystems.open(lines.path, compression_type=CompressionTypes.AUTO) as stream:
            out += [
                (o.source, o.offset)
                for _, o in iter_jsonl_messages(stream, f"file:{lines.path}", lines.first, lines.stop)
            ]
    return out


@pytest.fixture
def two_files(tmp_path) -> tuple[str, str]:
    a = _write(
        tmp_path / "a.jsonl",
        [raw(message("r-1")), raw(message("r-2")), raw(message("r-3")), b"", b"{bad", raw(message("r-2"))],
    )
    b = _write(
        tmp_path / "b.jsonl.gz", [raw(message("r-4")), raw(message("r-1")), raw(message("r-5")), raw(message("r-6"))]
    )
    return a, b  # fmt: skip


def test_the_plan_cuts_the_files_into_passes_that_read_every_line_once(tmp_path, two_files):
    a, b = two_files
    plan = plan_jsonl_passes(str(tmp_path / "*.jsonl*"), max_records=3)

    # a.jsonl has messages on lines 1, 2, 3, 5, 6 (line 4 is blank); b.jsonl.gz on lines 1 to 4.
    assert plan.messages == 9
    assert plan.passes == [
        [LineRange(a, 1, 5)],
        [LineRange(a, 5, 7), LineRange(b, 1, 2)],
        [LineRange(b, 2, 5)],
    ]
    everything = _read([LineRange(a), LineRange(b)])
    assert [m for part in plan.passes for m in _read(part)] == everything and len(everything) == 9
    # A reader cuts a pass into parts of about as many lines each, and reads every line once.
    parts = split_line_ranges(plan.passes[1] + plan.passes[2], pieces=4)
    assert parts == [LineRange(a, 5, 7), LineRange(b, 1, 2), LineRange(b, 2, 3), LineRange(b, 3, 5)]
    assert _read(parts) == _read(plan.passes[1] + plan.passes[2])
    assert split_line_ranges([LineRange(a)], pieces=4) == [LineRange(a)]  # no end known: read whole


def test_the_plan_knows_the_first_line_of_every_repeated_id(tmp_path, two_files):
    a, _ = two_files
    plan = plan_jsonl_passes(str(tmp_path / "*.jsonl*"), max_records=3)
    assert plan.first_copies == {
        "r-1": first_copy(Origin(source=f"file:{a}", offset=1)),
        "r-2": first_copy(Origin(source=f"file:{a}", offset=2)),
    }
    with pytest.raises(ValueError, match="max_records must be >= 1"):
        plan_jsonl_passes(str(tmp_path / "*.jsonl*"), max_records=0)


def _metrics(lake: str) -> dict[tuple, tuple]:
    sql = "SELECT window_start, slice_dimension, slice_value, responses, mean_confidence, needs_review_responses"
    return {row[:3]: row[3:] for row in connect_lake(lake).execute(f"{sql} FROM window_metrics").fetchall()}


def test_an_audit_in_passes_writes_the_lake_of_one_run(tmp_path, folder_or_bucket_lake):
    """The shipped sample traffic's first 150 lines (over 15 one-minute windows), then a gzipped file holding a
    copy of its first response and a malformed line, audited in passes of 35 lines and in one run. The passes
    write a local folder, or a bucket of a real S3-protocol server (`tests.support.s3_fixtures`), from which
    the windows that span passes are computed again."""
    sample = _sample(150)
    first_id = json.loads(sample[0])["response_id"]
    traffic = tmp_path / "traffic"
    traffic.mkdir()
    _write(traffic / "a.jsonl", sample)
    _write(traffic / "b.jsonl.gz", [b'{"response_id": "cut short', sample[0]])
    pattern = str(traffic / "*")
    one = run([f"--input={pattern}", f"--lake={tmp_path / 'one'}"], out=lambda _: None)
    lines = []
    lake = folder_or_bucket_lake
    in_passes = run([f"--input={pattern}", f"--lake={lake}", "--max_records_per_run=35"], out=lines.append)

    assert lines[0] == "passes         5 for 152 messages (at most 35 each)"
    assert lines[1:6] == [line for line in lines if line.startswith("pass ")]
    # Each pass writes the metrics of its part of a window: only the metrics rows written differ.
    assert replace(in_passes, rows_written={}) == replace(one, rows_written={}) and one.read == 152 and one.adds_up
    assert in_passes.rows_written["responses"] == one.rows_written["responses"] == one.audited
    rows_one, rows_passes = lake_rows(str(tmp_path / "one")), lake_rows(lake)
    assert rows_passes == rows_one
    # The copy in the last pass is dropped as a copy of the first line of the first pass.
    duplicates = [error for _, _, error in rows_passes["dead_letters"] if error.startswith("duplicate_response_id")]
    assert any(f"{first_id!r} was already read at file:{traffic / 'a.jsonl'} line 1" in e for e in duplicates)
    # Only the windows holding responses of several passes are computed again; they have the metrics of all
    # their responses, as in one run.
    passes = plan_jsonl_passes(pattern, max_records=35).passes
    pass_of = {origin: n for n, part in enumerate(passes) for origin in _read(part)}
    passes_of_window = defaultdict(set)
    audited = connect_lake(lake).execute("SELECT origin_source, origin_offset, window_start FROM responses")
    for source, line, window in audited.fetchall():
        passes_of_window[window].add(pass_of[source, line])
    spanning = sum(1 for seen in passes_of_window.values() if len(seen) > 1)
    assert 0 < spanning < len(passes_of_window)
    assert f"window metrics {spanning} windows span passes: computed again from the lake" in lines
    metrics_one, metrics_passes = _metrics(str(tmp_path / "one")), _metrics(lake)
    assert metrics_passes.keys() == metrics_one.keys()
    for key, (responses, confidence, review) in metrics_one.items():
        assert metrics_passes[key][0] == responses and metrics_passes[key][2] == review
        assert math.isclose(metrics_passes[key][1] or 0.0, confidence or 0.0, abs_tol=1e-9)


def test_the_cli_takes_the_pass_size_and_refuses_a_useless_one(tmp_path, capsys):
    traffic = _write(tmp_path / "traffic.jsonl", _sample(40))
    argv = ["audit", "--input", traffic, "--lake", str(tmp_path / "lake")]
    assert groundwatch([*argv, "--max-records-per-run", "0"]) == 2
    assert "--max-records-per-run must be >= 1, got 0" in capsys.readouterr().err
    assert groundwatch([*argv, "--max-records-per-run", "30"]) == 0
    out = capsys.readouterr().out
    assert "passes         2 for 40 messages (at most 30 each)" in out and "read                 40" in out


def _counted(p, audited: int, written: int) -> None:
    """A run whose counters say `audited` responses were audited and `written` responses rows reached the lake
    (what a runner that loses part of a run's output reports)."""

    def count(_):
        Metrics.counter(METRICS_NAMESPACE, "read").inc(audited)
        Metrics.counter(METRICS_NAMESPACE, "audited").inc(audited)
        Metrics.counter(LAKE_METRICS_NAMESPACE, "responses_rows").inc(written)

    _ = p | beam.Create([None]) | beam.Map(count)


def test_a_run_whose_lake_lacks_rows_is_run_again_and_then_refused():
    options = PipelineOptions(["--runner=FnApiRunner"])
    attempts, lines = [], []

    def lossy_once(p):
        attempts.append(p)
        _counted(p, audited=3, written=2 if len(attempts) == 1 else 3)

    counts = run_checked(options, lossy_once, "pass 2", lines.append)
    assert len(attempts) == 2 and counts.rows_written == {"responses": 3} and counts.lake_shortfall() is None
    assert lines == ["pass 2: the lake got 2 responses rows for 3 audited responses; running it again"]

    with pytest.raises(RuntimeError, match="the lake got 2 responses rows for 3 audited responses, twice"):
        run_checked(options, lambda p: _counted(p, audited=3, written=2), "the run", lambda _: None)


def test_a_healthy_run_wrote_a_row_for_every_response_and_dead_letter(tmp_path):
    traffic = _write(tmp_path / "traffic.jsonl", _sample(80))  # line 73 is a dead letter
    counts = run([f"--input={traffic}", f"--lake={tmp_path / 'lake'}"], out=lambda _: None)
    assert counts.rows_written["responses"] == counts.audited > 0
    assert counts.rows_written["dead_letters"] == counts.dead_lettered > 0
    assert counts.lake_shortfall() is None
    assert replace(counts, rows_written={"responses": counts.audited}).lake_shortfall() == (
        f"the lake got 0 dead_letters rows for {counts.dead_lettered} dead letters"
    )


@pytest.mark.parametrize(
    ("sizes", "pieces"),
    [([20_000], 16), ([20_000], 18), ([100], 18), ([700, 700, 700], 16), ([500] * 4, 18), ([5, 9000, 30], 20)],
)
def test_a_pass_is_cut_into_as_many_ranges_as_asked_of_about_as_many_lines(sizes, pieces):
    ranges, first = [], 1
    for number, size in enumerate(sizes):
        ranges.append(LineRange(f"/in/{number}.jsonl", first, first + size))
        first += 3  # a pass may start a file past its first line
    parts = split_line_ranges(ranges, pieces)
    assert len(parts) == pieces  # dealt round-robin to N subtasks, pieces a multiple of N: as many each
    for lines in ranges:  # every line of every range once, in order, cut into parts of as many lines, give or take one
        mine = [part for part in parts if part.path == lines.path]
        assert mine[0].first == lines.first and mine[-1].stop == lines.stop
        assert all(x.stop == y.first for x, y in zip(mine, mine[1:], strict=False))
        lengths = [part.stop - part.first for part in mine]
        assert min(lengths) > 0 and max(lengths) - min(lengths) <= 1, lengths


def test_more_files_than_pieces_keep_one_range_each():
    ranges = [LineRange(f"/in/{n}.jsonl", 1, 10) for n in range(5)] + [LineRange("/in/open.jsonl")]
    assert split_line_ranges(ranges, 4) == ranges


@pytest.mark.parametrize(
    ("argv", "pieces"),
    [
        ([], 16),  # the local runner: its own split of the work
        (["--parallelism=3"], 16),  # the local runner ignores a parallelism
        (["--runner=FlinkRunner", "--parallelism=2"], 16),
        (["--runner=FlinkRunner", "--parallelism=3"], 18),  # six each, where 16 would give 6, 5 and 5
        (["--runner=FlinkRunner", "--parallelism=20"], 20),  # none idle
        (["--runner=FlinkRunner"], 16),  # the runner's default parallelism is unknown here
    ],
)
def test_another_runner_cuts_a_pass_into_as_many_ranges_for_each_subtask(argv, pieces):
    assert _line_range_pieces(pipeline_options(argv)) == pieces
