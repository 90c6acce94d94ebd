"""Read JSONL files as raw messages: `(line_bytes, Origin("file:<path>", offset=<line number>))`.

    messages = p | "ReadJsonl" >> ReadJsonlMessages("traffic/*.jsonl")

Lines are kept as the original bytes (no decoding here: a line that is not
UTF-8 must reach the dead-letter table as it was). Blank lines carry no
message and are skipped. Line numbers start at 1. Compressed files (`.gz`, `.bz2`, ...)
are read by their extension. The lines are shuffled on to the next stages,
so the audit of one large file is spread over all workers.
"""

from __future__ import annotations

import os

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes

from schemas import Origin

__all__ = ["ReadJsonlMessages", "iter_jsonl_messages"]


def iter_jsonl_messages(stream, source: str):
    """`(bytes, Origin)` for every non-blank line of a binary stream."""
    number = 0
    # readline(), not iteration: Beam's decompressing stream is not iterable.
    while line := stream.readline():
        number += 1
        line = line.rstrip(b"\r\n")
        if line.strip():
            yield line, Origin(source=source, offset=number)


class _ReadLinesDoFn(beam.DoFn):
    def process(self, readable_file):
        path = readable_file.metadata.path
        with readable_file.open(compression_type=CompressionTypes.AUTO) as stream:
            yield from iter_jsonl_messages(stream, f"file:{path}")


class ReadJsonlMessages(beam.PTransform):
    """Every line of the files matching `pattern`, as raw bytes with the file and line it came from."""

    def __init__(self, pattern: str):
        super().__init__()
        if not pattern:
            raise ValueError("input pattern must be a non-empty path or glob")
        # Local paths are made absolute so every origin names its file unambiguously.
        self._pattern = pattern if "://" in pattern else os.path.abspath(pattern)

    def expand(self, pbegin):
        return (
            pbegin
            | "MatchFiles" >> fileio.MatchFiles(self._pattern)
            | "ReadMatches" >> fileio.ReadMatches()
            | "ReadLines" >> beam.ParDo(_ReadLinesDoFn())
            # A file is read whole by one worker; without a shuffle every later stage fused with the read would
            # run there too, so the audit of a large file would use one core (or one Dataflow worker).
            | "SpreadOverWorkers" >> beam.Reshuffle()
        )
