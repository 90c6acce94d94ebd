"""Benchmark Kafka -> lake: throughput, end-to-end latency, consumer lag and peak memory, bounded and streaming.

    python scripts/bench_kafka.py [--bootstrap-servers 127.0.0.1:39092] [--count 5000] [--rate 600] \\
        [--window-seconds 10] [--mode both|bounded|streaming|source|producer] [--workers auto|N] \\
        [--max-records-per-run N] [--unattributed]

Without --bootstrap-servers it uses $GROUNDWATCH_KAFKA_BOOTSTRAP, else starts the local broker
(scripts/kafka.sh). Each mode gets a fresh topic (2 partitions) and lake, and runs `groundwatch monitor` as
a child process group so its memory (Python and Prism together) can be sampled.

- bounded: produce N generated responses (5 sentences, 5 passages), then `monitor --until-caught-up`;
  throughput is N over the run's wall time (start-up included), latency is the backlog's age. The monitor
  picks its worker processes from the backlog (`--workers auto`, the default) unless `--workers N` names
  them (N multi-processing workers; 1 = in process); the report says which it used. A backlog above the
  monitor's `--max-records-per-run` (or this script's) is read in passes.
- streaming: start the monitor on Prism, wait until it has written a warm-up window, then produce N at
  `--rate` messages/s with live event times; throughput is N over the time from the first message sent to
  the last one in the lake, so it can never exceed `--rate` and includes one window of waiting. What the
  monitor can sustain is the audit rate: responses audited per second between the 5th and 95th percentile
  of their `audited_at` (stamped when a response is verified, which in a stream is as it arrives). It is
  the produce rate while the monitor keeps up, and its capacity when `--rate` is more than it can take
  (lag then grows). Latency per response: produce time (the Kafka record
  timestamp) to its `audited_at`, and to the moment its Parquet file was published (file mtime), p50/p95.
  CPU: the seconds each of the monitor's processes spent over the same span, by role (the SDK worker of the
  default environment, the audit lanes' workers, Prism, the monitor process), read from /proc, and the
  broker's beside them.

The broker's CPU is counted when it runs on this machine as this user: the process listening at the port of a
bootstrap address on the loopback (`localhost`, 127.x.x.x, `[::1]`); the report names it. It serves the producer,
the monitor's consumer and its review and dead-letter producers. For a broker elsewhere, or one that ended during
the run, the report says its CPU is not counted.

- producer: what groundwatch's producer (`transforms.io.kafka.client.producer`) costs in CPU per message, at
  `--rate` messages/s, flushed every 40 messages as the review and dead-letter sinks flush at each bundle's
  end, and paced without flushes as `groundwatch produce` sends; at its batching delay and at 5 ms.

Consumer lag (end offsets minus the group's committed offsets) is sampled every second and printed.
`--unattributed` produces the same answers without citation markers, citations or claims.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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

from kafka_broker import LocalKafka  # noqa: E402
from process_memory import cpu_by_role, describe, group_cpu, group_rss, listeners, pids_cpu  # noqa: E402

from dashboards.views import connect_lake  # noqa: E402
from pipelines.produce import produce_messages  # noqa: E402
from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses  # noqa: E402


def _admin(bootstrap):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap)


def _create_topic(bootstrap: str, name: str, partitions: int = 2) -> None:
    from kafka.admin import NewTopic

    admin = _admin(bootstrap)
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.close()


def _delete_topics(bootstrap: str, names: list[str]) -> None:
    admin = _admin(bootstrap)
    existing = set(admin.list_topics())
    if doomed := [n for n in names if n in existing]:
        admin.delete_topics(doomed)
    admin.close()


def _messages(count: int, seed: int, start: datetime, rate: float, attributed: bool = True) -> list[bytes]:
    responses = generate_responses(
        count,
        seed=seed,
        start=start,
        seconds_between=1.0 / rate,
        sentences=5,
        passages=5,
        attributed=attributed,
        flaw_rate=FLAWED_FLAW_RATE,  # the traffic the documented figures were measured on
    )
    return [json.dumps(r).encode() for r in responses]


class _Sampler(threading.Thread):
    """Samples, every second, the group's lag and the monitor process group's resident memory."""

    def __init__(self, bootstrap: str, topic: str, group: str, pgid: int):
        super().__init__(daemon=True)
        from kafka import KafkaConsumer, TopicPartition

        self._consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        self._tps = [TopicPartition(topic, p) for p in sorted(self._consumer.partitions_for_topic(topic))]
        self._pgid = pgid
        self.lag: list[tuple[float, int]] = []
        self.peak_rss = 0
        self._halt = threading.Event()
        self._t0 = time.monotonic()

    def run(self):
        while not self._halt.is_set():
            try:
                ends = self._consumer.end_offsets(self._tps)
                lag = sum(ends[tp] - (self._consumer.committed(tp) or 0) for tp in self._tps)
                self.lag.append((time.monotonic() - self._t0, lag))
            except Exception:  # noqa: BLE001 - a sample lost is not worth stopping the benchmark for
                pass
            self.peak_rss = max(self.peak_rss, group_rss(self._pgid))
            self._halt.wait(1.0)

    def stop(self):
        self._halt.set()
        self.join(timeout=5)
        self._consumer.close()


def _monitor(bootstrap: str, topic: str, lake: Path, window: int, *extra: str) -> subprocess.Popen:
    command = [
        sys.executable, "-m", "pipelines.cli", "monitor", "--bootstrap-servers", bootstrap, "--topic", topic,
        "--lake", str(lake), "--group-id", f"bench-{topic}", "--window-seconds", str(window),
        "--review-topic", f"{topic}.review", "--dead-letter-topic", f"{topic}.dead", *extra,
    ]  # fmt: skip
    log = open(lake.parent / f"{topic}.log", "wb")
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)


def _lake_rows(lake: Path, topic: str, table: str = "responses"):
    if not (lake / table).exists():
        return []
    con = connect_lake(str(lake))
    when = "audited_at" if table == "responses" else "received_at"
    return con.execute(
        f"SELECT origin_partition, origin_offset, {when}, filename FROM read_parquet(?, filename = true) "
        "WHERE origin_source = ?",
        [str(lake / table / "**" / "*.parquet"), f"kafka:{topic}"],
    ).fetchall()


def _offsets_in_lake(lake: Path, topic: str) -> set[tuple[int, int]]:
    rows = _lake_rows(lake, topic) + _lake_rows(lake, topic, "dead_letters")
    return {(p, o) for p, o, _, _ in rows}


def _produce_times(bootstrap: str, topic: str) -> dict[tuple[int, int], float]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000)
    times = {(r.partition, r.offset): r.timestamp / 1000.0 for r in consumer}
    consumer.close()
    return times


def _latencies(bootstrap: str, topic: str, lake: Path) -> tuple[list[float], list[float]]:
    produced = _produce_times(bootstrap, topic)
    audited, published, first = [], [], {}
    for partition, offset, audited_at, filename in _lake_rows(lake, topic):
        key = (partition, offset)
        if key in produced and key not in first:
            first[key] = True
            audited.append(audited_at.timestamp() - produced[key])
            published.append(os.path.getmtime(filename) - produced[key])
    return audited, published


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def _report(name: str, count: int, seconds: float, sampler: _Sampler, audited: list[float], published: list[float]):
    print(f"\n== {name} ==")
    print(f"responses            {count}")
    print(f"wall time            {seconds:.1f} s")
    print(f"throughput           {count / seconds:.0f} responses/s")
    print(f"latency audited_at   p50 {_pct(audited, 50):.1f} s   p95 {_pct(audited, 95):.1f} s")
    print(f"latency in the lake  p50 {_pct(published, 50):.1f} s   p95 {_pct(published, 95):.1f} s")
    print(f"peak memory          {sampler.peak_rss / 2**20:.0f} MiB (the monitor process group)")
    series = sampler.lag[:: max(1, len(sampler.lag) // 12)]
    print("consumer lag         " + "  ".join(f"{t:.0f}s:{lag}" for t, lag in series))
    print(f"max lag              {max((lag for _, lag in sampler.lag), default=0)}")


def _log_tail(work: Path, topic: str, lines: int = 25) -> str:
    """The end of a monitor's log, for an error: the log's temporary folder is gone once the error propagates."""
    log = work / f"{topic}.log"
    tail = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["(no log)"]
    return "the end of its log:\n" + "\n".join(tail)


def _wait_lake(lake: Path, topic: str, count: int, process: subprocess.Popen, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(_offsets_in_lake(lake, topic)) >= count:
            return time.monotonic()
        if process.poll() not in (None, 0):
            raise RuntimeError(f"monitor exited with {process.returncode}; {_log_tail(lake.parent, topic)}")
        time.sleep(0.5)
    raise RuntimeError(f"the lake did not get {count} responses within {timeout_s:.0f}s")


def _said(work: Path, topic: str, first_word: str) -> list[str]:
    """The lines of the monitor's output that start with `first_word` (`runner`, `pass`, `passes`, ...)."""
    log = work / f"{topic}.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return [line for line in lines if line.split(None, 1)[:1] == [first_word]]


def _runner_line(work: Path, topic: str) -> str:
    """Where the monitor says it ran (its `runner` line: runner, workers, backlog)."""
    said = _said(work, topic, "runner")
    return said[0].split(None, 1)[1] if said else "runner not reported"


def _children_cpu() -> float:
    """CPU seconds of the finished children (the monitor, and the worker processes it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _machine_busy() -> float:
    """CPU seconds the whole machine has been busy since boot (all cores, from /proc/stat)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _broker_spent(before: float | None, after: float | None) -> float | None:
    """The broker's CPU seconds between two `pids_cpu` readings; None when either lacks it (not found, or ended)."""
    return None if before is None or after is None else after - before


def _broker_figure(broker: set[int], spent: float | None, count: int) -> str:
    """The broker's CPU over a run, per response, or why it was not counted."""
    if not broker:
        return "not counted (no process of this user listens at the bootstrap address on this machine)"
    if spent is None:
        return f"not counted (its process {', '.join(map(str, sorted(broker)))} ended during the run)"
    return f"{spent:.1f} s = {1000 * spent / count:.2f} ms per response (process {describe(broker)})"


def _worker_flags(workers: str) -> list[str]:
    if workers == "auto":
        return []
    if int(workers) == 1:
        return ["--direct_num_workers=1"]
    return [f"--direct_num_workers={int(workers)}", "--direct_running_mode=multi_processing"]


def bench_bounded(
    bootstrap: str,
    count: int,
    window: int,
    work: Path,
    workers: str = "auto",
    per_run: int | None = None,
    attributed: bool = True,
) -> None:
    topic = f"bench-bounded-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic)
    try:
        produce_messages(
            {"bootstrap_servers": bootstrap}, topic, _messages(count, 3, datetime.now(UTC), 1000.0, attributed)
        )
        lake = work / topic
        broker = listeners(bootstrap)
        started, cpu_before, busy_before = time.monotonic(), _children_cpu(), _machine_busy()
        broker_before = pids_cpu(broker)
        passes = [f"--max-records-per-run={per_run}"] if per_run else []
        process = _monitor(bootstrap, topic, lake, window, "--until-caught-up", *_worker_flags(workers), *passes)
        sampler = _Sampler(bootstrap, topic, f"bench-{topic}", process.pid)
        sampler.start()
        if process.wait() != 0:
            raise RuntimeError(f"bounded monitor failed; {_log_tail(work, topic)}")
        seconds, cpu = time.monotonic() - started, _children_cpu() - cpu_before
        broker_spent = _broker_spent(broker_before, pids_cpu(broker))
        others = _machine_busy() - busy_before - cpu - (broker_spent or 0.0)
        sampler.stop()
        latencies = _latencies(bootstrap, topic, lake)
        load = "/".join(f"{x:.2f}" for x in os.getloadavg())
        _report(f"bounded (--until-caught-up; {_runner_line(work, topic)})", count, seconds, sampler, *latencies)
        print(f"CPU                  {cpu:.1f} s (the monitor and its workers) = {count / cpu:.0f} responses/CPU s")
        print(f"load average         {load} (1/5/15 min, at the end, this run included; {os.cpu_count()} cores)")
        print(f"broker CPU           {_broker_figure(broker, broker_spent, count)}")
        print(f"other CPU            {others:.1f} s during the run (everything else on the machine)")
        for line in _said(work, topic, "pass") + _said(work, topic, "offset"):
            print(f"monitor said         {line}")  # its passes, a pass's lake shortfall or uncommitted offsets
    finally:
        _delete_topics(bootstrap, [topic, f"{topic}.review", f"{topic}.dead"])


def bench_source_only(bootstrap: str, count: int) -> None:
    """The Kafka source and the parser alone (no verification), in process: what the Kafka side costs."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from transforms.ingest.parse import PARSED, ParseResponses
    from transforms.io.kafka.source import MESSAGES, ReadKafkaMessages

    topic = f"bench-source-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic)
    try:
        produce_messages({"bootstrap_servers": bootstrap}, topic, _messages(count, 6, datetime.now(UTC), 1000.0))
        started = time.monotonic()
        with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
            read = p | ReadKafkaMessages({"bootstrap_servers": bootstrap}, [topic], start_from="earliest")
            parsed = (read[MESSAGES] | ParseResponses())[PARSED]
            _ = parsed | "Drop" >> beam.Map(lambda _: None)
        seconds = time.monotonic() - started
        print("\n== Kafka source + ParseResponses alone (FnApiRunner) ==")
        print(f"responses            {count}\nwall time            {seconds:.1f} s")
        print(f"throughput           {count / seconds:.0f} responses/s")
    finally:
        _delete_topics(bootstrap, [topic])


def bench_producer(bootstrap: str, count: int, rate: float) -> None:
    """CPU per message of `producer()` at `rate`: flushed every 40 messages (a sink's bundles) or only at the end."""
    from transforms.io.kafka.client import PRODUCER_LINGER_MS, producer

    topic = f"bench-producer-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic)
    messages = _messages(count, 8, datetime.now(UTC), rate)
    print(f"\n== producer, {count} messages at {rate:.0f}/s: CPU ms per message ==")
    try:
        for flush_every, pattern in ((40, "flushed every 40 (sinks)"), (None, "paced, one flush (produce)")):
            for linger_ms in (5, PRODUCER_LINGER_MS):
                sender = producer({"bootstrap_servers": bootstrap}, linger_ms=linger_ms)
                sender.send(topic, value=b"warm-up").get(timeout=30)
                cpu, started = time.process_time(), time.monotonic()
                for i, raw in enumerate(messages):
                    if (ahead := started + i / rate - time.monotonic()) > 0:
                        time.sleep(ahead)
                    sender.send(topic, value=raw)
                    if flush_every and i % flush_every == flush_every - 1:
                        sender.flush()
                sender.flush()
                spent = time.process_time() - cpu
                sender.close()
                print(f"{pattern:<28} linger {linger_ms:>3} ms   {1000 * spent / count:.3f}")
    finally:
        _delete_topics(bootstrap, [topic])


def bench_streaming(bootstrap: str, count: int, rate: float, window: int, work: Path, attributed: bool = True) -> None:
    topic = f"bench-stream-{uuid.uuid4().hex[:8]}"
    _create_topic(bootstrap, topic)
    lake = work / topic
    process = _monitor(bootstrap, topic, lake, window)
    try:
        sampler = _Sampler(bootstrap, topic, f"bench-{topic}", process.pid)
        sampler.start()
        warmup = 20
        produce_messages({"bootstrap_servers": bootstrap}, topic, _messages(warmup, 4, datetime.now(UTC), 20.0))
        _wait_lake(lake, topic, warmup, process, timeout_s=300)
        broker = listeners(bootstrap)
        started, cpu_before, broker_before = time.monotonic(), group_cpu(process.pid), pids_cpu(broker)
        produce_messages(
            {"bootstrap_servers": bootstrap}, topic, _messages(count, 5, datetime.now(UTC), rate, attributed), rate=rate
        )
        produced_in = time.monotonic() - started
        finished = _wait_lake(lake, topic, warmup + count, process, timeout_s=600)
        spent = cpu_by_role(cpu_before, group_cpu(process.pid))
        broker_spent = _broker_spent(broker_before, pids_cpu(broker))
        sampler.stop()
        print(f"\n(produced {count} at {count / produced_in:.0f}/s target {rate:.0f}/s)")
        audited_at = sorted(a.timestamp() for _, _, a, _ in _lake_rows(lake, topic))[warmup:]
        if len(audited_at) >= 20:
            low, high = audited_at[len(audited_at) // 20], audited_at[-len(audited_at) // 20 - 1]
            print(f"audit rate           {0.9 * len(audited_at) / max(high - low, 1e-3):.0f} responses/s (middle 90%)")
        _report(
            f"streaming (Prism, {window}s windows)",
            count,
            finished - started,
            sampler,
            *_latencies(bootstrap, topic, lake),
        )
        total = sum(spent.values())
        print(
            f"CPU                  {total:.1f} s = {1000 * total / count:.2f} ms per response (the monitor's processes,"
        )
        print("                     from the first message produced to the last in the lake)")
        for role, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            print(f"  {role:<33}{seconds:6.1f} s = {1000 * seconds / count:.2f} ms per response")
        print(f"broker, beside them  {_broker_figure(broker, broker_spent, count)}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()
        _delete_topics(bootstrap, [topic, f"{topic}.review", f"{topic}.dead"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", default=os.environ.get("GROUNDWATCH_KAFKA_BOOTSTRAP"))
    parser.add_argument("--count", type=int, default=5000, help="Responses per run. Default 5000.")
    parser.add_argument("--rate", type=float, default=600.0, help="Streaming produce rate, per second. Default 600.")
    parser.add_argument("--window-seconds", type=int, default=10, help="Window length. Default 10.")
    parser.add_argument("--mode", choices=("both", "bounded", "streaming", "source", "producer"), default="both")
    parser.add_argument(
        "--workers",
        default="auto",
        help="Bounded run: 'auto' (the monitor chooses from the backlog) or N worker processes. Default auto.",
    )
    parser.add_argument(
        "--max-records-per-run", type=int, help="Bounded run: messages per catch-up pass. Default: the monitor's."
    )
    parser.add_argument(
        "--unattributed",
        action="store_true",
        help="Answers without citation markers, citations or claims (only their sentences to verify).",
    )
    args = parser.parse_args(argv)
    bootstrap = args.bootstrap_servers or LocalKafka().start()
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as work:
        if args.mode in ("both", "source"):
            bench_source_only(bootstrap, args.count)
        if args.mode in ("both", "bounded"):
            per_run = args.max_records_per_run
            bench_bounded(
                bootstrap, args.count, args.window_seconds, Path(work), args.workers, per_run, not args.unattributed
            )
        if args.mode in ("both", "streaming"):
            bench_streaming(bootstrap, args.count, args.rate, args.window_seconds, Path(work), not args.unattributed)
        if args.mode == "producer":
            bench_producer(bootstrap, args.count, args.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
