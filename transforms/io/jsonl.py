"""Read JSONL files as raw messages: `(line_bytes, Origin("file:<path>", offset=<line number>))`.

    messages = p | "ReadJsonl" >> ReadJsonlMessages("traffic/*.jsonl")
    messages = p | "ReadJsonl" >> ReadJsonlMessages(ranges=[LineRange("/data/a.jsonl", first=1, stop=20001)])

Lines are kept as the original bytes (no decoding here: a line that is not
UTF-8 must reach the dead-letter table as it was). Blank lines carry no
message and are skipped. Line numbers start at 1. Compressed files (`.gz`, `.bz2`, ...)
are read by their extension. A file matched by a pattern is read by one worker
and its lines are shuffled on to the next stages, so the audit of one large file
is spread over all workers. Given line ranges instead (the plan of an audit,
see `pipelines.runner.passes`), only those lines are read, and the ranges are cut into
parts that are shuffled instead of the lines: each worker reads its own parts.
Line numbers and origins are the same as when the whole file is read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from schemas import Origin

__all__ = [
    "LineRange",
    "ReadJsonlMessages",
    "absolute_pattern",
    "iter_jsonl_lines",
    "iter_jsonl_messages",
    "split_line_ranges",
]


@dataclass(frozen=True)
class LineRange:
    """Lines `first` up to, not including, `stop` of one file (line numbers start at 1; `stop=None`: to the end)."""

    path: str
    first: int = 1
    stop: int | None = None


def iter_jsonl_lines(stream, first: int = 1, stop: int | None = None):
    """`(line number, bytes)` for every non-blank line of a binary stream, from line `first` up to `stop`."""
    number = 0
    # readline(), not iteration: Beam's decompressing stream is not iterable.
    while (stop is None or number + 1 < stop) and (line := stream.readline()):
        number += 1
        line = line.rstrip(b"\r\n")
        if number >= first and line.strip():
            yield number, line


def iter_jsonl_messages(stream, source: str, first: int = 1, stop: int | None = None):
    """`(bytes, Origin)` for every non-blank line of a binary stream (from line `first` up to `stop`)."""
    for number, line in iter_jsonl_lines(stream, first, stop):
        yield line, Origin(source=source, offset=number)


class _ReadLineRangeDoFn(beam.DoFn):
    def process(self, lines: LineRange):
        with FileSystems.open(lines.path, compression_type=CompressionTypes.AUTO) as stream:
            yield from iter_jsonl_messages(stream, f"file:{lines.path}", lines.first, lines.stop)


def absolute_pattern(pattern: str) -> str:
    """A local path or glob made absolute, so every origin names its file unambiguously; a URL as it is."""
    return pattern if "://" in pattern else os.path.abspath(pattern)


def split_line_ranges(ranges: Sequence[LineRange], pieces: int) -> list[LineRange]:
    """The ranges cut into about `pieces` ranges of about as many lines each, in order (a range without a
    `stop` stays whole)."""
    sizes = [lines.stop - lines.first if lines.stop is not None else 0 for lines in ranges]
    total = sum(sizes)
    out = []
    for lines, size in zip(ranges, sizes, strict=True):
        parts = max(1, round(pieces * size / total)) if total else 1
        if parts == 1:
            out.append(lines)
            continue
        step = -(-size // parts)  # ceiling
        out += [LineRange(lines.path, k, min(k + step, lines.stop)) for k in range(lines.first, lines.stop, step)]
    return out


class ReadJsonlMessages(beam.PTransform):
    """Every line of the files matching `pattern`, or the lines of `ranges`, as raw bytes with the file and
    line each came from.

    A file matched by `pattern` is read whole by one worker and its lines are shuffled on, so that every
    later stage runs on all workers. Given `ranges`, the ranges are cut into `pieces` parts that are
    shuffled instead, and each worker reads the lines of its parts itself: nothing as large as the lines
    goes through the shuffle, and reading is spread over the workers too."""

    def __init__(self, pattern: str | None = None, *, ranges: Sequence[LineRange] | None = None, pieces: int = 16):
        super().__init__()
        if ranges is None and not pattern:
            raise ValueError("input pattern must be a non-empty path or glob")
        self._pattern = absolute_pattern(pattern) if pattern else None
        self._ranges = None if ranges is None else split_line_ranges(ranges, pieces)

    def expand(self, pbegin):
        if self._ranges is not None:
            # Create shuffles its elements (the parts) over the workers; the read is fused with what follows.
            return pbegin | "LineRanges" >> beam.Create(self._ranges) | "ReadLines" >> beam.ParDo(_ReadLineRangeDoFn())
        return (
            pbegin
            | "MatchFiles" >> fileio.MatchFiles(self._pattern)
            | "WholeFiles" >> beam.Map(lambda metadata: LineRange(metadata.path))
            | "ReadLines" >> beam.ParDo(_ReadLineRangeDoFn())
            # A file is read whole by one worker; without a shuffle every later stage fused with the read would
            # run there too, so the audit of a large file would use one core (or one Dataflow worker).
            | "SpreadOverWorkers" >> beam.Reshuffle()
        )
