"""Late data: which messages a stream would drop, and their dead letters (counted, bytes kept)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from pipelines.runner.counts import counts_from_result
from schemas import Origin
from tests.support.prism_fixtures import needs_prism, prism_options
from transforms.ingest.late import LATE_REASON, DeadLetterLateMessages, message_late_reason
from transforms.ingest.windows import late_reason

TEN_AM = datetime(2026, 11, 29, 10, 0, 5, tzinfo=UTC).timestamp()  # in the window [10:00:00, 10:01:00)
WINDOW_END = datetime(2026, 11, 29, 10, 1, tzinfo=UTC).timestamp()


def test_on_time_until_the_window_plus_lateness_closes():
    # The window's last instant is its end minus 1 ms; with 30 s lateness it closes at 10:01:29.999.
    assert late_reason(TEN_AM, WINDOW_END + 29.999, 60, 30) is None
    assert late_reason(TEN_AM, WINDOW_END - 10, 60, 0) is None
    reason = late_reason(TEN_AM, WINDOW_END + 30, 60, 30)
    assert reason is not None and reason.startswith("late: ")
    assert "2026-11-29T10:01:00+00:00" in reason and "30s allowed lateness" in reason


def test_the_message_timestamp_decides_not_the_kafka_time():
    iso = json.dumps({"response_id": "r", "timestamp": "2026-11-29T10:00:05Z"}).encode()
    epoch_ms = json.dumps({"response_id": "r", "timestamp": int(TEN_AM * 1000)}).encode()
    for raw in (iso, epoch_ms):
        assert message_late_reason(raw, WINDOW_END + 1, window_seconds=60, allowed_lateness_seconds=0)
        assert message_late_reason(raw, WINDOW_END - 1, window_seconds=60, allowed_lateness_seconds=0) is None


def test_a_message_without_a_readable_timestamp_is_left_to_the_parser():
    for raw in (b"not json", b'{"timestamp": "yesterday"}', b'{"timestamp": "2026-11-29T10:00:05"}', b"{}"):
        assert message_late_reason(raw, WINDOW_END + 10**6, window_seconds=60, allowed_lateness_seconds=0) is None


def test_late_messages_become_dead_letters_counted_as_read_and_dead_lettered():
    late = [
        (b'{"a": 1}', Origin(source="kafka:t", partition=0, offset=7), "late: one"),
        (b'{"a": 2}', Origin(source="kafka:t", partition=1, offset=3), "late: two"),
    ]
    now = datetime(2026, 11, 29, 12, tzinfo=UTC)
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        rows = p | beam.Create(late) | DeadLetterLateMessages(clock=lambda: now)
        found = rows | beam.Map(lambda r: (r.raw_payload, r.origin_partition, r.origin_offset, r.error, r.stage))
        assert_that(
            found,
            equal_to([(b'{"a": 1}', 0, 7, "late: one", "window"), (b'{"a": 2}', 1, 3, "late: two", "window")]),
        )
    counts = counts_from_result(p.result)
    assert (counts.read, counts.dead_lettered, counts.dead_letter_reasons) == (2, 2, {LATE_REASON: 2})
    assert counts.adds_up
    assert p.result.metrics().query(MetricsFilter().with_name(LATE_REASON))["counters"]


_AUDITED = {"on-time": TEN_AM + 70, "late": WINDOW_END + 200}  # 10:04:20 for the late one: window [10:04, 10:05)


def _audited_at(name: str) -> datetime:
    return datetime.fromtimestamp(_AUDITED[name], UTC)


class _WithWindowStart(beam.DoFn):
    def process(self, name, window=beam.DoFn.WindowParam):
        yield name, window.start.to_utc_datetime(has_tz=True).strftime("%H:%M")


@pytest.mark.prism
@needs_prism
def test_a_late_pane_joins_the_window_open_when_it_was_audited():
    """What a grouping emits in a late pane moves to the window of its audit time (so it is written with that
    window's lake files, not in files of its own); an on-time pane keeps its window."""
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.transforms.window import FixedWindows, TimestampedValue
    from apache_beam.utils.timestamp import Duration

    from transforms.ingest.windows import LatePanesJoinOpenWindows

    stream = (
        TestStream()
        .add_elements([TimestampedValue(("a", "on-time"), TEN_AM)])
        .advance_watermark_to(WINDOW_END + 30)  # [10:00, 10:01) has fired
        .add_elements([TimestampedValue(("b", "late"), TEN_AM)])  # late, within the lateness
        .advance_watermark_to_infinity()
    )
    with beam.Pipeline(options=prism_options("--streaming")) as p:
        grouped = (
            p
            | stream
            | beam.WindowInto(FixedWindows(60), allowed_lateness=Duration(seconds=3600))
            | beam.GroupByKey()
            | beam.Map(lambda kv: kv[1][0])
        )
        moved = grouped | LatePanesJoinOpenWindows(60, allowed_lateness_seconds=3600, time_of=_audited_at)
        assert_that(moved | beam.ParDo(_WithWindowStart()), equal_to([("on-time", "10:00"), ("late", "10:04")]))
