"""A Kafka catch-up in passes: each bounded run reads at most a fixed number of messages.

    targets = end_offsets(connection, "rag.responses")                       # where the catch-up ends
    starts = start_offsets(connection, "rag.responses", "groundwatch", "committed")
    plan_pass(starts, targets, max_records=50_000)   # {partition: (start, stop)}, 50,000 offsets at most

Beam's in-process runner holds a bounded run's data in memory until the run ends (with two worker
processes, 2.0-2.1 GiB at the peak for a backlog of 40,000), so one run over a much larger backlog would
exhaust the machine. `groundwatch monitor --until-caught-up` therefore plans passes: each
reads at most `--max-records-per-run` offsets from the group's committed ones, writes the lake and
commits, and the next pass starts from those commits. The target is the end offsets seen before the
first pass, so the catch-up ends even while producers keep writing.

Between passes the usual at-least-once rules hold (`transforms.io.kafka.commit`): a pass commits only what
its lake files hold. A response id repeated in two passes is audited in both, and the lake views count
it once. A window whose messages fall in two passes gets `window_metrics` rows from each, each with only
its pass's responses; so after the last pass, the metrics of every window with responses of more than one
pass are computed again from the lake's rows (`refresh_window_metrics`, see `pipelines.runner.window_metrics`),
and the views keep those: they hold the most responses, and are the newest. So are, after any catch-up, the
windows it read that hold a reviewed response (`refresh_reviewed_windows`): the passes' rows count no review.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import Any

from pipelines.runner.passes import ReadRange, read_by_sql, windows_across_passes
from pipelines.runner.window_metrics import recompute_reviewed_windows, recompute_window_metrics
from transforms.io.kafka.client import consumer, kafka_source, resolve_start_offset

__all__ = [
    "after_pass",
    "backlog",
    "committed_offsets",
    "end_offsets",
    "plan_pass",
    "refresh_reviewed_windows",
    "refresh_window_metrics",
    "start_offsets",
]


def _partitions(client, topic: str) -> list:
    from kafka import TopicPartition

    return [TopicPartition(topic, p) for p in sorted(client.partitions_for_topic(topic) or ())]


def end_offsets(connection: Mapping[str, Any], topic: str) -> dict[int, int]:
    """The end offset of every partition of `topic` now (of committed transactions, as the reader reads)."""
    with closing(consumer(connection, None)) as client:
        return {tp.partition: offset for tp, offset in client.end_offsets(_partitions(client, topic)).items()}


def start_offsets(connection: Mapping[str, Any], topic: str, group_id: str, start_from: str) -> dict[int, int]:
    """Where a bounded read of `group_id` would start on each partition now (`resolve_start_offset`)."""
    with closing(consumer(connection, group_id)) as client:
        tps = _partitions(client, topic)
        begins, ends = client.beginning_offsets(tps), client.end_offsets(tps)
        committed = {tp: client.committed(tp) for tp in tps}
        return {tp.partition: resolve_start_offset(committed[tp], begins[tp], ends[tp], start_from) for tp in tps}


def committed_offsets(connection: Mapping[str, Any], topic: str, group_id: str) -> dict[int, int | None]:
    """The group's committed offset of every partition of `topic` (None where it has none)."""
    with closing(consumer(connection, group_id)) as client:
        return {tp.partition: client.committed(tp) for tp in _partitions(client, topic)}


def after_pass(plan: Mapping[int, tuple[int, int]], committed: Mapping[int, int | None]) -> dict[int, int]:
    """Where each partition of a pass stands after it: the group's commit when it lies within the pass's
    range (the pass committed that far), else the range's start (nothing of it was committed: read it again).
    A commit outside the range is someone else's (an older run's), not this pass's progress."""
    position = {}
    for partition, (start, stop) in plan.items():
        offset = committed.get(partition)
        position[partition] = offset if offset is not None and start <= offset <= stop else start
    return position


def backlog(starts: Mapping[int, int], targets: Mapping[int, int]) -> int:
    """Offsets left between the starts and the targets (a partition already past its target counts none)."""
    return sum(max(0, stop - starts.get(p, stop)) for p, stop in targets.items())


def plan_pass(starts: Mapping[int, int], targets: Mapping[int, int], max_records: int) -> dict[int, tuple[int, int]]:
    """The offset range of each partition behind its target for one pass of at most `max_records` offsets.

    The budget is shared evenly; a partition with less left than its share takes only what it has and
    leaves the rest to the others (the partitions with the least left are served first).
    """
    if max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")
    left = {p: stop - starts.get(p, stop) for p, stop in targets.items() if stop > starts.get(p, stop)}
    plan, budget = {}, max_records
    for i, p in enumerate(sorted(left, key=lambda q: (left[q], q))):
        take = min(left[p], -(-budget // (len(left) - i)))  # ceiling: the budget is used up, never exceeded
        if take:
            plan[p] = (starts[p], starts[p] + take)
        budget -= take
    return plan


def refresh_window_metrics(lake_dir: str, topic: str, plans: Sequence[Mapping[int, tuple[int, int]]]) -> int:
    """Compute again the window metrics of the windows holding responses of more than one of the passes `plans`
    ({partition: (start, stop)} offsets of `topic` each), see `pipelines.runner.window_metrics`; return how many
    windows."""
    return recompute_window_metrics(lake_dir, *windows_across_passes(_read_ranges(topic, plans)))


def refresh_reviewed_windows(lake_dir: str, topic: str, plans: Sequence[Mapping[int, tuple[int, int]]]) -> int:
    """Compute again the window metrics of the windows holding responses the passes `plans` read and a reviewed
    response (`pipelines.runner.window_metrics.recompute_reviewed_windows`); return how many windows."""
    return recompute_reviewed_windows(lake_dir, *read_by_sql(_read_ranges(topic, plans)))


def _read_ranges(topic: str, plans: Sequence[Mapping[int, tuple[int, int]]]) -> list[list[ReadRange]]:
    return [
        [ReadRange(kafka_source(topic), p, start, stop) for p, (start, stop) in sorted(plan.items())] for plan in plans
    ]
