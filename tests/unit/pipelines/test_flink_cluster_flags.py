"""The Beam options `scripts/flink.sh flags` prints for the local cluster (`LocalFlink.runner_flags`): the option
that makes a job stage no jars goes only to a job server started with `NothingToStage` on its classpath. The
cluster that runs them is in `tests/integration/flink/`."""

from __future__ import annotations

import json

import pytest

from tests.support.scripts import load_script

cluster = load_script("flink_cluster")
staging = load_script("flink_staging")


def _recorded(home, **state) -> cluster.LocalFlink:
    """A LocalFlink whose home holds the state a `start --cluster` of two TaskManagers wrote (nothing runs)."""
    ports = {"job": 38099, "rest": 38081, "pool": 38096}
    (home / "flink.json").write_text(json.dumps({"cluster": True, "task_managers": 2, "slots": 1, "ports": ports,
                                                 "pids": {}, **state}))  # fmt: skip
    return cluster.LocalFlink(home)


@pytest.mark.parametrize("built", [True, False])
def test_the_flag_follows_what_the_job_server_was_started_with(tmp_path, built):
    flags = _recorded(tmp_path, nothing_to_stage=built).runner_flags()
    assert (staging.NOTHING_TO_STAGE_FLAG in flags) is built
    assert "--parallelism=2" in flags and "--environment_type=EXTERNAL" in flags


def test_a_state_written_before_the_choice_was_recorded_gets_no_flag(tmp_path):
    assert staging.NOTHING_TO_STAGE_FLAG not in _recorded(tmp_path).runner_flags()


def test_the_flag_names_the_class_the_java_source_declares():
    source = staging.SOURCE.read_text()
    package = source.split("package ", 1)[1].split(";", 1)[0]
    name = staging.NOTHING_TO_STAGE_FLAG.split("=", 1)[1]
    assert name == f"{package}.{staging.SOURCE.stem}" and f"public class {staging.SOURCE.stem} " in source
