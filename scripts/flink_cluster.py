"""Beam's Flink job server on 127.0.0.1, alone (embedded mini-cluster) or before a local standalone Flink cluster.

`scripts/flink.sh start|stop|status [--cluster]` calls this module; pytest fixtures import `LocalFlink`. Maven
serves no `beam-runners-flink-*-job-server` jar, so the jars of `beam-runners-flink-1.19` (which holds
`FlinkJobServerDriver` and brings Flink 1.19.0) are resolved once with `mvn dependency:copy-dependencies` from
`scripts/flink/pom.xml` into `~/.cache/groundwatch/flink/<version>/lib`. State, config, logs and the JVMs'
temporary files live in a home folder (default `~/.cache/groundwatch/flink/run`).

    python3 scripts/flink_cluster.py start [--cluster [--taskmanagers N] [--slots S]]  # prints localhost:PORT
    python3 scripts/flink_cluster.py flags    # the Beam options of audit and monitor on the running cluster
    python3 scripts/flink_cluster.py status [--json]  # prints the endpoint, exit 0 when it answers
    python3 scripts/flink_cluster.py stop     # SIGTERM each process started, SIGKILL if it lingers

With `--cluster` it runs a JobManager (`StandaloneSessionClusterEntrypoint`) and N TaskManagers
(`TaskManagerRunner`, with the memory and CPU settings Flink's `BashJavaUtils GET_TM_RESOURCE_PARAMS` computes, as
`taskmanager.sh` would: flink-dist is not on Maven), each with a Beam Python worker pool beside it for
`--environment_type=EXTERNAL` (`scripts/flink_pools.py` says how a TaskManager finds its own), and points the job
server at the JobManager's REST port. Every process listens on loopback only (the pools on 127.0.0.1, 127.0.0.2,
...; the rest on 127.0.0.1). Starting is idempotent: a running set just prints its endpoint, and a process that died
(a TaskManager killed by a test) is started again. Ports come from the environment (GROUNDWATCH_FLINK_JOB_PORT,
default 38099; GROUNDWATCH_FLINK_REST_PORT, default 38081) and stay away from Flink's and Beam's defaults.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

__all__ = ["FlinkError", "LocalFlink", "beam_version", "ensure_libs", "find_java"]


def _sibling(name: str, path: Path | None = None):
    """`scripts/<name>.py` (or the file at `path`) as a module, loaded by its path (run as a script or loaded by
    tests)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path or Path(__file__).resolve().parent / f"{name}.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


maven_libs = _sibling("maven_libs")
pools = _sibling("flink_pools")
staging = _sibling("flink_staging")
POM = Path(__file__).resolve().parent / "flink" / "pom.xml"
DEFAULT_HOME = maven_libs.CACHE / "flink" / "run"
# Beam's defaults are 8099/8098/8097 and Flink's 8081/6123: a developer's own servers keep theirs.
DEFAULT_JOB_PORT = 38099
DEFAULT_REST_PORT = 38081
DEFAULT_POOL_PORT = 38096
DEFAULT_SLOTS = 2
"""Slots of a lone TaskManager (LOOPBACK at parallelism 2 needs two); each of several TaskManagers has one."""
EMBEDDED_REST_PORTS = 10
"""How many jobs of the embedded mini-cluster can run at once, each with a REST server on a port of its range."""
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 20.0
JOB_SERVER = "org.apache.beam.runners.flink.FlinkJobServerDriver"
JOB_MANAGER = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASK_MANAGER = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
BASH_JAVA_UTILS = "org.apache.flink.runtime.util.bash.BashJavaUtils"
CLUSTER_JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""JVM flags of the local cluster's JobManager, TaskManagers and the job server before them: the client compiler
only, and one garbage-collector thread. With worker pools their work per job is control (submitting, scheduling,
a few records to and from the Python workers), mostly code run once per job, which the optimising compiler
spent more CPU compiling than it saved: about half the JVMs' CPU per job goes (docs/benchmarks.md, "The cluster's
JVMs on the client compiler"). The embedded mini-cluster's job server, which runs the work itself, keeps the JVM's
defaults."""


class FlinkError(RuntimeError):
    """The job server or the local cluster could not be provisioned, started or stopped."""


def beam_version() -> str:
    """The Beam job server version the pom pins."""
    return maven_libs.pom_property(POM, "beam.version", FlinkError)


def find_java() -> str:
    """A Java 11 or 17 runtime (Flink 1.19 supports 8, 11 and 17; 21 and later fail in its serializers)."""
    return maven_libs.find_java((11, 17), FlinkError, env_var="GROUNDWATCH_FLINK_JAVA")


def ensure_libs(version: str | None = None) -> Path:
    """Resolve the job server's jars with mvn into the cache once; return the folder holding them."""
    version = version or beam_version()
    return maven_libs.ensure_libs(POM, maven_libs.CACHE / "flink" / version / "lib", f"Beam {version}", FlinkError)


def _rest_ports(ports: dict[str, int], cluster: bool) -> tuple[int, int]:
    """The lowest and highest REST port: the cluster's one port, or the embedded mini-cluster's range."""
    return ports["rest"], ports["rest"] + (0 if cluster else EMBEDDED_REST_PORTS - 1)


def _flink_conf(ports: dict[str, int], slots: int, cluster: bool) -> str:
    local = """\
jobmanager.rpc.address: 127.0.0.1
jobmanager.bind-host: 127.0.0.1
rest.address: 127.0.0.1
rest.bind-address: 127.0.0.1
taskmanager.host: 127.0.0.1
taskmanager.bind-host: 127.0.0.1
"""
    if not cluster:
        # The embedded mini-cluster is one Flink cluster per job, reading this file: fixed ports would let only one
        # job run (the second fails on "Unable to open BLOB Server"). Its REST server takes the first free port of
        # a range, where `groundwatch monitor --flink-rest` finds its job to cancel it; the rest stay random.
        low, high = _rest_ports(ports, cluster)
        return local + f"rest.bind-port: {low}-{high}\n"
    return (
        local
        + f"""\
jobmanager.rpc.port: {ports["rpc"]}
jobmanager.memory.process.size: 1024m
rest.port: {ports["rest"]}
blob.server.port: {ports["blob"]}
taskmanager.numberOfTaskSlots: {slots}
taskmanager.memory.process.size: 1728m
parallelism.default: 1
# A job's jars, when the job server stages them (no javac, or a failed build: flink_staging), are the very jars the
# TaskManagers run from: loading parent-first reuses the classes the TaskManager has loaded (and compiled) instead
# of loading all of Beam again per job.
classloader.resolve-order: parent-first
# Parent-first over the same jars, a job's classloader serves no class of its own, staged jars or not. Beam's gRPC
# threads outlive a task and keep its (closed) classloader as their context, and a class they load later, such as
# CoderRegistry when a state request arrives, failed the job where Flink's leak check threw instead of loading it.
classloader.check-leaked-classloader: false
# A killed TaskManager is noticed in seconds, not the default 50: tests and a laptop want a quick failure.
heartbeat.interval: 2000
heartbeat.timeout: 10000
"""
    )


def _task_manager(index: int) -> str:
    """The role of TaskManager `index`: `task_manager` for the first (as before there were several), then
    `task_manager_1`, ..."""
    return "task_manager" + (f"_{index}" if index else "")


def _worker_pool(index: int) -> str:
    return "worker_pool" + (f"_{index}" if index else "")


class LocalFlink:
    """Beam's Flink job server (and, with `cluster`, a JobManager and TaskManagers with worker pools) whose state
    lives in `home`."""

    def __init__(
        self,
        home: Path | str = DEFAULT_HOME,
        *,
        job_port: int = DEFAULT_JOB_PORT,
        rest_port: int = DEFAULT_REST_PORT,
        pool_port: int = DEFAULT_POOL_PORT,
        task_managers: int = 1,
        slots: int | None = None,
        heap: str = "768m",
    ):
        slots = slots or (DEFAULT_SLOTS if task_managers == 1 else 1)
        if slots < 1 or task_managers < 1:
            raise FlinkError(f"taskmanagers and slots must be at least 1, got {task_managers} and {slots}")
        self.home = Path(home)
        self._wanted = {"job": job_port, "rest": rest_port, "pool": pool_port}
        self._task_managers = task_managers
        self._slots = slots
        self._heap = heap

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def _state_file(self) -> Path:
        return self.home / "flink.json"

    def _state(self) -> dict:
        try:
            return json.loads(self._state_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def _write_state(self, state: dict) -> None:
        tmp = self._state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, self._state_file)

    @contextlib.contextmanager
    def _locked(self):
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @property
    def endpoint(self) -> str | None:
        """`localhost:PORT` of the job server, for `--job_endpoint`."""
        port = self._state().get("ports", {}).get("job")
        return f"localhost:{port}" if port else None

    @property
    def rest_address(self) -> str | None:
        """`127.0.0.1:PORT` of the cluster's REST API, or the `127.0.0.1:LOW-HIGH` range where the embedded
        mini-cluster's jobs serve theirs (each only while it runs): for `groundwatch monitor --flink-rest`."""
        state = self._state()
        if "rest" not in state.get("ports", {}):
            return None
        low, high = _rest_ports(state["ports"], state.get("cluster", False))
        return f"127.0.0.1:{low}" + (f"-{high}" if high != low else "")

    @property
    def rest_url(self) -> str | None:
        """The JobManager's REST API (`http://127.0.0.1:PORT`) when a cluster runs, else None."""
        state = self._state()
        return f"http://127.0.0.1:{state['ports']['rest']}" if state.get("cluster") else None

    def pid(self, role: str) -> int | None:
        """The process id of `job_server`, `job_manager`, `task_manager[_i]` or `worker_pool[_i]`, when it runs."""
        pid = self._state().get("pids", {}).get(role)
        return pid if maven_libs.pid_alive(pid) else None

    def log_file(self, role: str) -> Path:
        return self.home / "logs" / f"{role}.log"

    def _roles(self, state: dict) -> list[str]:
        if not state.get("cluster"):
            return ["job_server"]
        count = state.get("task_managers", 1)
        return ["job_manager", *map(_task_manager, range(count)), *map(_worker_pool, range(count)), "job_server"]

    def running(self) -> bool:
        state = self._state()
        return bool(state) and all(self.pid(role) for role in self._roles(state))

    def answers(self, timeout_s: float = 5.0) -> bool:
        """Whether the job server answers a GetJobs call (and, with a cluster, every TaskManager is registered)."""
        if not self.endpoint or not _job_service_answers(self.endpoint, timeout_s):
            return False
        return self.rest_url is None or self.task_managers(timeout_s) >= self._state().get("task_managers", 1)

    def pools(self) -> list[dict]:
        """The worker pools of the cluster: the TaskManager each serves, its address, pid and whether it runs."""
        state = self._state()
        if not state.get("cluster"):
            return []
        return [
            {"task_manager": _task_manager(index), "address": pools.pool_address(index, state["ports"]["pool"]),
             "pid": state.get("pids", {}).get(_worker_pool(index)), "alive": bool(self.pid(_worker_pool(index))),
             "log": str(self.log_file(_worker_pool(index)))}
            for index in range(state.get("task_managers", 1))
        ]  # fmt: skip

    def runner_flags(self, parallelism: int | None = None) -> list[str]:
        """The Beam options of `groundwatch audit` and `monitor` on this cluster's worker pools (EXTERNAL), at
        `parallelism` (default: every slot)."""
        state = self._state()
        if not state.get("cluster"):
            raise FlinkError("no local cluster runs (start it with --cluster)")
        rest, slots = self.rest_url.removeprefix("http://"), state["slots"]
        parallelism = parallelism or state["task_managers"] * slots
        flags = pools.runner_flags(self.endpoint, rest, state["ports"]["pool"], parallelism, slots)
        return flags + ([staging.NOTHING_TO_STAGE_FLAG] if state.get("nothing_to_stage") else [])

    def rest(self, path: str, timeout_s: float = 5.0) -> dict:
        """GET `path` of the JobManager's REST API as JSON."""
        if not self.rest_url:
            raise FlinkError("no local cluster runs (start it with --cluster)")
        with urllib.request.urlopen(self.rest_url + path, timeout=timeout_s) as reply:
            return json.loads(reply.read())

    def task_managers(self, timeout_s: float = 5.0) -> int:
        try:
            return int(self.rest("/overview", timeout_s).get("taskmanagers", 0))
        except (OSError, ValueError, FlinkError):
            return 0

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self, *, cluster: bool = False, master: str | None = None, timeout_s: float = START_TIMEOUT_S) -> str:
        """Start what is not running yet and return the job endpoint once it answers. `master` (`HOST:REST_PORT`
        of an existing Flink cluster) starts only the job server, submitting there. A running job server in
        another mode (mini-cluster, local cluster, another master) is stopped first."""
        if cluster and master:
            raise FlinkError("--cluster starts a local cluster; --flink-master names another one: choose one")
        with self._locked():
            state = self._state()
            shape = (cluster, master, self._task_managers if cluster else 1, self._slots)
            mode_changed = shape != (state.get("cluster", False), state.get("master"), state.get("task_managers", 1),
                                     state.get("slots", DEFAULT_SLOTS))  # fmt: skip
            if state and mode_changed and maven_libs.pid_alive(state.get("pids", {}).get("job_server")):
                self._stop_all(state)
                state = self._state()
            lib, java = ensure_libs(), find_java()
            # Our own cluster runs from the job server's jars: its jobs need not send them (flink_staging).
            jar = self._staging_jar(lib, java, starting=not self.pid("job_server")) if cluster else None
            # The jar goes first, ahead of any build an older groundwatch left in the shared lib folder.
            classpath = (f"{jar}{os.pathsep}" if jar else "") + f"{lib}/*"
            state = self._configure(state, cluster)
            state["master"] = master
            self._write_state(state)
            (self.home / "logs").mkdir(parents=True, exist_ok=True)
            if cluster:
                if not self.pid("job_manager"):
                    self._spawn(state, "job_manager", [java, f"-Xmx{self._heap}", *CLUSTER_JVM_FLAGS,
                                *self._jvm_properties("job_manager"),
                                "-cp", classpath, JOB_MANAGER, "--configDir", str(self._conf_dir),
                                "--executionMode", "cluster"])  # fmt: skip
                for index in range(self._task_managers):
                    self._start_task_manager(state, index, java, lib, classpath)
            if not self.pid("job_server"):
                ports = state["ports"]
                master = f"127.0.0.1:{ports['rest']}" if cluster else (master or "[local]")
                state["nothing_to_stage"] = jar is not None
                jvm = CLUSTER_JVM_FLAGS if cluster else ()
                # Before a cluster, jobs outlive their job server and read the artifacts it staged in its temporary
                # folder: a job server started again keeps what the last one left there.
                properties = self._jvm_properties("job_server", keep_temp=cluster)
                self._spawn(state, "job_server", [java, f"-Xmx{self._heap}", *jvm, *properties,
                            "-cp", classpath, JOB_SERVER, f"--flink-master={master}",
                            "--job-host=127.0.0.1", f"--job-port={ports['job']}",
                            f"--artifact-port={ports['artifact']}", f"--expansion-port={ports['expansion']}",
                            f"--flink-conf-dir={self._conf_dir}"])  # fmt: skip
            self._wait_ready(timeout_s)
            return self.endpoint

    def _staging_jar(self, lib: Path, java: str, *, starting: bool = True) -> Path | None:
        """`NothingToStage` built into this cluster's home (`scripts/flink_staging.py`), or None. A job server
        `starting` gets it built, older builds removed, and a missing jar said on stderr: without it every job
        stages the job server's jars, which only costs time. A running one's choice is made: the build it has, if
        any, with nothing compiled, removed or said (`start` is idempotent and runs again and again)."""
        folder = self.home / "staging"
        if not starting:
            jar = staging.jar_path(folder)
            return jar if jar.exists() else None
        slower = "jobs will stage the job server's jars (about 13 s more per job)"
        try:
            jar = staging.build_jar(folder, lib, java)
        except staging.BuildFailed as failed:
            jar = None
            print(f"warning: {failed}\n{slower}", file=sys.stderr)
        else:
            if jar is None:
                print(f"warning: no javac beside {java} or on PATH; {slower}", file=sys.stderr)
        staging.prune(folder, keep=jar)
        return jar

    def _start_task_manager(self, state: dict, index: int, java: str, lib: Path, classpath: str) -> None:
        """TaskManager `index` and its worker pool, whichever is not running; the TaskManager resolves the pools'
        name to its own pool (`scripts/flink_pools.py`)."""
        ports, pool = state["ports"], _worker_pool(index)
        if not self.pid(pool):
            address = pools.pool_address(index, ports["pool"])
            self._spawn(state, pool, pools.pool_command(address), env=pools.pool_env(self.home / "bin"))
        role = _task_manager(index)
        if not self.pid(role):
            jvm, dynamic = self._tm_resources(java, lib)
            hosts = pools.write_hosts_file(self._conf_dir, index)
            self._spawn(state, role, [java, *jvm, *CLUSTER_JVM_FLAGS, f"-Djdk.net.hosts.file={hosts}",
                        *self._jvm_properties(role),
                        "-cp", classpath, TASK_MANAGER, "--configDir", str(self._conf_dir), *dynamic,
                        "-D", f"taskmanager.rpc.port={ports[f'tm{index}_rpc']}",
                        "-D", f"taskmanager.data.port={ports[f'tm{index}_data']}"])  # fmt: skip

    @property
    def _conf_dir(self) -> Path:
        return self.home / "conf"

    def _jvm_properties(self, role: str, *, keep_temp: bool = False) -> list[str]:
        """The system properties of a JVM about to start as `role` (whose process is not running). slf4j-simple
        writes to stderr (our log file); Flink's own code also asks for log.file when it serves logs. The temporary
        folder is the role's own, in the home (`_temp_folder`)."""
        return [
            f"-Djava.io.tmpdir={self._temp_folder(role, keep=keep_temp)}",
            "-Djava.awt.headless=true",
            f"-Dlog.file={self.log_file(role)}",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
        ]

    def _temp_folder(self, role: str, *, keep: bool = False) -> Path:
        """The temporary folder of `role`'s JVM (`java.io.tmpdir`, which Flink's `io.tmp.dirs` follows), emptied
        (unless `keep`) of what a killed process of the role left: a TaskManager's working directory keeps the jars
        of each job that staged them, 152 MB a job, and so does the embedded mini-cluster's. `stop` removes them
        all."""
        folder = self._temp_root / role
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def _temp_root(self) -> Path:
        return self.home / "jvm-tmp"

    def _configure(self, state: dict, cluster: bool) -> dict:
        """Ports kept across restarts when still free; a fresh Flink config for the cluster's processes."""
        ports = dict(state.get("ports", {}))
        alive = any(maven_libs.pid_alive(pid) for pid in state.get("pids", {}).values())
        if not alive:
            job = self._wanted["job"]  # 0: any free port, for the artifact and expansion services too
            wanted = {**self._wanted, "artifact": job and job - 1, "expansion": job and job - 2}
            task_managers = [f"tm{index}_{kind}" for index in range(self._task_managers) for kind in ("rpc", "data")]
            taken: set[int] = set()
            for name in ("job", "artifact", "expansion", "rest", "rpc", "blob", "pool", *task_managers):
                # Below the ephemeral range (`listen_port`): a client connection cannot be given it while the cluster
                # is down, so a restart keeps the ports its clients know.
                port = wanted.get(name) or ports.get(name) or maven_libs.listen_port()
                while port in taken or not self._port_free(name, port):
                    port = maven_libs.listen_port()
                ports[name] = port
                taken.add(port)
        self._conf_dir.mkdir(parents=True, exist_ok=True)
        (self._conf_dir / "flink-conf.yaml").write_text(_flink_conf(ports, self._slots, cluster))
        state = {**state, "cluster": cluster, "task_managers": self._task_managers if cluster else 1,
                 "slots": self._slots, "ports": ports, "pids": state.get("pids", {})}  # fmt: skip
        self._write_state(state)
        return state

    def _port_free(self, name: str, port: int) -> bool:
        """Whether `port` is free for `name`: the pools' port on every pool's address, the others on 127.0.0.1."""
        return pools.pool_port_free(port, self._task_managers) if name == "pool" else maven_libs.port_free(port)

    def _tm_resources(self, java: str, lib: Path) -> tuple[list[str], list[str]]:
        """The JVM flags and `-D key=value` settings `taskmanager.sh` would pass (BashJavaUtils computes them)."""
        command = [java, "-Xmx128m", "-cp", f"{lib}/*", BASH_JAVA_UTILS, "GET_TM_RESOURCE_PARAMS",
                   "--configDir", str(self._conf_dir)]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        lines = [line.split(":", 1)[1] for line in result.stdout.splitlines() if line.startswith("BASH_JAVA_UTILS_")]
        if result.returncode != 0 or len(lines) < 2:
            raise FlinkError(f"BashJavaUtils GET_TM_RESOURCE_PARAMS failed:\n{result.stdout}{result.stderr}")
        return lines[-2].split(), lines[-1].split()

    def _spawn(self, state: dict, role: str, command: list[str], env: dict[str, str] | None = None) -> None:
        """Start `role` in a session of its own, output to its log; the JVMs without the workers' secrets."""
        with open(self.log_file(role), "ab") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                env=env or pools.jvm_env(),
            )  # fmt: skip
        state["pids"][role] = process.pid
        self._write_state(state)

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        roles = list(self._state().get("pids", {}))
        while time.monotonic() < deadline:
            if dead := [role for role in roles if not self.pid(role)]:
                raise FlinkError(f"{', '.join(dead)} exited during start-up:\n{self._log_tail(dead)}")
            if self.answers():
                return
            time.sleep(0.5)
        raise FlinkError(f"the Flink job server did not answer within {timeout_s:.0f}s; logs in {self.home / 'logs'}")

    def _log_tail(self, roles: list[str], lines: int = 30) -> str:
        text = ""
        for role in roles:
            with contextlib.suppress(FileNotFoundError):
                tail = self.log_file(role).read_text(errors="replace").splitlines(True)[-lines:]
                text += f"--- {self.log_file(role)}\n" + "".join(tail)
        return text

    def stop(self, grace_s: float = STOP_GRACE_S) -> bool:
        """Stop every process this home started; return whether any was running. Ports are kept."""
        with self._locked():
            return self._stop_all(self._state(), grace_s)

    def _stop_all(self, state: dict, grace_s: float = STOP_GRACE_S) -> bool:
        pids = state.get("pids", {})
        # The job server first (it cancels nothing, but must not submit to a cluster going away), then the workers.
        workers = sorted(role for role in pids if role.startswith(("task_manager", "worker_pool")))
        order = [role for role in ("job_server", *workers, "job_manager") if maven_libs.pid_alive(pids.get(role))]
        for role in order:
            maven_libs.terminate(pids[role], grace_s)
        if state:
            state["pids"] = {}
            self._write_state(state)
        shutil.rmtree(self._temp_root, ignore_errors=True)
        return bool(order)

    def kill(self, role: str) -> int:
        """SIGKILL one process (a test's crash); return its pid. `start()` brings it back."""
        pid = self.pid(role)
        if not pid:
            raise FlinkError(f"{role} is not running")
        os.kill(pid, signal.SIGKILL)
        while maven_libs.pid_alive(pid):
            time.sleep(0.05)
        return pid


def _job_service_answers(endpoint: str, timeout_s: float) -> bool:
    """Whether a Beam job service answers GetJobs at `endpoint` (a bare TCP accept says less: the JVM opens the
    port before the service is ready)."""
    # Beam's import logs "apitools not found" unless groundwatch's filter is in place first, as in the CLI and the
    # pools (the filter imports nothing but `logging`).
    _sibling("groundwatch_beam_quiet", Path(__file__).resolve().parent.parent / "transforms" / "beam_quiet.py")
    try:
        import grpc
        from apache_beam.portability.api import beam_job_api_pb2, beam_job_api_pb2_grpc
    except ImportError:  # no Beam here: an open port is the best sign there is
        host, port = endpoint.rsplit(":", 1)
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
        return False
    with grpc.insecure_channel(endpoint) as channel:
        try:
            beam_job_api_pb2_grpc.JobServiceStub(channel).GetJobs(beam_job_api_pb2.GetJobsRequest(), timeout=timeout_s)
        except grpc.RpcError:
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status", "flags"])
    parser.add_argument("--cluster", action="store_true", help="a local JobManager and TaskManagers")
    env = os.environ.get
    parser.add_argument("--home", default=env("GROUNDWATCH_FLINK_HOME", str(DEFAULT_HOME)),
                        help="state, logs and temporary files")  # fmt: skip
    parser.add_argument("--taskmanagers", type=int, default=int(env("GROUNDWATCH_FLINK_TASKMANAGERS", 1)),
                        help="TaskManagers of --cluster, each with a worker pool (default %(default)s; "
                        "GROUNDWATCH_FLINK_TASKMANAGERS)")  # fmt: skip
    parser.add_argument("--slots", type=int, default=int(env("GROUNDWATCH_FLINK_SLOTS", 0)) or None,
                        help=f"slots of each TaskManager (default {DEFAULT_SLOTS} for one, else 1; "
                        "GROUNDWATCH_FLINK_SLOTS)")  # fmt: skip
    parser.add_argument("--job-port", type=int, default=int(env("GROUNDWATCH_FLINK_JOB_PORT", DEFAULT_JOB_PORT)),
                        help="job server port (default %(default)s; GROUNDWATCH_FLINK_JOB_PORT)")  # fmt: skip
    parser.add_argument("--rest-port", type=int, default=int(env("GROUNDWATCH_FLINK_REST_PORT", DEFAULT_REST_PORT)),
                        help="JobManager REST port (default %(default)s; GROUNDWATCH_FLINK_REST_PORT)")  # fmt: skip
    parser.add_argument("--pool-port", type=int, default=int(env("GROUNDWATCH_FLINK_POOL_PORT", DEFAULT_POOL_PORT)),
                        help="worker pools' port (default %(default)s; GROUNDWATCH_FLINK_POOL_PORT)")  # fmt: skip
    parser.add_argument("--flink-master", default=env("GROUNDWATCH_FLINK_MASTER"),
                        help="HOST:PORT of an existing cluster (REST): start only the job server")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="status: print the state (ports, pids) as JSON")
    args = parser.parse_args(argv)
    if args.taskmanagers > 1 and not args.cluster and args.action == "start":
        parser.error("--taskmanagers needs --cluster")
    try:
        flink = LocalFlink(args.home, job_port=args.job_port, rest_port=args.rest_port, pool_port=args.pool_port,
                           task_managers=args.taskmanagers, slots=args.slots)  # fmt: skip
    except FlinkError as error:  # a count below 1: bad input, exit 2
        parser.error(str(error))
    try:
        if args.action == "start":
            print(flink.start(cluster=args.cluster, master=args.flink_master))
            if not args.flink_master:  # stdout stays the endpoint alone, for $(scripts/flink.sh start)
                print(f"REST API: {flink.rest_address} (groundwatch monitor --flink-rest)", file=sys.stderr)
            if args.cluster:
                print(f"Runner flags (or: scripts/flink.sh flags): {' '.join(flink.runner_flags())}", file=sys.stderr)
        elif args.action == "stop":
            print("stopped" if flink.stop() else "not running", file=sys.stderr)
        elif args.action == "flags":
            print(" ".join(flink.runner_flags()))
        else:
            up = flink.running() and flink.answers()
            if args.json:
                state = {**flink._state(), "rest": flink.rest_address, "pools": flink.pools(), "answers": up}
                print(json.dumps(state, indent=2))
            elif up:
                print(flink.endpoint)
            else:
                print("running, not answering" if flink.running() else "not running", file=sys.stderr)
            return 0 if up else 1
    except FlinkError as error:
        print(f"flink: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
