"""Benchmark groundwatch on Flink beside the local runners: responses/s and CPU per response, bounded and streaming.

    python scripts/bench_flink.py [--count 1000] [--stream-count 600] [--bootstrap-servers 127.0.0.1:39092] \\
        [--mode both|bounded|streaming]

One run measures, on the same generated traffic (5% malformed):

- bounded: `groundwatch audit` of a JSONL file on the FnApiRunner (its default worker choice), on Prism, and on
  a local Flink cluster at parallelism 1 and 2 (`scripts/flink_cluster.py start --cluster`, 2 slots; started
  and stopped here unless one is running). Responses/s is lines over the command's wall time, start-up included.
- streaming: `groundwatch monitor` on Prism and on Flink at parallelism 1 and 2; after a warm-up batch is in the
  lake, N messages are produced as fast as the producer goes, and responses/s is N over the time from the first
  sent to the last in the lake (window close included: 5 s windows).

CPU per response counts every process involved: the groundwatch command and the processes it waited for
(`RUSAGE_CHILDREN`), the processes of its process group alive at the end (Prism, SDK workers; from /proc), and
Flink's JobManager, TaskManager and job server (from /proc). The machine's other load is not counted, but it
does slow the figures: read them beside each other, not as absolutes.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from flink_cluster import LocalFlink  # noqa: E402

from dashboards.views import connect_lake  # noqa: E402
from pipelines.monitor import find_prism  # noqa: E402
from pipelines.produce import generated_messages, produce_messages  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
FLINK_ROLES = ("job_manager", "task_manager", "job_server")


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _group_cpu(pgid: int) -> float:
    """CPU seconds of the live processes of process group `pgid`."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                total += _proc_cpu(int(pid))
        except OSError:
            continue
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _flink_cpu(flink: LocalFlink | None) -> float:
    return sum(_proc_cpu(pid) for role in FLINK_ROLES if flink and (pid := flink.pid(role)))


def _runners(flink: LocalFlink, *, bounded: bool) -> list[tuple[str, list[str]]]:
    def on_flink(parallelism: int) -> list[str]:
        return ["--runner=FlinkRunner", f"--job_endpoint={flink.endpoint}", "--environment_type=LOOPBACK",
                f"--parallelism={parallelism}", f"--flink_master={flink.rest_url.removeprefix('http://')}"]  # fmt: skip

    prism = ["--runner=PrismRunner", f"--prism_location={find_prism()}"]
    local = [("FnApiRunner", [])] if bounded else []
    return [*local, ("Prism", prism), ("Flink p=1", on_flink(1)), ("Flink p=2", on_flink(2))]


def _report(name: str, count: int, seconds: float, cpu: float) -> None:
    print(
        f"{name:<22} {count:>6} responses {seconds:7.1f} s {count / seconds:7.1f} responses/s  "
        f"CPU {cpu:7.1f} s = {1000 * cpu / count:6.1f} ms/response",
        flush=True,
    )


def bench_bounded(flink: LocalFlink, count: int, work: Path) -> None:
    traffic = work / "traffic.jsonl"
    traffic.write_bytes(b"\n".join(generated_messages(count, seed=3, malformed_fraction=0.05, start=_now())) + b"\n")
    for name, options in _runners(flink, bounded=True):
        lake, log = work / f"lake-{uuid.uuid4().hex[:6]}", work / "audit.log"
        command = [sys.executable, "-m", "pipelines.cli", "audit", "--input", str(traffic), "--lake", str(lake),
                   *options]  # fmt: skip
        cpu0, flink0, t0 = _children_cpu(), _flink_cpu(flink), time.monotonic()
        with open(log, "ab") as out:
            code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
        seconds = time.monotonic() - t0
        if code != 0:
            print(f"{name}: audit failed ({code}); see {log}", flush=True)
            continue
        _report(f"bounded {name}", count, seconds, _children_cpu() - cpu0 + _flink_cpu(flink) - flink0)


def _now() -> datetime:
    return datetime.now(UTC)


def _in_lake(lake: Path, topic: str) -> int:
    if not lake.is_dir():
        return 0
    con = connect_lake(str(lake))
    source = [f"kafka:{topic}"]
    responses = con.execute("SELECT count(*) FROM responses WHERE origin_source = ?", source).fetchone()[0]
    dead = con.execute("SELECT count(*) FROM dead_letters WHERE origin_source = ?", source).fetchone()[0]
    return responses + dead


def _wait_lake(lake: Path, topic: str, count: int, monitor: subprocess.Popen, timeout_s: float = 600) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and monitor.poll() is None:
        if _in_lake(lake, topic) >= count:
            return True
        time.sleep(0.25)
    return False


def bench_streaming(flink: LocalFlink, bootstrap: str, count: int, work: Path, warm_up: int = 20) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    connection = {"bootstrap_servers": bootstrap}
    for name, options in _runners(flink, bounded=False):
        topic, lake, log = (
            f"gw-bench-flink-{uuid.uuid4().hex[:8]}",
            work / f"lake-{uuid.uuid4().hex[:6]}",
            work / "m.log",
        )
        admin.create_topics([NewTopic(topic, 2, 1)])
        command = [sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
                   "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5", *options]  # fmt: skip
        with open(log, "ab") as out:
            monitor = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            produce_messages(connection, topic, generated_messages(warm_up, seed=1, start=_now()))
            if not _wait_lake(lake, topic, warm_up, monitor):
                print(f"stream {name}: the warm-up never reached the lake; see {log}", flush=True)
                continue
            messages = generated_messages(count, seed=2, malformed_fraction=0.05, start=_now())
            cpu0, flink0, t0 = _group_cpu(monitor.pid), _flink_cpu(flink), time.monotonic()
            produce_messages(connection, topic, messages)
            if not _wait_lake(lake, topic, warm_up + count, monitor):
                print(f"stream {name}: {count} messages did not reach the lake; see {log}", flush=True)
                continue
            seconds = time.monotonic() - t0
            cpu = _group_cpu(monitor.pid) - cpu0 + _flink_cpu(flink) - flink0
            _report(f"stream {name}", count, seconds, cpu)
        finally:
            monitor.terminate()  # the monitor cancels its job (pipelines.runner.stop)
            try:
                monitor.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(monitor.pid, 9)
                monitor.wait()
            admin.delete_topics([topic])
    admin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="responses of the bounded audit (default 1000)")
    parser.add_argument("--stream-count", type=int, default=600, help="responses of the stream (default 600)")
    parser.add_argument("--bootstrap-servers", default=os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP", "127.0.0.1:39092"))
    parser.add_argument("--mode", choices=["both", "bounded", "streaming"], default="both")
    args = parser.parse_args(argv)
    flink = LocalFlink(os.environ.get("GROUNDWATCH_FLINK_HOME", str(Path.home() / ".cache/groundwatch/flink/run")))
    started = not (flink.running() and flink.rest_url and flink.answers())
    if started:
        flink.start(cluster=True)
    print(f"cores {os.cpu_count()}, Flink cluster at {flink.rest_url} (2 slots), job server {flink.endpoint}")
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-flink-") as work:
            if args.mode in ("both", "bounded"):
                bench_bounded(flink, args.count, Path(work))
            if args.mode in ("both", "streaming"):
                bench_streaming(flink, args.bootstrap_servers, args.stream_count, Path(work))
    finally:
        if started:
            flink.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
