"""How the local cluster's TaskManagers find their own worker pools, and what the pools and JVMs are given
(`scripts/flink_pools.py`). The cluster itself runs in `tests/integration/flink/test_flink_pools.py`."""

from __future__ import annotations

import subprocess
import sys

from tests.support.scripts import load_script

pools = load_script("flink_pools")


def test_each_taskmanager_resolves_the_pools_name_to_its_own_pool(tmp_path):
    for index in range(3):
        lines = pools.write_hosts_file(tmp_path, index).read_text().splitlines()
        ip = pools.pool_address(index, 38096).rsplit(":", 1)[0]
        assert [line for line in lines if pools.POOL_HOST in line.split()] == [f"{ip} {pools.POOL_HOST}"]
        assert any("localhost" in line.split() for line in lines)  # the JDK resolves nothing outside the file
    assert [pools.pool_address(i, 38096) for i in range(3)] == ["127.0.0.1:38096", "127.0.0.2:38096", "127.0.0.3:38096"]


def test_the_flags_name_the_pools_and_one_worker_per_slot():
    one_slot = pools.runner_flags("localhost:38099", "127.0.0.1:38081", 38096, parallelism=2, slots=1)
    assert "--environment_type=EXTERNAL" in one_slot
    assert f"--environment_config={pools.POOL_HOST}:38096" in one_slot
    assert "--parallelism=2" in one_slot and "--flink_master=127.0.0.1:38081" in one_slot
    assert not any(flag.startswith("--sdk_worker_parallelism") for flag in one_slot)
    assert f"--experiments={pools.NO_SUBMISSION_ENVIRONMENT}" in one_slot  # no `pip freeze` at each submission
    two_slots = pools.runner_flags("localhost:38099", "127.0.0.1:38081", 38096, parallelism=4, slots=2)
    assert "--sdk_worker_parallelism=2" in two_slots


def test_the_jvms_do_not_get_the_workers_secrets(monkeypatch):
    for name in pools.SECRET_VARS:
        monkeypatch.setenv(name, "s3cr3t")
    monkeypatch.setenv("GROUNDWATCH_S3_ENDPOINT", "http://127.0.0.1:39000")
    env = pools.jvm_env()
    assert not set(pools.SECRET_VARS) & set(env)
    assert env["GROUNDWATCH_S3_ENDPOINT"] == "http://127.0.0.1:39000"


def test_the_pools_python_is_this_interpreter_with_the_checkout_first(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    env = pools.pool_env(tmp_path / "bin")
    assert env["AWS_SECRET_ACCESS_KEY"] == "s3cr3t"  # the pool's workers are the ones that need it
    assert env["PYTHONPATH"].split(":")[0] == str(pools.ROOT)
    code = "import sys, pipelines; print(sys.prefix, pipelines.__file__)"
    done = subprocess.run(["python", "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    prefix, module = done.stdout.split()
    assert prefix == sys.prefix and module.startswith(str(pools.ROOT))
