"""Reading JSONL files: every line is accounted for, and a broken compressed file is refused, never read in part."""

from __future__ import annotations

import bz2
import gzip
import io

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline
from apache_beam.testing.util import assert_that, equal_to

from pipelines.runner.passes import plan_jsonl_passes
from tests.support.audit_messages import message, raw
from transforms.ingest.parse import METRICS_NAMESPACE
from transforms.io.jsonl import (
    SKIPPED_BLANK_COUNTER,
    LineRange,
    ReadJsonlMessages,
    UnreadableInputError,
    iter_jsonl_lines,
    read_jsonl_lines,
)

BLANKS = [b"", b" ", b"\t", b"\x0b", b"\x0c", b"\r", b" \t\r", b"\xef\xbb\xbf", b"\xef\xbb\xbf  "]
"""Every kind of line that carries no message: empty, whitespace of each kind, a byte-order mark alone."""


def _lines(count: int = 2000) -> bytes:
    return b"".join(raw(message(f"r-{i}")) + b"\n" for i in range(count))


def test_blank_lines_are_reported_with_their_numbers_and_the_rest_kept_as_bytes():
    data = b"\n".join([b"{1}", *BLANKS, b"\xef\xbb\xbf{2}", b"{3}\r"]) + b"\n"
    blank: list[int] = []
    got = list(iter_jsonl_lines(io.BytesIO(data), blank=blank.append))
    assert got == [(1, b"{1}"), (len(BLANKS) + 2, b"\xef\xbb\xbf{2}"), (len(BLANKS) + 3, b"{3}")]
    assert blank == list(range(2, len(BLANKS) + 2))
    assert len(got) + len(blank) == data.count(b"\n")


def test_a_line_range_reports_only_its_own_blank_lines():
    data = b"{1}\n\n{3}\n\n\n{6}\n"
    blank: list[int] = []
    assert list(iter_jsonl_lines(io.BytesIO(data), 3, 6, blank=blank.append)) == [(3, b"{3}")]
    assert blank == [4, 5]


def test_reading_counts_blank_lines_so_read_plus_skipped_is_every_line(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [raw(message("a")), *BLANKS, raw(message("b")), b"", b" "]
    path.write_bytes(b"\n".join(lines) + b"\n")
    with BeamPipeline(runner="FnApiRunner") as p:
        messages = p | ReadJsonlMessages(str(path))
        assert_that(messages | beam.Map(lambda m: m[1].offset), equal_to([1, len(BLANKS) + 2]))
    query = MetricsFilter().with_namespace(METRICS_NAMESPACE).with_name(SKIPPED_BLANK_COUNTER)
    [counter] = p.result.metrics().query(query)["counters"]
    assert counter.committed == len(lines) - 2


def test_the_pass_plan_covers_blank_lines_at_the_end_of_a_file_and_files_of_blank_lines_only(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(b"\n" + raw(message("a")) + b"\n\n \n")
    b.write_bytes(b"\n\t\n")
    plan = plan_jsonl_passes(str(tmp_path / "*.jsonl"), max_records=10)
    assert plan.messages == 1
    assert plan.passes == [[LineRange(str(a), 1, 5), LineRange(str(b), 1, 3)]]


@pytest.mark.parametrize("suffix", ["gz", "bz2"])
def test_a_truncated_compressed_file_fails_naming_the_file_instead_of_ending_early(tmp_path, suffix):
    data = (gzip if suffix == "gz" else bz2).compress(_lines())
    path = tmp_path / f"traffic.jsonl.{suffix}"
    path.write_bytes(data)
    assert [n for n, _ in read_jsonl_lines(str(path))] == list(range(1, 2001))
    path.write_bytes(data[: len(data) // 2])
    # bzip2 decompresses by blocks of 900 kB: half of this file gives no line at all.
    ends = r"traffic\.jsonl\.\w+: the \w+ data ends early (after line \d+|before its first line) \(the file is trunc"
    with pytest.raises(UnreadableInputError, match=ends):
        list(read_jsonl_lines(str(path)))


def test_a_gz_file_that_is_not_gzip_fails_with_a_clear_error(tmp_path):
    path = tmp_path / "plain.jsonl.gz"
    path.write_bytes(_lines(3))
    with pytest.raises(UnreadableInputError, match=r"plain\.jsonl\.gz: not readable as gzip .*Not a gzipped file"):
        list(read_jsonl_lines(str(path)))
    assert issubclass(UnreadableInputError, ValueError)  # the CLI's exit 2 for bad input
    # A file system's error is not mistaken for broken gzip data.
    with pytest.raises(OSError) as caught:
        list(read_jsonl_lines(str(tmp_path / "missing.jsonl.gz")))
    assert not isinstance(caught.value, UnreadableInputError)
