"""Benchmark groundwatch on Flink worker pools beside the local runners: responses/s and CPU per response.

    python scripts/bench_flink.py [--count 20000] [--rate 40] [--seconds 60] \\
        [--bootstrap-servers 127.0.0.1:39092] [--mode both|bounded|streaming] [--rounds 1] [--warm-up 2000]

The Flink runs are on a local cluster of two TaskManagers of one slot, each with a Beam Python worker pool
(`scripts/flink_cluster.py start --cluster --taskmanagers 2`; started and stopped here unless one with pools
runs), at parallelism 1 (one TaskManager and its pool work) and 2, with the flags `scripts/flink.sh flags`
prints (`--environment_type=EXTERNAL`).

- bounded: `groundwatch audit` of `--count` generated attributed responses (a JSONL file) on the FnApiRunner (its
  default worker choice: two worker processes here) and on Flink. Responses/s is lines over the command's wall
  time, start-up and the job's submission included; for Flink it also prints the rate over the job's own
  duration (Flink's REST API: from the job's creation on the JobManager to its end). Last, the two targets'
  ratios: Flink's responses/s at parallelism 2 over parallelism 1, and Flink's CPU per response over the
  FnApiRunner's. With `--rounds N` the three runs are repeated N times and the ratios' medians printed: they
  vary from run to run by several per cent.
  Each bounded run is also split into its phases, from the CPU of the Python workers sampled every half second
  (the pools and their workers on Flink, the command's worker processes on the FnApiRunner, or the command itself
  when it audits in process, below 4 MiB of input, its start-up then counted as work): the start (until
  the workers first use half their cores together: half a core at parallelism 1, one at parallelism 2 and on the
  FnApiRunner's two worker processes), the work (until they last do) and the tail (the rest). The work phase's
  ratio is the scaling of the work itself, apart from what each run pays once (the command's start-up, the
  job's submission and deployment, the workers' start, the end of the job).
- streaming: `groundwatch monitor` on Prism and on Flink; after a warm-up batch is in the lake, `--rate`
  messages a second (5 % malformed) are produced for `--seconds`, and responses/s is their number over the time
  from the first sent to the last in the lake (5 s windows: the last window's close included). At a rate the
  runner keeps up with, that is the rate; the CPU per response is the figure to read.

Before the runs, an audit of `--warm-up` responses (default 2,000) at parallelism 2 runs on the cluster unmeasured,
so that the figures are those of a cluster that has run jobs before: on a cluster's first jobs its JVMs are
still compiling their hot code, which at parallelism 2 takes CPU from the pools (`--warm-up 0` measures that).

CPU per response counts every process involved, children included (`utime + stime + cutime + cstime` from /proc):
the groundwatch command and what it waited for (`RUSAGE_CHILDREN`), the live processes of its process group
(Prism, its SDK workers), Flink's JobManager, TaskManagers and job server, and the worker pools with their
workers (live, and those they reaped), and in a stream the Kafka broker's JVM when it listens at the bootstrap
address on this machine as this user (the part `broker`, in the total too; left out if it ended during the run).
It is printed split into those parts. The machine's other load is not
counted, but it does slow the figures: read them beside each other, with the load average printed at each run.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from flink_cluster import DEFAULT_HOME, DEFAULT_JOB_PORT, DEFAULT_POOL_PORT, DEFAULT_REST_PORT, LocalFlink  # noqa: E402
from process_memory import cpu_seconds, describe, listeners, pids_cpu  # noqa: E402

from dashboards.views import connect_lake  # noqa: E402
from pipelines.monitor import find_prism  # noqa: E402
from pipelines.produce import generated_messages, produce_messages  # noqa: E402
from pipelines.runner.bounded import local_workers  # noqa: E402

TASK_MANAGERS = 2


def _groups_cpu(pgids: list[int]) -> dict[int, float]:
    """CPU seconds of the live processes of each process group in `pgids` (and of the children they reaped), in
    one pass over /proc."""
    totals = dict.fromkeys(pgids, 0.0)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            pgid = os.getpgid(int(pid))
        except OSError:
            continue
        if pgid in totals:
            totals[pgid] += cpu_seconds(int(pid), reaped=True) or 0.0
    return totals


def _group_cpu(pgid: int) -> float:
    """CPU seconds of the live processes of process group `pgid` (and of the children they reaped)."""
    return _groups_cpu([pgid])[pgid]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cluster_cpu(flink: LocalFlink) -> dict[str, float]:
    """CPU seconds so far of the cluster's JVMs and of its worker pools with their workers (each a process group
    of its own)."""
    pids = flink._state().get("pids", {})
    cpu = _groups_cpu(list(pids.values()))
    groups = {"jvm": 0.0, "pools": 0.0}
    for role, pid in pids.items():
        groups["pools" if role.startswith("worker_pool") else "jvm"] += cpu[pid]
    return groups


class CpuMeter:
    """CPU seconds used between `start()` and `stop()` by the command (and its group), the cluster's parts and,
    when it is given (a stream's), the Kafka broker's processes."""

    def __init__(self, flink: LocalFlink | None, pgid: int | None = None, broker: set[int] | None = None):
        self._flink, self._pgid, self._broker = flink, pgid, broker

    def _now(self) -> dict[str, float]:
        parts = _cluster_cpu(self._flink) if self._flink else {"jvm": 0.0, "pools": 0.0}
        command = _children_cpu() + (_group_cpu(self._pgid) if self._pgid else 0.0)
        now = {"command": command, **parts}
        if self._broker and (broker := pids_cpu(self._broker)) is not None:
            now["broker"] = broker
        return now

    def start(self) -> None:
        self._start = self._now()

    def stop(self) -> dict[str, float]:
        """Each part's CPU seconds since `start()`; the broker's only when its process ran throughout."""
        end = self._now()
        if "broker" in self._start and "broker" not in end:
            print("the broker's process ended during the run: its CPU is not counted in this one", flush=True)
        return {part: end[part] - self._start[part] for part in end if part in self._start}


def _workers_cpu(flink: LocalFlink | None, command: int, local_workers: int):
    """A run's Python workers' CPU seconds so far, as a function: on Flink the worker pools' and their workers';
    on the FnApiRunner those of the group the command `command` leads except the command's own (its worker
    processes, live or reaped), or the command's own when it audits in process (`local_workers` 1)."""
    if flink is not None:
        return lambda: _cluster_cpu(flink)["pools"]
    if local_workers == 1:
        return lambda: cpu_seconds(command) or 0.0
    return lambda: _group_cpu(command) - (cpu_seconds(command) or 0.0)


def busy_span(samples: list[tuple[float, float]], cores: float = 0.5) -> tuple[float, float] | None:
    """The first and last moment the sampled CPU ran at `cores` or more (cores in all, e.g. 1.0 for two
    workers at half a core each): `samples` are (seconds, cumulative CPU seconds) in time order. None if it
    never did."""
    busy = [
        (t0, t1)
        for (t0, c0), (t1, c1) in zip(samples, samples[1:], strict=False)
        if t1 > t0 and (c1 - c0) / (t1 - t0) >= cores
    ]
    return (busy[0][0], busy[-1][1]) if busy else None


def phases_of(samples: list[tuple[float, float]], cores: float) -> tuple[tuple[float, float, float], float] | None:
    """A run's phases from its workers' sampled CPU (see `busy_span`): (start, work, tail) in seconds, and the
    workers' CPU seconds during the work; None if they never used `cores`. Each end of the work is known to the
    sampling interval."""
    span = busy_span(samples, cores)
    if span is None:
        return None
    first, last = span
    cpu = dict(samples)
    return (first, last - first, samples[-1][0] - last), cpu[last] - cpu[first]


class PhaseMeter:
    """Samples the CPU of a run's Python workers (`workers()`: cumulative CPU seconds) every `every` seconds
    from `start()` to `stop()`, which returns the run's phases: (start, work, tail) in seconds, the work being
    the span in which the workers used `cores` or more, and their CPU seconds during it; None if they never did."""

    def __init__(self, workers, *, cores: float, every: float = 0.5):
        self._workers, self._cores, self._every = workers, cores, every
        self._samples: list[tuple[float, float]] = []
        self._done = threading.Event()

    def _sample(self) -> None:
        self._samples.append((time.monotonic() - self._t0, self._workers()))

    def _run(self) -> None:
        while not self._done.wait(self._every):
            self._sample()

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> tuple[tuple[float, float, float], float] | None:
        self._done.set()
        self._thread.join()
        self._sample()
        return phases_of(self._samples, self._cores)


def _report(name: str, count: int, seconds: float, cpu: dict[str, float]) -> None:
    total = sum(cpu.values())
    parts = "  ".join(f"{part} {1000 * value / count:5.1f}" for part, value in cpu.items())
    print(
        f"{name:<24} {count:>6} responses {seconds:7.1f} s {count / seconds:7.1f} responses/s  "
        f"CPU {total:7.1f} s = {1000 * total / count:5.1f} ms/response ({parts})  load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def _runners(flink: LocalFlink, *, bounded: bool) -> list[tuple[str, list[str], LocalFlink | None]]:
    """The runs of a mode: the local runner (FnApiRunner bounded, Prism streaming), then Flink at 1 and 2."""
    prism = ["--runner=PrismRunner", f"--prism_location={find_prism()}"]
    local = ("FnApiRunner", [], None) if bounded else ("Prism", prism, None)
    return [local, *((f"Flink p={p} pools", flink.runner_flags(parallelism=p), flink) for p in (1, 2))]


def _parallelism(options: list[str]) -> int | None:
    """The `--parallelism` of a run's options; None for the local runner's."""
    return next((int(o.split("=", 1)[1]) for o in options if o.startswith("--parallelism=")), None)


def _last_job_seconds(flink: LocalFlink) -> float | None:
    """How long the cluster's most recently started job ran (Flink's own duration: from its creation on the
    JobManager to its end, so without the command's start-up and the job's submission); None if none is found."""
    jobs = flink.rest("/jobs/overview").get("jobs", [])
    return max(jobs, key=lambda job: job["start-time"])["duration"] / 1000 if jobs else None


_SCALING = {  # the figure of each run, and what its ratio at parallelism 2 over 1 is called
    "rate": "parallelism 2 / 1, responses/s of the whole command",
    "job_rate": "parallelism 2 / 1, while the job ran",
    "work_rate": "parallelism 2 / 1, over the work phase",
}


def _ratios(runs: dict) -> dict[str, float]:
    """The figures the targets are about, from one round's runs (keyed by parallelism, "local" for the
    FnApiRunner): Flink's scaling from parallelism 1 to 2, and its CPU per response against the FnApiRunner's."""
    out = {}
    if {1, 2} <= runs.keys():
        for figure, what in _SCALING.items():
            if runs[1].get(figure) and runs[2].get(figure):
                out[what] = runs[2][figure] / runs[1][figure]
    if "local" in runs:
        for p in sorted(k for k in runs if k != "local"):
            out[f"CPU per response, Flink parallelism {p} / FnApiRunner"] = runs[p]["cpu_ms"] / runs["local"]["cpu_ms"]
    return out


def _write_traffic(path: Path, count: int, *, seed: int) -> Path:
    """`count` generated responses as a JSONL file at `path`."""
    path.write_bytes(b"\n".join(generated_messages(count, seed=seed, start=_now())) + b"\n")
    return path


def _audit_command(traffic: Path, lake: Path, options: list[str]) -> list[str]:
    """`groundwatch audit` of `traffic` into `lake` with the runner's `options`."""
    return [sys.executable, "-m", "pipelines.cli", "audit", "--input", str(traffic), "--lake", str(lake), *options]


def warm_up(flink: LocalFlink, count: int, work: Path) -> None:
    """An audit of `count` responses at parallelism 2, not measured: its JVMs compile their hot code, as those
    of a cluster that has run jobs before have. A cluster's first jobs measured cold cost several seconds more of
    JVM CPU, which at parallelism 2 the JVMs take from the pools' two cores."""
    traffic = _write_traffic(work / "warm-up.jsonl", count, seed=4)
    command = _audit_command(traffic, work / "lake-warm-up", flink.runner_flags(parallelism=2))
    t0 = time.monotonic()
    with open(work / "audit.log", "ab") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    print(f"warm-up: {count} responses at parallelism 2 in {time.monotonic() - t0:.1f} s, not measured"
          + (f" (it failed: {code})" if code else ""), flush=True)  # fmt: skip


def _bounded_run(name: str, options: list[str], cluster, traffic: Path, count: int, work: Path) -> dict | None:
    """One measured audit of `traffic`: prints its figures and returns them (None if it failed)."""
    log = work / "audit.log"
    command = _audit_command(traffic, work / f"lake-{uuid.uuid4().hex[:6]}", options)
    # The FnApiRunner's worker processes, as the audit chooses them (`groundwatch audit`'s default options).
    local = local_workers(traffic.stat().st_size, os.cpu_count() or 1)
    workers = _parallelism(options) or local
    meter, t0 = CpuMeter(cluster), time.monotonic()
    meter.start()
    with open(log, "ab") as out:
        # A session of its own, so that its worker processes can be found; killed if this script stops early.
        audit = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            phases = PhaseMeter(_workers_cpu(cluster, audit.pid, local), cores=workers / 2)
            phases.start()
            code = audit.wait()
            split = phases.stop()
        except BaseException:
            os.killpg(audit.pid, signal.SIGTERM)
            audit.wait()
            raise
    seconds, cpu = time.monotonic() - t0, meter.stop()
    if code != 0:
        print(f"{name}: audit failed ({code}); see {log}", flush=True)
        return None
    _report(f"bounded {name}", count, seconds, cpu)
    figures = {"rate": count / seconds, "cpu_ms": 1000 * sum(cpu.values()) / count}
    if cluster is not None and (job_seconds := _last_job_seconds(cluster)):
        figures["job_rate"] = count / job_seconds
        print(f"  the job alone ran {job_seconds:.1f} s = {count / job_seconds:.1f} responses/s", flush=True)
    if split is not None:
        (start, busy, tail), busy_cpu = split
        figures["work_rate"] = count / busy
        print(
            f"  phases: start {start:.1f} s, work {busy:.1f} s = {count / busy:.1f} responses/s, tail {tail:.1f} s;"
            f" the workers' CPU during the work {1000 * busy_cpu / count:.2f} ms/response",
            flush=True,
        )
    return figures


def bench_bounded(flink: LocalFlink, count: int, work: Path, rounds: int = 1) -> None:
    """`rounds` rounds of the FnApiRunner, Flink at parallelism 1 and 2 on the same traffic; the ratios of each
    round, and their medians over the rounds (the figures vary from run to run by several per cent)."""
    traffic = _write_traffic(work / "traffic.jsonl", count, seed=3)
    by_round = []
    for round_no in range(1, rounds + 1):
        if rounds > 1:
            print(f"round {round_no} of {rounds}", flush=True)
        runs = {}
        for name, options, cluster in _runners(flink, bounded=True):
            figures = _bounded_run(name, options, cluster, traffic, count, work)
            if figures is not None:
                runs[_parallelism(options) or "local"] = figures
        by_round.append(_ratios(runs))
        for what, ratio in by_round[-1].items():
            print(f"{what}: {ratio:.2f} times", flush=True)
    if rounds > 1:
        for what, values in by_ratio(by_round).items():
            listed = ", ".join(f"{v:.2f}" for v in values)
            print(f"median over {len(values)} rounds, {what}: {statistics.median(values):.2f} ({listed})", flush=True)


def by_ratio(by_round: list[dict[str, float]]) -> dict[str, list[float]]:
    """Each ratio's values over the rounds that have it (a round whose run failed lacks some), in round order."""
    names = dict.fromkeys(name for ratios in by_round for name in ratios)
    return {name: [ratios[name] for ratios in by_round if name in ratios] for name in names}


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
        time.sleep(0.5)
    return False


def _stream_once(name, options, cluster, bootstrap, rate, seconds, work, admin, warm_up: int = 20) -> None:
    from kafka.admin import NewTopic

    topic, lake, log = f"gw-bench-flink-{uuid.uuid4().hex[:8]}", work / f"lake-{uuid.uuid4().hex[:6]}", work / "m.log"
    admin.create_topics([NewTopic(topic, 2, 1)])
    connection, count = {"bootstrap_servers": bootstrap}, int(rate * seconds)
    command = [sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
               "--lake", str(lake), "--group-id", f"g-{topic}", "--window-seconds", "5", *options]  # fmt: skip
    with open(log, "ab") as out:
        monitor = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        produce_messages(connection, topic, generated_messages(warm_up, seed=1, start=_now()))
        if not _wait_lake(lake, topic, warm_up, monitor):
            print(f"stream {name}: the warm-up never reached the lake; see {log}", flush=True)
            return
        messages = generated_messages(count, seed=2, malformed_fraction=0.05, start=_now())
        meter, t0 = CpuMeter(cluster, monitor.pid, listeners(bootstrap)), time.monotonic()
        meter.start()
        produce_messages(connection, topic, messages, rate=rate)
        if not _wait_lake(lake, topic, warm_up + count, monitor):
            print(f"stream {name}: {count} messages did not reach the lake; see {log}", flush=True)
            return
        _report(f"stream {name}", count, time.monotonic() - t0, meter.stop())
    finally:
        monitor.terminate()  # the monitor cancels its job (pipelines.runner.stop)
        try:
            monitor.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(monitor.pid, 9)
            monitor.wait()
        admin.delete_topics([topic])


def bench_streaming(flink: LocalFlink, bootstrap: str, rate: float, seconds: float, work: Path) -> None:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    broker = listeners(bootstrap)
    if broker:
        print(f"the broker at {bootstrap}: process {describe(broker)}, its CPU counted as the part 'broker'")
    else:
        print(f"the broker at {bootstrap} is not a process of this user on this machine: its CPU is not counted")
    try:
        for name, options, cluster in _runners(flink, bounded=False):
            _stream_once(name, options, cluster, bootstrap, rate, seconds, work, admin)
    finally:
        admin.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="responses of the bounded audit (default 20000)")
    parser.add_argument("--rate", type=float, default=40.0, help="messages a second of the stream (default 40)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the stream is fed (default 60)")
    parser.add_argument("--bootstrap-servers", default=os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP", "127.0.0.1:39092"))
    parser.add_argument("--mode", choices=["both", "bounded", "streaming"], default="both")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds of the bounded runs, with the ratios' medians (default 1)"
    )
    parser.add_argument(
        "--warm-up",
        type=int,
        default=2000,
        metavar="N",
        help="responses of an unmeasured audit on the cluster before the runs (default 2000; 0: measure a cold "
        "cluster)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.warm_up < 0 or args.count < 1:
        parser.error("--rounds and --count must be at least 1, --warm-up at least 0")
    env = os.environ.get
    flink = LocalFlink(
        env("GROUNDWATCH_FLINK_HOME", str(DEFAULT_HOME)),
        job_port=int(env("GROUNDWATCH_FLINK_JOB_PORT", DEFAULT_JOB_PORT)),
        rest_port=int(env("GROUNDWATCH_FLINK_REST_PORT", DEFAULT_REST_PORT)),
        pool_port=int(env("GROUNDWATCH_FLINK_POOL_PORT", DEFAULT_POOL_PORT)),
        task_managers=TASK_MANAGERS,
        slots=1,
    )
    state = flink._state()
    started = not (flink.running() and flink.answers() and state.get("task_managers") == TASK_MANAGERS)
    if started:
        flink.start(cluster=True)
    print(f"cores {os.cpu_count()}, Flink cluster at {flink.rest_url}: {TASK_MANAGERS} TaskManagers of 1 slot, "
          f"worker pools {[pool['address'] for pool in flink.pools()]}, job server {flink.endpoint}")  # fmt: skip
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-flink-") as work:
            if args.warm_up > 0:
                warm_up(flink, args.warm_up, Path(work))
            if args.mode in ("both", "bounded"):
                bench_bounded(flink, args.count, Path(work), args.rounds)
            if args.mode in ("both", "streaming"):
                bench_streaming(flink, args.bootstrap_servers, args.rate, args.seconds, Path(work))
    finally:
        if started:
            flink.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
