"""A large bounded input audited in passes: each run of the local runner reads at most a fixed number of messages.

Beam's in-process runner (the FnApiRunner) keeps what a bounded run hands between its stages until the run
ends. Since each worker reads its own lines and writes its own lake rows, that is little (a JSONL run with two
worker processes peaked at 1.6 GiB for 40,000 responses and 1.9 GiB for 100,000), but it still grows with
the run, so `groundwatch audit` and `groundwatch monitor --until-caught-up` read at most
`--max-records-per-run` messages per run (a pass); `pipelines.runner.catch_up` plans the Kafka passes, this
module the JSONL ones. Every local JSONL input is read by its plan: on the local runner in one pass or more,
on another runner (Flink) in one pass, since only the local runner holds a run's data in memory.

    plan = plan_jsonl_passes("/data/traffic/*.jsonl", max_records=50_000)
    plan.passes[1]        # [LineRange("/data/traffic/a.jsonl", first=50001, stop=61234), LineRange(...b.jsonl)]
    plan.first_copies     # {"resp-7": first_copy(Origin("file:/data/traffic/a.jsonl", offset=3))}

One scan of the files before the first pass (about 11 microseconds a line) counts their lines, cuts
them into passes in file and line order, and finds the response ids that several lines carry, with
the line that carries each first. Every pass drops its duplicates against that list
(`ParseResponses(first_copies=...)`), so the passes together audit and dead-letter exactly what one run
would. Only the repeated ids are kept after the scan; during it, every id with its file and line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from apache_beam.io.filesystems import FileSystems

from schemas import Origin
from transforms.ingest.parse import first_copy, response_id_of
from transforms.io.jsonl import LineRange, absolute_pattern, read_jsonl_lines

__all__ = [
    "MAX_RECORDS_PER_RUN",
    "JsonlPlan",
    "ReadRange",
    "input_files",
    "plan_jsonl_passes",
    "read_by_sql",
    "read_ranges",
    "windows_across_passes",
]

MAX_RECORDS_PER_RUN = 50_000
"""Messages one pass reads at most by default. With two worker processes one JSONL run peaked at 1.6 GiB for
40,000 messages and 1.9 GiB for 100,000 (the window metrics and the runner's bookkeeping grow with a run);
a pass of 50,000 takes about 125 s on two cores, against about 5-10 s to start and end one."""


@dataclass(frozen=True)
class ReadRange:
    """Messages one pass read: offsets `first` up to, not including, `stop` (None: to the end) of one source
    (`file:<path>`, whose offsets are line numbers, or a Kafka topic's partition)."""

    source: str
    partition: int | None
    first: int
    stop: int | None


def windows_across_passes(passes: Sequence[Sequence[ReadRange]]) -> tuple[str, list]:
    """A filter on the lake's `responses` (SQL with its parameters, for `recompute_window_metrics`) for the windows
    holding responses of more than one pass: each pass wrote the metrics of its own part of such a window, so
    only these need computing again. In traffic logged in time order, they are the few windows at the passes'
    edges. A message read by two passes (a Kafka pass whose commit failed is read again) counts for both."""
    ranges, params = [], []
    for number, part in enumerate(passes):
        for read in part:
            ranges.append("(?, ?, ?, ?, ?)")
            params += [*_bounds(read), number]
    if not ranges:
        return "false", []
    sql = (
        "window_start IN (SELECT r.window_start FROM responses AS r JOIN (VALUES "
        + ", ".join(ranges)
        + ") AS p(source, part, first_offset, stop_offset, pass) ON r.origin_source = p.source"
        " AND r.origin_partition IS NOT DISTINCT FROM p.part"
        " AND r.origin_offset >= p.first_offset AND r.origin_offset < p.stop_offset"
        " GROUP BY r.window_start HAVING count(DISTINCT p.pass) > 1)"
    )
    return sql, params


def read_by_sql(passes: Sequence[Sequence[ReadRange]]) -> tuple[str, list]:
    """A filter on the lake's `responses` rows (SQL with its parameters) keeping those the passes read, by their
    origin; a row another run read from the same lines or offsets matches too."""
    one = "(origin_source = ? AND origin_partition IS NOT DISTINCT FROM ? AND ? <= origin_offset AND origin_offset < ?)"
    reads = [read for part in passes for read in part]
    if not reads:
        return "false", []
    return f"({' OR '.join([one] * len(reads))})", [value for read in reads for value in _bounds(read)]


def _bounds(read: ReadRange) -> list:
    """A range's source, partition, first offset and stop (a large one for `None`: to the end)."""
    return [read.source, read.partition, read.first, read.stop if read.stop is not None else 2**62]


@dataclass(frozen=True)
class JsonlPlan:
    """The passes of a JSONL audit (line ranges, in file and line order) and the ids repeated across the input."""

    messages: int
    passes: list[list[LineRange]]
    first_copies: dict[str, tuple[tuple, str]]


def input_files(pattern: str) -> list[str]:
    """The files `pattern` (a local glob or a URL Beam's file systems know) matches, sorted."""
    return sorted(m.path for m in FileSystems.match([absolute_pattern(pattern)])[0].metadata_list)


def read_ranges(passes: Sequence[Sequence[LineRange]]) -> list[list[ReadRange]]:
    """The passes' line ranges as the lake's rows name what they read (`file:<path>`, line numbers)."""
    return [[ReadRange(f"file:{lines.path}", None, lines.first, lines.stop) for lines in part] for part in passes]


def plan_jsonl_passes(pattern: str, max_records: int) -> JsonlPlan:
    """Scan the JSONL files of `pattern` once: passes of at most `max_records` non-blank lines each, and the
    first copy of every response id that more than one line carries (as `ParseResponses` would find it)."""
    if max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")
    paths = input_files(pattern)
    passes, current, taken, messages = [], [], 0, 0
    first_seen: dict[str, tuple[int, int]] = {}  # response id -> (file index, line) of its first copy
    repeated: set[str] = set()
    last = 0

    def saw_blank(number: int) -> None:
        nonlocal last
        last = number

    for index, path in enumerate(paths):
        # The ranges cover every line, blank ones too, so the passes count each blank line once.
        first, last = 1, 0
        for number, line in read_jsonl_lines(path, blank=saw_blank):
            if taken == max_records:
                if number > first:
                    current.append(LineRange(path, first, number))
                passes.append(current)
                current, taken, first = [], 0, number
            taken, messages, last = taken + 1, messages + 1, number
            response_id = response_id_of(line)
            if response_id is None:
                continue
            if response_id in first_seen:
                repeated.add(response_id)
            else:
                first_seen[response_id] = (index, number)
        if last >= first:
            current.append(LineRange(path, first, last + 1))
    if current:
        passes.append(current)
    first_copies = {}
    for response_id in sorted(repeated):
        index, number = first_seen[response_id]
        first_copies[response_id] = first_copy(Origin(source=f"file:{paths[index]}", offset=number))
    return JsonlPlan(messages=messages, passes=passes, first_copies=first_copies)
