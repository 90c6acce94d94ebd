"""groundwatch on a local Flink cluster of two TaskManagers of one slot, each with a Beam Python worker pool beside
it (marker `flink`; what `scripts/flink.sh start --cluster --taskmanagers 2` starts), run with the flags it prints
(`--environment_type=EXTERNAL`, parallelism 2):

- the sample traffic audited there leaves, table by table, the rows the FnApiRunner leaves (floats within 1e-9;
  the wall-clock stamps excluded), the audit stage read records on both TaskManagers (Flink's counts per
  subtask), and both pools started workers for it (their logs);
- a Kafka topic of two partitions caught up there (`--until-caught-up`) leaves the rows the FnApiRunner leaves for
  the same topic, every offset once, the group's offsets committed to the end, with both TaskManagers auditing.

Each TaskManager asks its own pool for workers (`scripts/flink_pools.py`), so work on both TaskManagers is work
in processes of both pools. Waiting is bounded, never a speed assertion.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pipelines.produce import generated_messages, produce_messages
from schemas import TABLES
from tests.support.flink_fixtures import (
    audit_process,
    finished,
    flink_jobs,
    log_tail,
    monitor_process,
    stage_records,
    started_workers,
)
from tests.support.kafka_fixtures import committed_offsets, lake_accounting
from tests.support.lake_compare import assert_same_tables

pytestmark = [pytest.mark.flink]


def _new_job(flink, before: set[str]) -> str:
    (job,) = set(flink_jobs(flink)) - before
    return job


def _both_did_work(flink, job: str, workers_before: list[int]) -> None:
    records = stage_records(flink, job)
    assert len(records) == 2 and min(records.values()) > 0, records  # both TaskManagers audited
    started = [after - before for after, before in zip(started_workers(flink), workers_before, strict=True)]
    assert len(started) == 2 and min(started) > 0, started  # in workers of both pools


def test_audit_on_worker_pools_gives_the_rows_of_the_fnapirunner(pooled_flink, sample_lake_fnapi, tmp_path):
    lake, log = tmp_path / "lake", tmp_path / "audit.log"
    jobs, workers = set(flink_jobs(pooled_flink)), started_workers(pooled_flink)
    assert finished(audit_process(lake, *pooled_flink.runner_flags(), log_path=log), log) == 0, log_tail(log)
    # responses, sentences, citations, claims, window metrics and dead letters: not empty
    assert assert_same_tables(sample_lake_fnapi, str(lake), TABLES) > 3000
    _both_did_work(pooled_flink, _new_job(pooled_flink, jobs), workers)


def test_a_topic_caught_up_on_worker_pools_gives_the_rows_of_the_fnapirunner(
    pooled_flink, kafka_bootstrap, new_topic, tmp_path
):
    topic, count = new_topic(partitions=2), 120
    messages = generated_messages(count, seed=43, malformed_fraction=0.05, start=datetime.now(UTC))
    assert produce_messages({"bootstrap_servers": kafka_bootstrap}, topic, messages) == count
    caught_up = ["--until-caught-up", "--drift-every-seconds", "0"]
    reference, lake, log = tmp_path / "fnapi", tmp_path / "flink", tmp_path / "monitor.log"
    # The reference reads the topic in a group of its own, so the run on Flink still finds it unread.
    on_fnapi = monitor_process(kafka_bootstrap, topic, reference, [*caught_up, "--group-id", f"ref-{topic}"], log)
    assert finished(on_fnapi, log) == 0, log_tail(log)

    jobs, workers = set(flink_jobs(pooled_flink)), started_workers(pooled_flink)
    on_flink = monitor_process(kafka_bootstrap, topic, lake, [*caught_up, *pooled_flink.runner_flags()], log)
    assert finished(on_flink, log) == 0, log_tail(log)

    found = lake_accounting(str(lake), topic)
    offsets = found["responses"] + found["dead_letters"]
    assert len(offsets) == len(set(offsets)) == count and found["dead_letters"]
    committed, ends = committed_offsets(kafka_bootstrap, f"g-{topic}", topic, partitions=2)
    assert committed == ends
    assert assert_same_tables(str(reference), str(lake), TABLES) > count
    _both_did_work(pooled_flink, _new_job(pooled_flink, jobs), workers)
