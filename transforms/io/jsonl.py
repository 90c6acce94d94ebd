"""Read JSONL files as raw messages: `(line_bytes, Origin("file:<path>", offset=<line number>))`.

    messages = p | "ReadJsonl" >> ReadJsonlMessages("traffic/*.jsonl")
    messages = p | "ReadJsonl" >> ReadJsonlMessages(ranges=[LineRange("/data/a.jsonl", first=1, stop=20001)])

Lines are kept as the original bytes (no decoding here: a line that is not
UTF-8 must reach the dead-letter table as it was). Blank lines (nothing but
whitespace: spaces, tabs, `\v`, `\f`, `\r`, after an optional UTF-8 byte-order
mark) carry no message: they are skipped and counted in `groundwatch/skipped_blank`,
so that the lines of the input are read + skipped blank. Line numbers start at 1.
Compressed files (`.gz`, `.bz2`, ...) are read by their extension; a `.gz` or
`.bz2` file that is not what its name says, or that ends early (a truncated
copy), raises `UnreadableInputError` naming the file, rather than giving the
lines before the break as if they were all. A file matched by a pattern is read by one worker
and its lines are shuffled on to the next stages, so the audit of one large file
is spread over all workers. Given line ranges instead (the plan of an audit,
see `pipelines.runner.passes`), only those lines are read, and the ranges are cut into
parts that are shuffled instead of the lines: each worker reads its own parts.
Line numbers and origins are the same as when the whole file is read.
"""

from __future__ import annotations

import bz2
import gzip
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import apache_beam as beam
from apache_beam import PCollection
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import PBegin

from schemas import Origin
from schemas.records import METRICS_NAMESPACE

__all__ = [
    "LINE_RANGES",
    "SKIPPED_BLANK_COUNTER",
    "LineRange",
    "LineStream",
    "ReadJsonlMessages",
    "UnreadableInputError",
    "absolute_pattern",
    "iter_jsonl_lines",
    "iter_jsonl_messages",
    "open_jsonl",
    "read_jsonl_lines",
    "split_line_ranges",
    "why_unreadable",
]

SKIPPED_BLANK_COUNTER = "skipped_blank"
"""Counter (`groundwatch` namespace) of the blank lines read: they are not messages, but they are input lines."""

_BOM = b"\xef\xbb\xbf"

# Beam's own decompressing reader ends quietly where a truncated file ends; Python's raise EOFError there.
# Each takes the raw stream Beam's file systems open (their types are not checked here).
_DECOMPRESSORS: dict[str, Callable[[Any], gzip.GzipFile | bz2.BZ2File]] = {
    CompressionTypes.GZIP: lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    CompressionTypes.BZIP2: lambda raw: bz2.BZ2File(raw, mode="rb"),
}
_SUFFIX = {CompressionTypes.GZIP: "gz", CompressionTypes.BZIP2: "bz2"}


class LineStream(Protocol):
    """A binary stream read line by line (or in chunks): a file, a decompressor, or Beam's decompressing
    stream."""

    def readline(self) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


class UnreadableInputError(ValueError):
    """An input file that cannot be read to its end (compressed data that is broken or truncated)."""


@dataclass(frozen=True)
class LineRange:
    """Lines `first` up to, not including, `stop` of one file (line numbers start at 1; `stop=None`: to the end)."""

    path: str
    first: int = 1
    stop: int | None = None


def iter_jsonl_lines(
    stream: LineStream, first: int = 1, stop: int | None = None, *, blank: Callable[[int], None] | None = None
) -> Iterator[tuple[int, bytes]]:
    """`(line number, bytes)` for every non-blank line of a binary stream, from line `first` up to `stop`;
    `blank(line number)` is called for each blank line in that range."""
    number = 0
    # readline(), not iteration: Beam's decompressing stream is not iterable.
    while (stop is None or number + 1 < stop) and (line := stream.readline()):
        number += 1
        if number < first:
            continue
        line = line.rstrip(b"\r\n")
        if line.removeprefix(_BOM).strip():
            yield number, line
        elif blank is not None:
            blank(number)


def iter_jsonl_messages(
    stream: LineStream,
    source: str,
    first: int = 1,
    stop: int | None = None,
    *,
    blank: Callable[[int], None] | None = None,
) -> Iterator[tuple[bytes, Origin]]:
    """`(bytes, Origin)` for every non-blank line of a binary stream (from line `first` up to `stop`)."""
    for number, line in iter_jsonl_lines(stream, first, stop, blank=blank):
        yield line, Origin(source=source, offset=number)


@contextmanager
def open_jsonl(path: str) -> Iterator[LineStream]:
    """A binary stream of the file's lines, decompressed by its extension (see the module docstring)."""
    decompressor = _DECOMPRESSORS.get(CompressionTypes.detect_compression_type(path))
    if decompressor is None:
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as stream:
            yield stream
        return
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        with decompressor(raw) as stream:
            yield stream


def read_jsonl_lines(
    path: str, first: int = 1, stop: int | None = None, *, blank: Callable[[int], None] | None = None
) -> Iterator[tuple[int, bytes]]:
    """`iter_jsonl_lines` over the file at `path`; broken compressed data raises `UnreadableInputError`."""
    kind = CompressionTypes.detect_compression_type(path)
    last = 0
    try:
        with open_jsonl(path) as stream:
            for last, line in iter_jsonl_lines(stream, first, stop, blank=blank):
                yield last, line
    except (EOFError, OSError, zlib.error) as e:
        # A decompressor's errors carry no errno; a file system's (missing file, permissions) do and pass on.
        if kind not in _DECOMPRESSORS or getattr(e, "errno", None) is not None:
            raise
        raise UnreadableInputError(why_unreadable(path, kind, e, last)) from None


def why_unreadable(path: str, kind: str, error: Exception, last: int) -> str:
    """Why compressed data of `kind` cannot be read past line `last` (0: before its first line)."""
    after = f"after line {last}" if last else "before its first line"
    if isinstance(error, EOFError):
        return (
            f"{path}: the {kind} data ends early {after} (the file is truncated: {error}); "
            "its remaining lines are missing, so it is not audited"
        )
    return f"{path}: not readable as {kind} ({error}) {after}; is it really a .{_SUFFIX[kind]} file?"


class _ReadLineRangeDoFn(beam.DoFn):
    def __init__(self) -> None:
        self._blank = Metrics.counter(METRICS_NAMESPACE, SKIPPED_BLANK_COUNTER)

    def process(self, lines: LineRange) -> Iterator[tuple[bytes, Origin]]:
        source = f"file:{lines.path}"
        for number, line in read_jsonl_lines(lines.path, lines.first, lines.stop, blank=lambda _: self._blank.inc()):
            yield line, Origin(source=source, offset=number)


def absolute_pattern(pattern: str) -> str:
    """A local path or glob made absolute, so every origin names its file unambiguously; a URL as it is."""
    return pattern if "://" in pattern else os.path.abspath(pattern)


LINE_RANGES = 16
"""How many ranges a reader cuts its line ranges into by default: each worker reads its share of them."""


def split_line_ranges(ranges: Sequence[LineRange], pieces: int) -> list[LineRange]:
    """The ranges cut into `pieces` ranges of as many lines each, give or take one, in order.

    Every range keeps at least one part, so more ranges than `pieces` stay as they are; a range without a
    `stop` (its length unknown) stays whole, and one shorter than its share is cut into single lines. The parts
    are shared out over the ranges by their lengths (largest remainder), so a reader of `pieces` a multiple of
    its workers deals each worker as many."""
    sizes = [lines.stop - lines.first if lines.stop is not None else 0 for lines in ranges]
    parts = _shares(sizes, pieces)
    out: list[LineRange] = []
    for lines, size, count in zip(ranges, sizes, parts, strict=True):
        if count == 1:  # a range without a stop too: its size is 0
            out.append(lines)
            continue
        cuts = [lines.first + size * k // count for k in range(count + 1)]
        out += [LineRange(lines.path, a, b) for a, b in zip(cuts, cuts[1:], strict=False)]
    return out


def _shares(sizes: Sequence[int], pieces: int) -> list[int]:
    """Parts of `pieces` for ranges of `sizes` lines: at least one each (one for an unknown size, 0), at most its
    size, the rest in proportion to size by largest remainder."""
    parts = [1] * len(sizes)
    spare, total = pieces - len(sizes), sum(sizes)
    if spare <= 0 or total == 0:
        return parts
    quotas = [spare * size / total for size in sizes]
    for i, quota in enumerate(quotas):
        parts[i] += int(quota)
    by_remainder = sorted(range(len(sizes)), key=lambda i: int(quotas[i]) - quotas[i])
    for i in by_remainder[: spare - sum(int(q) for q in quotas)]:
        parts[i] += 1
    return [min(count, max(1, size)) for count, size in zip(parts, sizes, strict=True)]


class ReadJsonlMessages(beam.PTransform):
    """Every line of the files matching `pattern`, or the lines of `ranges`, as raw bytes with the file and
    line each came from.

    A file matched by `pattern` is read whole by one worker and its lines are shuffled on, so that every
    later stage runs on all workers. Given `ranges`, the ranges are cut into `pieces` parts that are
    shuffled instead, and each worker reads the lines of its parts itself: nothing as large as the lines
    goes through the shuffle, and reading is spread over the workers too."""

    def __init__(
        self, pattern: str | None = None, *, ranges: Sequence[LineRange] | None = None, pieces: int = LINE_RANGES
    ):
        super().__init__()
        if ranges is None and not pattern:
            raise ValueError("input pattern must be a non-empty path or glob")
        self._pattern = absolute_pattern(pattern) if pattern else None
        self._ranges = None if ranges is None else split_line_ranges(ranges, pieces)

    def expand(self, pbegin: PBegin) -> PCollection:
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
