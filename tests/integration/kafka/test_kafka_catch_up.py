"""A Kafka catch-up in passes (`groundwatch monitor --until-caught-up --max-records-per-run N`).

The plan of a pass shares its budget among the partitions behind; the passes together read the backlog
exactly once; against a real broker, every message is accounted for once, the group ends committed, and
the window metrics, computed again from the lake after the passes, are those of one run.
"""

from __future__ import annotations

import random

import pytest

from dashboards.views import connect_lake
from pipelines.monitor import run
from pipelines.produce import generated_messages, produce_messages
from pipelines.runner.catch_up import after_pass, backlog, plan_pass
from pipelines.traffic.synthetic import DEFAULT_START
from tests.support.kafka_fixtures import (
    assert_accounted_once,
    committed_offsets,
    expected_fates,
    monitor_argv,
    offsets_by_value,
)


@pytest.mark.parametrize(
    ("starts", "targets", "budget", "plan"),
    [
        ({0: 0, 1: 0}, {0: 100, 1: 100}, 50, {0: (0, 25), 1: (0, 25)}),
        # Partition 0 has 1 left: it takes it, the other two share the remaining 9 (5 and 4).
        ({0: 10, 1: 0, 2: 0}, {0: 11, 1: 100, 2: 100}, 10, {0: (10, 11), 1: (0, 5), 2: (0, 4)}),
        ({0: 0, 1: 0, 2: 0}, {0: 100, 1: 100, 2: 100}, 2, {0: (0, 1), 1: (0, 1)}),
        ({0: 0}, {0: 30}, 100, {0: (0, 30)}),
        ({0: 5, 1: 7}, {0: 5, 1: 7}, 100, {}),  # caught up
        ({0: 9}, {0: 5}, 100, {}),  # past the target (a commit after the targets were taken)
    ],
)
def test_a_pass_shares_its_budget_among_the_partitions_behind(starts, targets, budget, plan):
    assert plan_pass(starts, targets, budget) == plan


def test_passes_read_the_backlog_once_each_within_the_budget():
    rng = random.Random(3)
    for _ in range(200):
        targets = {p: rng.randrange(0, 500) for p in range(rng.randrange(1, 6))}
        starts = {p: rng.randrange(0, end + 1) for p, end in targets.items()}
        budget, read, first = rng.randrange(1, 300), {p: [] for p in targets}, dict(starts)
        while backlog(starts, targets):
            plan = plan_pass(starts, targets, budget)
            assert 0 < sum(stop - start for start, stop in plan.values()) <= budget
            for p, (start, stop) in plan.items():
                assert start == starts[p] and stop <= targets[p]
                read[p].extend(range(start, stop))
                starts[p] = stop
        assert all(read[p] == list(range(first[p], targets[p])) for p in targets)


@pytest.mark.parametrize(
    ("committed", "position"),
    [
        (150, 150),  # the pass committed part of its range
        (200, 200),  # all of it
        (None, 100),  # nothing: its range is read again
        (40, 100),  # an older run's commit, below the range: not this pass's progress
        (900, 100),  # someone else's, beyond the range
    ],
)
def test_where_a_partition_stands_after_a_pass(committed, position):
    assert after_pass({0: (100, 200)}, {0: committed}) == {0: position}


def test_a_pass_needs_a_budget():
    with pytest.raises(ValueError, match="max_records must be >= 1"):
        plan_pass({0: 0}, {0: 10}, 0)


@pytest.mark.kafka
def test_a_catch_up_in_passes_accounts_for_every_message_once(
    kafka_bootstrap, new_topic, tmp_path, folder_or_bucket_lake
):  # noqa: F811
    """The passes write a local folder, or a bucket of a real S3-protocol server (tests.support.s3_fixtures):
    each pass's commit reads its rows back from there, and the windows spanning passes are computed from it."""
    topic = new_topic(partitions=2)
    messages = generated_messages(300, seed=13, malformed_fraction=0.05, start=DEFAULT_START)
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == 300
    produced = offsets_by_value(kafka_bootstrap, topic)
    lake = folder_or_bucket_lake
    lines: list[str] = []

    counts = run(monitor_argv(kafka_bootstrap, topic, lake, "--max_records_per_run=100"), out=lines.append)
    assert "passes         3 (at most 100 messages each)" in lines
    assert [line for line in lines if line.startswith("pass ")] == [
        "pass 1         100 of 300 messages left",
        "pass 2         100 of 200 messages left",
        "pass 3         100 of 100 messages left",
    ]
    assert_accounted_once(lake, topic, produced, expected_fates(messages, 1.0), counts)
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, 2)
    assert committed == ends

    # Every window's metrics hold all its responses, as one run over the same messages computes them.
    one_run = tmp_path / "one-run"
    run(monitor_argv(kafka_bootstrap, topic, one_run, f"--kafka_group_id=one-{topic}"), out=lambda _: None)
    after_passes, in_one_run = _window_metrics(lake), _window_metrics(one_run)
    assert after_passes.keys() == in_one_run.keys() and len(after_passes) >= 4  # all traffic, tenants, ...
    for key, figures in in_one_run.items():
        assert after_passes[key] == pytest.approx(figures), key
    responses_in_lake = connect_lake(lake).execute("SELECT count(*) FROM responses").fetchone()[0]
    assert sum(n for (_, dimension, _), (n, *_) in after_passes.items() if dimension == "all") == responses_in_lake
    # The 300 messages fall in one window, which all three passes read from: it is computed again.
    assert len({window for window, _, _ in after_passes}) == 1
    assert "window metrics 1 windows span passes: computed again from the lake" in lines


def _window_metrics(lake) -> dict[tuple, tuple]:
    """(window_start, slice_dimension, slice_value) -> the figures, from the lake view."""
    rows = (
        connect_lake(str(lake))
        .execute(
            "SELECT window_start, slice_dimension, slice_value, responses, sentences, mean_confidence, "
            "mean_faithfulness, fully_grounded_share, contradicted_share, needs_review_responses, "
            "attribution_coverage_rate, citation_failure_rate FROM window_metrics"
        )
        .fetchall()
    )
    return {row[:3]: tuple(x if x is not None else -1.0 for x in row[3:]) for row in rows}


@pytest.mark.kafka
def test_a_catch_up_from_latest_reads_nothing_and_is_done(kafka_bootstrap, new_topic, tmp_path):  # noqa: F811
    topic = new_topic(partitions=2)
    produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, generated_messages(20, seed=3, start=DEFAULT_START))
    counts = run(monitor_argv(kafka_bootstrap, topic, tmp_path / "lake", "--start_from=latest"), out=lambda _: None)
    assert (counts.read, counts.audited, counts.dead_lettered) == (0, 0, 0)
