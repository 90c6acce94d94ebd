"""A local Flink session cluster for the tests marked `flink`: one JobManager, one TaskManager with 2 slots, and
Beam's Flink job server pointed at it (`scripts/flink_cluster.py`), started once per session on free ports in a
folder of the session's own, and stopped at its end. `pytest -m "not flink"` never starts it.
`tests/integration/flink/conftest.py` registers the fixture for the tests there.
"""

from __future__ import annotations

import pytest

from tests.support.scripts import load_script

LocalFlink = load_script("flink_cluster").LocalFlink

__all__ = ["LocalFlink", "flink_argv", "flink_cluster", "flink_jobs"]


@pytest.fixture(scope="session")
def flink_cluster(tmp_path_factory):
    """The running `LocalFlink` (`.endpoint` for `--job_endpoint`, `.rest()` for the JobManager's REST API)."""
    flink = LocalFlink(tmp_path_factory.mktemp("flink"), job_port=0, rest_port=0, slots=2)
    try:
        flink.start(cluster=True)
        yield flink
    finally:
        flink.stop()


def flink_argv(flink, parallelism: int = 2) -> list[str]:
    """The Beam options of a run on `flink`, its SDK worker in the launching process."""
    return [
        "--runner=FlinkRunner",
        f"--job_endpoint={flink.endpoint}",
        "--environment_type=LOOPBACK",
        f"--flink_master={flink.rest_url.removeprefix('http://')}",  # where a stopped monitor cancels its job
        f"--parallelism={parallelism}",
    ]


def flink_jobs(flink) -> dict[str, str]:
    """Every job the cluster knows, as job id -> state (`RUNNING`, `FINISHED`, `CANCELED`, `FAILED`, ...)."""
    return {job["jid"]: job["state"] for job in flink.rest("/jobs/overview")["jobs"]}
