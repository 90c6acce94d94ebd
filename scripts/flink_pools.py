"""Beam Python worker pools beside the local cluster's TaskManagers, one each, and how each TaskManager finds its own.

`scripts/flink_cluster.py` loads this module. Beam's EXTERNAL environment names one `HOST:PORT` for the whole job
(`--environment_config`): a TaskManager asks that address for an SDK worker (Beam's `ExternalEnvironmentFactory`,
one StartWorker call per job and TaskManager, as `--sdk_worker_parallelism` allows) and waits for the worker to
connect back. On a real cluster every TaskManager host runs its pool at the same `localhost:PORT`. On one machine
the pools share one port on different loopback addresses (pool i on 127.0.0.(i+1)), and each TaskManager's JVM
resolves the pools' name, `groundwatch-worker-pool`, from a hosts file of its own (`-Djdk.net.hosts.file`, which
the JDK reads instead of the system's resolver): TaskManager i reaches pool i, so its work runs in processes of
pool i. The name resolves nowhere else.

A pool runs with the interpreter that runs `scripts/flink.sh` (the project's virtual environment), the checkout's
own code first on its PYTHONPATH, and the environment `scripts/flink.sh start` was given: that is where secrets
reach the workers (the S3 keys, a Kafka password, the judge's key, the lake manifest's HMAC key). The JVMs get
that environment without them.
"""

from __future__ import annotations

import os
import shlex
import socket
import sys
from pathlib import Path

__all__ = [
    "POOL_HOST",
    "SECRET_VARS",
    "jvm_env",
    "pool_address",
    "pool_command",
    "pool_env",
    "pool_port_free",
    "runner_flags",
    "write_hosts_file",
]

POOL_HOST = "groundwatch-worker-pool"
"""The name `--environment_config` gives the pool; each TaskManager's hosts file maps it to that TaskManager's pool."""

SECRET_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GROUNDWATCH_JUDGE_API_KEY",
    "OPENAI_API_KEY",
    "GROUNDWATCH_KAFKA_SASL_PASSWORD",
    "GROUNDWATCH_KAFKA_SSL_PASSWORD",
    "GROUNDWATCH_LAKE_HMAC_KEY",
)
"""Variables only the Python workers use: the JVMs (which never touch the lake, Kafka or the judge) do not get them."""

ENVIRONMENT_CACHE_MS = 30_000
"""How long a TaskManager keeps an idle SDK worker of a job (Beam's default 0 stops it at once)."""

NO_SUBMISSION_ENVIRONMENT = "disable_logging_submission_environment"
"""Beam's experiment that submits a job without the list of the launching environment's packages."""

ROOT = Path(__file__).resolve().parents[1]
WORKER_POOL = Path(__file__).resolve().parent / "flink_worker_pool.py"


def pool_address(index: int, port: int) -> str:
    """`IP:PORT` of the pool beside TaskManager `index` (0-based): 127.0.0.1, 127.0.0.2, ... all loopback."""
    if not 0 <= index < 254:
        raise ValueError(f"at most 254 TaskManagers on one machine, got index {index}")
    return f"127.0.0.{index + 1}:{port}"


def pool_port_free(port: int, count: int) -> bool:
    """Whether `port` can be bound on the loopback addresses of `count` pools."""
    for index in range(count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((pool_address(index, port).rsplit(":", 1)[0], port))
            except OSError:
                return False
    return True


def write_hosts_file(folder: Path, index: int) -> Path:
    """The hosts file of TaskManager `index`: the machine's own names, and the pools' name as its pool's address.
    The JDK then resolves nothing else, so the names the JVM itself asks for (localhost, the host name) are in it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"task_manager_{index}.hosts"
    ip = pool_address(index, 0).rsplit(":", 1)[0]
    path.write_text(f"127.0.0.1 localhost {socket.gethostname()}\n::1 localhost\n{ip} {POOL_HOST}\n")
    return path


def pool_command(address: str) -> list[str]:
    """The pool's command line: this interpreter, so the pool runs in the environment `scripts/flink.sh` runs in."""
    return [sys.executable, str(WORKER_POOL), f"--address={address}"]


def interpreter_shim(bin_dir: Path, name: str) -> Path:
    """`bin_dir`, holding a command `name` that runs this interpreter: first on PATH, it stands for this
    interpreter's virtual environment being active. A script, not a symlink: a symlinked interpreter outside its
    virtual environment would not find it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / name
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    shim.chmod(0o755)
    return bin_dir


def pool_env(bin_dir: Path) -> dict[str, str]:
    """The pool's environment: the caller's, with `bin_dir` first on PATH holding a `python` that runs this
    interpreter (so that a plain `python` a worker starts is this one, as Beam's own pool starts its workers), and
    the checkout first on PYTHONPATH (so the pool's fork server preloads, and the workers import, the code beside
    these scripts, not another installed copy)."""
    interpreter_shim(bin_dir, "python")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def jvm_env() -> dict[str, str]:
    """The JVMs' environment: the caller's without `SECRET_VARS`."""
    return {name: value for name, value in os.environ.items() if name not in SECRET_VARS}


def runner_flags(endpoint: str, rest: str, pool_port: int, parallelism: int, slots: int) -> list[str]:
    """The Beam options of `groundwatch audit` and `groundwatch monitor` on the local cluster with worker pools,
    one SDK worker per slot (Beam's default is one per TaskManager, whatever its slots)."""
    flags = [
        "--runner=FlinkRunner",
        f"--job_endpoint={endpoint}",
        "--environment_type=EXTERNAL",
        f"--environment_config={POOL_HOST}:{pool_port}",
        f"--parallelism={parallelism}",
        # Keep a TaskManager's workers between the regions of a batch job (Flink runs them one after another)
        # rather than start a Python process per region.
        f"--environment_cache_millis={ENVIRONMENT_CACHE_MS}",
        f"--flink_master={rest}",
        # Beam's stager otherwise runs `pip freeze` at every submission (0.55 s measured) to stage the launching
        # environment's package list, read only by Beam's container boot program; the pools run no container.
        f"--experiments={NO_SUBMISSION_ENVIRONMENT}",
    ]
    return flags + ([f"--sdk_worker_parallelism={slots}"] if slots > 1 else [])
