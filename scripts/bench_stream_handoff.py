#!/usr/bin/env python3
"""Benchmark what a stream's audit lanes hand the rest of the graph: CPU ms per response on each side.

    python scripts/bench_stream_handoff.py [--responses 1000] [--rounds 3] [--healthy]

In `groundwatch monitor` each audit lane is a process of its own, and the rest of the graph (the read, the
dedupe per window, the window metrics, the lake files) runs in one more. What crosses between them is
encoded by Beam's coder (`FastPrimitivesCoder`, which pickles what it does not know) once out of the lane and
twice more through the dedupe's grouping. This prints, for N generated responses audited up to routing, the
CPU each side spends on the hand-off in two arrangements, computed with today's functions:

- `AuditedResponse`: the lane sends the scored pydantic response; the other side decodes it, sends it through
  the grouping, then routes it and builds its lake rows, window figures and review message;
- `ScoredRows`: the lane routes it and builds all that itself (`transforms.audit.stream.scored_rows`) and
  sends plain data, which the other side decodes, groups and hands to the writer.

The verification and audit steps before routing are the same in both and are not counted. Not a test:
figures depend on the machine and its load; compare the two columns of one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, HEALTHY_FLAW_RATE, generate_responses  # noqa: E402
from schemas import AuditedResponse, Origin, ParsedResponse  # noqa: E402
from transforms.audit.stages import score_and_flag, verify_response  # noqa: E402
from transforms.audit.steps import audit_steps  # noqa: E402
from transforms.audit.stream import scored_rows  # noqa: E402
from transforms.ingest.parse import parse_message  # noqa: E402
from transforms.io.kafka.sink import review_message  # noqa: E402
from transforms.io.lake.rows import to_lake_rows  # noqa: E402
from transforms.monitoring.window_metrics import stats_from_audited  # noqa: E402
from transforms.retrieval.report import score_retrieval_step  # noqa: E402
from transforms.verify.registry import make_verifier  # noqa: E402

THRESHOLD = 0.7


def _coder():
    from apache_beam.coders import coders  # imported after `transforms`, which quiets Beam's import notice

    return coders.FastPrimitivesCoder()


CODER = _coder()


def audited_up_to_routing(count: int, seed: int, flaw_rate: float) -> list[AuditedResponse]:
    """Generated responses (5 sentences, 5 passages) verified and audited as a lane holds them before routing."""
    verifier, now = make_verifier("heuristic"), datetime.now(UTC)
    out = []
    for i, response in enumerate(generate_responses(count, seed=seed, sentences=5, passages=5, flaw_rate=flaw_rate)):
        line = json.dumps(response).encode("utf-8")
        origin = Origin(source="kafka:bench", partition=0, offset=i)
        parsed = ParsedResponse(response=parse_message(line), origin=origin, raw=line)
        audited = verify_response(
            parsed, verifier=verifier, threshold=THRESHOLD, window_start=now, window_end=now, now=now
        )
        for _, _, step in audit_steps(THRESHOLD):
            audited = step(audited)
        out.append(score_retrieval_step(audited))
    return out


def lane_sends_response(audited: AuditedResponse) -> bytes:
    return CODER.encode(audited)


def rest_builds_rows(encoded: bytes) -> list:
    audited = CODER.decode(CODER.encode(CODER.decode(encoded)))  # out of the lane, then through the grouping
    scored = score_and_flag(audited, THRESHOLD)
    stats_from_audited(scored)
    review_message(scored, THRESHOLD)
    return to_lake_rows(scored)


def lane_sends_rows(audited: AuditedResponse) -> bytes:
    return CODER.encode(scored_rows(score_and_flag(audited, THRESHOLD), rows=to_lake_rows, threshold=THRESHOLD))


def rest_takes_rows(encoded: bytes) -> list:
    return CODER.decode(CODER.encode(CODER.decode(encoded))).rows


def ms_per_item(fn: Callable, items: Sequence) -> float:
    gc.collect()
    start = time.process_time()
    for item in items:
        fn(item)
    return (time.process_time() - start) * 1000 / len(items)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--healthy", action="store_true", help="3 sentences in 100 flawed instead of 30")
    args = parser.parse_args(argv)
    audited = audited_up_to_routing(args.responses, args.seed, HEALTHY_FLAW_RATE if args.healthy else FLAWED_FLAW_RATE)
    as_responses = [lane_sends_response(a) for a in audited]
    as_rows = [lane_sends_rows(a) for a in audited]
    size = lambda encoded: sum(map(len, encoded)) / len(encoded) / 1024  # noqa: E731
    encoded = f"AuditedResponse {size(as_responses):.1f} KB, ScoredRows {size(as_rows):.1f} KB"
    print(f"{args.responses} responses; encoded: {encoded}")
    print("CPU ms per response      lane: AuditedResponse  ScoredRows    rest: AuditedResponse  ScoredRows")
    for round_ in range(1, args.rounds + 1):
        lane_old, lane_new = ms_per_item(lane_sends_response, audited), ms_per_item(lane_sends_rows, audited)
        rest_old, rest_new = ms_per_item(rest_builds_rows, as_responses), ms_per_item(rest_takes_rows, as_rows)
        print(f"round {round_:<19}{lane_old:>22.3f}{lane_new:>12.3f}{rest_old:>24.3f}{rest_new:>12.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
