"""A real Apache Kafka 4.x broker on 127.0.0.1 for development and tests, provisioned from Maven Central.

`scripts/kafka.sh start|stop|status|purge` calls this module; pytest fixtures import `LocalKafka` to run a
private broker. The jars are resolved once with `mvn dependency:copy-dependencies` from `scripts/kafka/pom.xml`
into `~/.cache/groundwatch/kafka/<version>/libs`; the broker runs as one KRaft node (broker and controller
combined) whose data, config and log live in a home folder (default `~/.cache/groundwatch/kafka/run`).

    python3 scripts/kafka_broker.py start      # prints 127.0.0.1:PORT once the broker answers
    python3 scripts/kafka_broker.py status     # prints the address and exits 0 when it is up, exits 1 otherwise
    python3 scripts/kafka_broker.py stop       # graceful stop (SIGTERM, then SIGKILL after a grace period)
    python3 scripts/kafka_broker.py purge      # stop and delete the broker's data

Starting is idempotent (a running broker just prints its address) and a restart reuses the same ports and
data, so a test can stop and restart the broker under a running pipeline.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

__all__ = ["BrokerError", "LocalKafka", "ensure_libs", "kafka_version"]


def _sibling(name: str):
    """`scripts/<name>.py` as a module, loaded by its path beside this file (run as a script or loaded by tests)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


maven_libs = _sibling("maven_libs")
POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
DEFAULT_HOME = maven_libs.CACHE / "kafka" / "run"
DEFAULT_PORT = 39092  # non-default on purpose: never collide with a developer's own Kafka on 9092
START_TIMEOUT_S = 180.0
STOP_GRACE_S = 30.0


class BrokerError(RuntimeError):
    """The local broker could not be provisioned, started or stopped."""


def kafka_version() -> str:
    """The Kafka version the pom pins."""
    return maven_libs.pom_property(POM, "kafka.version", BrokerError)


def ensure_libs(version: str | None = None) -> Path:
    """Resolve the broker's jars with mvn into the cache once; return the folder holding them."""
    version = version or kafka_version()
    return maven_libs.ensure_libs(POM, maven_libs.CACHE / "kafka" / version / "libs", f"Kafka {version}", BrokerError)


def _server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs={data_dir}
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
log.cleaner.backoff.ms=500
log.retention.check.interval.ms=10000
"""


_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def _cluster_id() -> str:
    """A random KRaft cluster id (base64url of a UUID, as `kafka-storage random-uuid` makes), never starting with
    "-": the storage tool would read such an id as an option (one format in 64 failed that way)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class LocalKafka:
    """One single-node KRaft broker whose config, data and log live under `home`."""

    def __init__(self, home: Path | str = DEFAULT_HOME, *, port: int = 0, heap: str = "512m"):
        self.home = Path(home)
        self._wanted_port = port
        self._heap = heap

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def _state_file(self) -> Path:
        return self.home / "broker.json"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "server.log"

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
    def bootstrap(self) -> str | None:
        """`127.0.0.1:PORT` of this broker's client listener, once it has been configured."""
        port = self._state().get("port")
        return f"127.0.0.1:{port}" if port else None

    def running(self) -> bool:
        """Whether the broker process is alive (not necessarily answering yet)."""
        pid = self._state().get("pid")
        return bool(pid) and maven_libs.pid_alive(pid)

    def answers(self, timeout_s: float = 5.0) -> bool:
        """Whether an admin client gets the cluster's topic list from the broker."""
        address = self.bootstrap
        if not address:
            return False
        return _admin_answers(address, timeout_s)

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self, timeout_s: float = START_TIMEOUT_S) -> str:
        """Start the broker (or find it running) and return its bootstrap address once it answers."""
        with self._locked():
            if self.running():
                self._wait_ready(timeout_s)
                return self.bootstrap
            libs = ensure_libs()
            state = self._configure()
            log_handle = open(self.home / "logs" / "stdout.log", "ab")
            command = [
                "java", f"-Xmx{self._heap}", "-Xms128m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile=file:{self.home / 'log4j2.properties'}",
                "-cp", f"{libs}/*", "kafka.Kafka", str(self.home / "server.properties"),
            ]  # fmt: skip
            process = subprocess.Popen(
                command, stdout=log_handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
            log_handle.close()
            state["pid"] = process.pid
            self._write_state(state)
            self._wait_ready(timeout_s)
            return self.bootstrap

    def _configure(self) -> dict:
        """Write config and format storage on first use; keep ports and data across restarts."""
        state = self._state()
        data_dir = self.home / "data"
        (self.home / "logs").mkdir(parents=True, exist_ok=True)
        port, controller_port = state.get("port"), state.get("controller_port")
        if not port or not (maven_libs.port_free(port) and maven_libs.port_free(controller_port)):
            # Below the ephemeral range: a restart finds its ports free, where a port any client connection can be
            # given while the broker is down made the restart move to new ones, away from its clients.
            port = self._wanted_port or maven_libs.listen_port(pair=True)
            if not maven_libs.port_free(port):
                port = maven_libs.listen_port(pair=True)
            controller_port = port + 1 if maven_libs.port_free(port + 1) else maven_libs.listen_port()
        cluster_id = state.get("cluster_id") or _cluster_id()
        (self.home / "server.properties").write_text(_server_properties(port, controller_port, data_dir))
        (self.home / "log4j2.properties").write_text(_LOG4J2.format(log=self.log_file))
        if not (data_dir / "meta.properties").exists():
            libs = ensure_libs()
            command = [
                "java", "-Xmx256m", f"-Dlog4j2.configurationFile=file:{self.home / 'log4j2.properties'}",
                "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
                "-c", str(self.home / "server.properties"), "--ignore-formatted",
            ]  # fmt: skip
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise BrokerError(f"formatting KRaft storage failed:\n{result.stdout}{result.stderr}")
        state.update(port=port, controller_port=controller_port, cluster_id=cluster_id, data_dir=str(data_dir))
        self._write_state(state)
        return state

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running():
                raise BrokerError(f"the Kafka broker exited during start-up; see {self.log_file}\n{self._log_tail()}")
            if self.answers(timeout_s=5.0):
                return
            time.sleep(0.5)
        raise BrokerError(f"the Kafka broker did not answer within {timeout_s:.0f}s; see {self.log_file}")

    def _log_tail(self, lines: int = 30) -> str:
        text = ""
        for name in ("stdout.log", "server.log"):
            with contextlib.suppress(FileNotFoundError):
                text += "".join((self.home / "logs" / name).read_text(errors="replace").splitlines(True)[-lines:])
        return text

    def stop(self, grace_s: float = STOP_GRACE_S) -> bool:
        """Stop the broker gracefully; return whether one was running. Ports and data are kept."""
        with self._locked():
            state = self._state()
            pid = state.get("pid")
            if not pid or not maven_libs.pid_alive(pid):
                state.pop("pid", None)
                if state:
                    self._write_state(state)
                return False
            maven_libs.terminate(pid, grace_s)
            state.pop("pid", None)
            self._write_state(state)
            return True

    def purge(self) -> None:
        """Stop the broker and delete its data, config and logs."""
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


def _admin_answers(address: str, timeout_s: float) -> bool:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=address,
            request_timeout_ms=int(timeout_s * 1000),
            bootstrap_timeout_ms=int(timeout_s * 1000),
            client_id="groundwatch-broker-probe",
        )
    except (KafkaError, OSError, ValueError):  # not up yet, or refusing connections
        return False
    try:
        admin.list_topics()
        return True
    except (KafkaError, OSError):
        return False
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status", "purge"])
    home = os.environ.get("GROUNDWATCH_KAFKA_HOME", str(DEFAULT_HOME))
    port = int(os.environ.get("GROUNDWATCH_KAFKA_PORT", DEFAULT_PORT))
    parser.add_argument("--home", default=home, help="folder for config, data and log (default %(default)s)")
    parser.add_argument("--port", type=int, default=port, help="client port on first start (default %(default)s)")
    args = parser.parse_args(argv)
    broker = LocalKafka(args.home, port=args.port)
    try:
        if args.action == "start":
            print(broker.start())
        elif args.action == "stop":
            print("stopped" if broker.stop() else "not running", file=sys.stderr)
        elif args.action == "purge":
            broker.purge()
        else:
            if broker.running() and broker.answers():
                print(broker.bootstrap)
                return 0
            print("running, not answering" if broker.running() else "not running", file=sys.stderr)
            return 1
    except BrokerError as error:
        print(f"kafka: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
