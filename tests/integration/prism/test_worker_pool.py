"""Local Prism with SDK worker processes (`pipelines.runner.worker_pool`), and the stream's dedupe after the audit.

- stages in their own environment run in a process of their own, and the metrics of both processes reach
  the job intact (Prism keeps one short-id table per job: without disjoint ids it panics or mixes them);
- each audit lane runs in a process of its own;
- a stream with its audit in two lanes (three worker processes) audits each response id once per window,
  dead-letters the other copies (also one arriving after its window closed), and its counts add up.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PortableOptions
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.transforms.window import TimestampedValue

from dashboards.views import connect_lake
from pipelines.runner.audit_graph import build_pipeline, lane_of
from pipelines.runner.counts import counts_from_result
from pipelines.runner.worker_pool import local_audit_lanes, separate_environment, start_worker_pool
from schemas import Origin, ParsedResponse
from tests.support.audit_messages import message, raw
from tests.support.prism_fixtures import NEEDS_PRISM, prism_options
from tests.support.scripts import ROOT
from transforms.ingest.parse import parse_message

pytestmark = NEEDS_PRISM


@pytest.fixture(autouse=True)
def _tests_importable_by_workers(monkeypatch):
    """The worker processes unpickle this module's functions by reference: let them import it."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _on_worker_processes(argv: list[str]):
    """Options for Prism with its SDK workers served by a fresh pool; returns (options, stop)."""
    options = prism_options(*argv)
    address, stop = start_worker_pool(options)
    portable = options.view_as(PortableOptions)
    portable.environment_type, portable.environment_config = "EXTERNAL", address
    return options, stop


class _CountedPid(beam.DoFn):
    """Counts and measures every element, and keys it with the process that handled it."""

    def __init__(self, name: str):
        self._name = name

    def setup(self):
        self._count = Metrics.counter("worker_pool_test", f"{self._name}_elements")
        self._values = Metrics.distribution("worker_pool_test", f"{self._name}_values")

    def process(self, element):
        value = element[0] if isinstance(element, tuple) else element
        self._count.inc()
        self._values.update(value)
        yield value, os.getpid()


def _with_pid(element, stage: str) -> tuple[str, int]:
    return stage, os.getpid()


def _processes(pairs: list[tuple[str, int]], test_pid: int) -> tuple[list[str], int, bool, bool]:
    """(the stages, how many processes ran them, whether each stage ran in one process, whether the test's did)."""
    pids = {pid for _, pid in pairs}
    stages = sorted({stage for stage, _ in pairs})
    one_each = all(len({pid for s, pid in pairs if s == stage}) == 1 for stage in stages)
    return stages, len(pids), one_each, test_pid in pids


def test_a_stream_has_one_audit_lane_per_core_and_at_most_four():
    assert [local_audit_lanes(cores) for cores in (1, 2, 3, 16)] == [1, 2, 3, 4]


def test_each_audit_lane_runs_in_a_process_of_its_own():
    options, stop = _on_worker_processes([])
    try:
        with beam.Pipeline(options=options) as p:
            numbers = p | beam.Create(range(100))
            stages = [numbers | "Default" >> beam.Map(_with_pid, "default")]
            for lane, part in enumerate(numbers | beam.Partition(lambda n, lanes: n % lanes, 2)):
                stages.append(part | f"Lane{lane}" >> separate_environment(beam.Map(_with_pid, f"lane {lane}"), lane))
            where = stages | beam.Flatten() | beam.Distinct() | beam.combiners.ToList()
            assert_that(
                where | beam.Map(_processes, os.getpid()),
                equal_to([(["default", "lane 0", "lane 1"], 3, True, False)]),
            )
    finally:
        stop()


def _environments(p: beam.Pipeline, name_part: str) -> set[str]:
    """The environments of the pipeline's transforms whose name holds `name_part`."""
    transforms = p.to_runner_api().components.transforms.values()
    return {t.environment_id for t in transforms if name_part in t.unique_name and t.environment_id}


def _where(joined, test_pid: int) -> tuple[bool, bool]:
    """(the two stages ran in different processes, neither in the test's own)."""
    _, pids = joined
    default, separate = pids["default"][0], pids["separate"][0]
    return default != separate, test_pid not in (default, separate)


def test_a_separate_environment_runs_in_its_own_process_with_its_metrics_intact():
    options, stop = _on_worker_processes([])
    try:
        with beam.Pipeline(options=options) as p:
            first = p | beam.Create(range(300)) | "Default" >> beam.ParDo(_CountedPid("default"))
            second = first | "Separate" >> separate_environment(beam.ParDo(_CountedPid("separate")))
            where = (
                {"default": first, "separate": second}
                | beam.CoGroupByKey()
                | beam.Map(_where, os.getpid())
                | beam.combiners.Count.PerElement()
            )
            assert_that(where, equal_to([((True, True), 300)]))
    finally:
        stop()
    metrics = p.result.metrics().query(MetricsFilter().with_namespace("worker_pool_test"))
    counters = {m.key.metric.name: m.committed for m in metrics["counters"]}
    values = {m.key.metric.name: (m.committed.count, m.committed.sum) for m in metrics["distributions"]}
    assert counters == {"default_elements": 300, "separate_elements": 300}
    assert values == {"default_values": (300, sum(range(300))), "separate_values": (300, sum(range(300)))}


WINDOW_START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC).timestamp()


def _kafka(offset: int, partition: int = 0) -> Origin:
    return Origin(source="kafka:rag.responses", partition=partition, offset=offset)


def test_a_stream_with_its_audit_in_two_lanes_audits_each_response_once(tmp_path):
    """Duplicates are dropped after the audit (per window, when it closes): one copy audited, the others dead
    letters, including a copy that arrives after the window closed (within the allowed lateness)."""
    first, again, other = raw(message("dup")), raw(message("dup", answer="A copy.")), raw(message("other"))
    at = WINDOW_START + 30  # the messages say 09:00:30: window [09:00, 09:01)
    stream = (
        TestStream()
        .add_elements([TimestampedValue((again, _kafka(9)), at), TimestampedValue((first, _kafka(4)), at)])
        .add_elements([TimestampedValue((other, _kafka(5, partition=1)), at)])
        .advance_watermark_to(WINDOW_START + 90)  # the window has closed and fired
        .add_elements([TimestampedValue((first, _kafka(12)), at)])  # a late copy, within the lateness
        .advance_watermark_to_infinity()
    )
    lanes = {lane_of(ParsedResponse(response=parse_message(m), origin=_kafka(0)), 2) for m in (first, other)}
    assert lanes == {0, 1}, "the two ids take different audit lanes"
    lake = tmp_path / "lake"
    options, stop = _on_worker_processes(["--streaming", f"--lake={lake}", "--allowed_lateness_seconds=3600"])
    try:
        p = beam.Pipeline(options=options)
        outputs = build_pipeline(p, options, source=p | stream, audit_lanes=2)
        # Each lane's stages share one environment, apart from the other lane's and from the rest of the graph.
        lane0, lane1 = (_environments(p, f"(lane {lane})") for lane in (0, 1))
        rest = _environments(p, "DropDuplicateResponses")
        assert len(lane0) == len(lane1) == len(rest) == 1 and len(lane0 | lane1 | rest) == 3
        kept = outputs["audited"] | beam.Map(lambda a: (a.response_id, a.origin.offset))
        assert_that(kept, equal_to([("dup", 4), ("other", 5)]), label="CheckAudited")
        result = p.run()
        result.wait_until_finish()
    finally:
        stop()
    counts = counts_from_result(result)
    assert (counts.read, counts.audited, counts.dead_lettered) == (4, 2, 2)
    assert counts.adds_up
    con = connect_lake(str(lake))
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 2
    dead = con.execute("SELECT origin_offset, error FROM dead_letters ORDER BY origin_offset").fetchall()
    assert [offset for offset, _ in dead] == [9, 12]
    assert all(error.startswith("duplicate_response_id") for _, error in dead)
