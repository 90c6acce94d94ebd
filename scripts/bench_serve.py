#!/usr/bin/env python3
"""Benchmark `groundwatch serve`: requests/s and p50/p99 latency of POST /v1/verify against the same audit in process.

    python scripts/bench_serve.py [--requests 600] [--workers 1,2] [--concurrency 1,8] [--responses 200]

Generates synthetic responses with 5 answer sentences and 5 evidence passages (`pipelines.traffic.synthetic`),
times the audit in this process first (`parse_message` + `audit_response` with the pipeline's steps, through
`pipelines.runner.inline.InlineAuditor`: what the service runs per request; after `settle_garbage_collector`,
as the service's workers do), then starts `groundwatch serve`
with the heuristic on 1 and 2 worker processes and sends the same bodies at each concurrency from a small
keep-alive HTTP/1.1 client on asyncio (cheaper per request than httpx, so the client steals less CPU from the
server on a small machine). Prints, per setting, requests/s, p50/p99 latency as the client sees it, p50 of the
server's own time (its Server-Timing header), and the service's overhead over the in-process audit at
concurrency 1: (p50 latency - in-process p50) / in-process p50, the in-process audit timed again just before
each concurrency-1 run so that both see the same load. On a busy machine wall-clock latency mostly measures
waiting for a core, so it also prints CPU per request: the service's processes (from /proc, parent and
workers) against the in-process audit's own CPU time, and their ratio. Not a test: figures depend on the
machine's load (the CPU figures much less than the wall-clock ones).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.runner.inline import InlineAuditor  # noqa: E402
from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses  # noqa: E402
from transforms.audit.stages import settle_garbage_collector  # noqa: E402


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def in_process(auditor: InlineAuditor, bodies: list[bytes], repeats: int) -> tuple[list[float], float]:
    """Wall-clock ms of each audit, and CPU ms per audit."""
    for body in bodies[:20]:  # warm up: tables, caches
        auditor.audit(auditor.parse(body))
    times, cpu = [], time.process_time()
    for i in range(repeats):
        body = bodies[i % len(bodies)]
        started = time.perf_counter()
        auditor.audit(auditor.parse(body))
        times.append((time.perf_counter() - started) * 1000)
    return times, (time.process_time() - cpu) * 1000 / repeats


_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _tree_cpu_ms(pid: int) -> float:
    """User + system CPU of `pid` and its descendants, in ms (from /proc)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) * _TICK_MS
            for task in os.listdir(f"/proc/{p}/task"):
                todo.extend(int(c) for c in open(f"/proc/{p}/task/{task}/children").read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


async def _connection(port: int, bodies: list[bytes], start: int, count: int, latencies: list, server_ms: list):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for i in range(start, start + count):
        body = bodies[i % len(bodies)]
        head = "POST /v1/verify HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        head += f"content-length: {len(body)}\r\n\r\n"
        started = time.perf_counter()
        writer.write(head.encode() + body)
        headers = await reader.readuntil(b"\r\n\r\n")
        lines = headers.decode().split("\r\n")
        if not lines[0].startswith("HTTP/1.1 200"):
            raise RuntimeError(f"unexpected reply: {lines[0]}")
        fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        await reader.readexactly(int(fields["content-length"]))
        latencies.append((time.perf_counter() - started) * 1000)
        server_ms.append(float(fields["server-timing"].split("dur=")[1]))
    writer.close()


async def _load(port: int, bodies: list[bytes], requests: int, concurrency: int) -> tuple[float, list, list]:
    latencies, server_ms = [], []
    per = requests // concurrency
    started = time.perf_counter()
    await asyncio.gather(*(_connection(port, bodies, c * per, per, latencies, server_ms) for c in range(concurrency)))
    return time.perf_counter() - started, latencies, server_ms


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(workers: int) -> tuple[subprocess.Popen, int]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    command = [sys.executable, "-m", "pipelines.cli", "serve", "--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.3)
    else:
        process.kill()
        raise RuntimeError("the service did not start")
    return process, port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600, help="Requests per setting (after a warm-up).")
    parser.add_argument("--responses", type=int, default=200, help="Distinct synthetic responses sent in turn.")
    parser.add_argument("--workers", default="1,2", help="Worker process counts to try. Default 1,2.")
    parser.add_argument("--concurrency", default="1,8", help="Client connections to try. Default 1,8.")
    args = parser.parse_args()
    bodies = [
        json.dumps(r).encode()
        for r in generate_responses(args.responses, sentences=5, passages=5, flaw_rate=FLAWED_FLAW_RATE)
    ]
    auditor = InlineAuditor("heuristic")
    settle_garbage_collector()  # as the service's workers do at start-up
    local, local_cpu = in_process(auditor, bodies, args.requests)
    local_p50 = statistics.median(local)
    print(f"responses: 5 sentences, 5 passages, {len(bodies)} distinct, {statistics.mean(map(len, bodies)):.0f} B each")
    print(f"in process: p50 {local_p50:.2f} ms, p99 {_percentile(local, 0.99):.2f} ms, CPU {local_cpu:.2f} ms")
    columns = ("workers", "conc", "req/s", "p50 ms", "p99 ms", "server p50", "local p50", "overhead", "CPU/req")
    widths = (7, 4, 7, 7, 7, 10, 9, 8, 8)
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)), " local CPU (CPU overhead)")
    for workers in (int(w) for w in args.workers.split(",")):
        process, port = _start(workers)
        try:
            asyncio.run(_load(port, bodies, 8 * 20, 8))  # warm up every worker
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                first = concurrency == 1
                if first:  # the in-process audit again, under the same load as this run
                    local, local_cpu = in_process(auditor, bodies, args.requests)
                    local_p50 = statistics.median(local)
                cpu_before = _tree_cpu_ms(process.pid)
                elapsed, latencies, server_ms = asyncio.run(_load(port, bodies, args.requests, concurrency))
                cpu = (_tree_cpu_ms(process.pid) - cpu_before) / len(latencies)
                p50 = statistics.median(latencies)
                cells = (
                    workers,
                    concurrency,
                    f"{len(latencies) / elapsed:.0f}",
                    f"{p50:.2f}",
                    f"{_percentile(latencies, 0.99):.2f}",
                    f"{statistics.median(server_ms):.2f}",
                    f"{local_p50:.2f}" if first else "",
                    f"{(p50 - local_p50) / local_p50:+.0%}" if first else "",
                    f"{cpu:.2f}",
                )
                cpu_overhead = f"  {local_cpu:.2f} ({(cpu - local_cpu) / local_cpu:+.0%})" if first else ""
                print(" ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)) + cpu_overhead)
        finally:
            process.terminate()
            process.wait(timeout=60)


if __name__ == "__main__":
    main()
