"""A large bounded audit uses one worker process per core, and those workers write the same lake as one process."""

from __future__ import annotations

import os

import pytest
from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

from dashboards.views import connect_lake
from pipelines.demo import sample_traffic_path
from pipelines.runner.bounded import PARALLEL_INPUT_BYTES, local_workers, pipeline_options
from pipelines.runner.bounded import run_audit as run
from tests.support.lake_rows import lake_rows

SAMPLE = sample_traffic_path()


@pytest.mark.parametrize(
    ("input_bytes", "cores", "workers"),
    [
        (PARALLEL_INPUT_BYTES - 1, 8, 1),  # small input: starting workers costs more than it saves
        (PARALLEL_INPUT_BYTES, 1, 1),
        (PARALLEL_INPUT_BYTES, 2, 2),
        (50 * PARALLEL_INPUT_BYTES, 16, 4),
    ],
)
def test_local_workers_by_input_size_and_cores(input_bytes, cores, workers):
    assert local_workers(input_bytes, cores) == workers


def _large_input(tmp_path) -> str:
    path = tmp_path / "large.jsonl"
    with open(path, "wb") as f:
        f.truncate(PARALLEL_INPUT_BYTES)  # only its size matters to the choice of workers
    return str(path)


def test_large_input_on_the_default_runner_gets_worker_processes(tmp_path):
    options = pipeline_options([f"--input={_large_input(tmp_path)}", f"--lake={tmp_path / 'lake'}"])
    direct = options.view_as(DirectOptions)
    assert options.view_as(StandardOptions).runner == "FnApiRunner"
    assert direct.direct_num_workers == local_workers(PARALLEL_INPUT_BYTES, os.cpu_count() or 1)
    assert direct.direct_running_mode == ("multi_processing" if direct.direct_num_workers > 1 else "in_memory")


@pytest.mark.parametrize(
    "flags",
    [["--direct_num_workers=1"], ["--direct_running_mode", "in_memory"], ["--runner=PrismRunner"]],
)
def test_worker_flags_or_another_runner_are_left_as_given(tmp_path, flags):
    options = pipeline_options([f"--input={_large_input(tmp_path)}", f"--lake={tmp_path / 'lake'}", *flags])
    assert options.view_as(DirectOptions).direct_num_workers == 1


@pytest.mark.server  # the multi-process FnApiRunner serves its workers over gRPC on 127.0.0.1
def test_two_worker_processes_write_the_same_lake_as_one_process(tmp_path):
    one = run([f"--input={SAMPLE}", f"--lake={tmp_path / 'one'}"], out=lambda _: None)
    two = run(
        [
            f"--input={SAMPLE}",
            f"--lake={tmp_path / 'two'}",
            "--direct_num_workers=2",
            "--direct_running_mode=multi_processing",
        ],
        out=lambda _: None,
    )
    # A passage is stored once per file that needs it (content-addressed), so how many passage rows are written
    # depends on how the runner cut the bundles; the passages themselves do not.
    assert two.rows_written.pop("passages") >= len(_passages(tmp_path / "two"))
    assert one.rows_written.pop("passages") >= len(_passages(tmp_path / "one"))
    assert _passages(tmp_path / "two") == _passages(tmp_path / "one")
    assert two == one and two.adds_up and two.dead_lettered > 0
    rows_one, rows_two = lake_rows(str(tmp_path / "one")), lake_rows(str(tmp_path / "two"))
    assert rows_two == rows_one
    assert len(rows_one["responses"]) == one.audited


def _passages(lake) -> set[tuple[str, str]]:
    """The lake's distinct passages, as (hash, text)."""
    con = connect_lake(str(lake))
    return set(con.execute("SELECT DISTINCT passage_sha256, content FROM passages").fetchall())
