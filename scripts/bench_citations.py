#!/usr/bin/env python3
"""Benchmark the citation audit and the claim checks (one core, plain functions, no Beam).

    python scripts/bench_citations.py [--responses 2000] [--verifier heuristic]

Generates N synthetic responses (`pipelines.traffic.synthetic`: markers, explicit citations with quotes,
fabricated ids, logged claims), then times `audit_citations` and `check_claims` over all of
them and prints citations/s, claims/s and the verification statuses seen. Not a test: figures
depend on the machine and on the verifier's speed (every citation costs one or more verifier calls).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pipelines.traffic.synthetic import FLAWED_FLAW_RATE, generate_responses  # noqa: E402
from schemas import LoggedResponse  # noqa: E402
from transforms.attribution.citations import audit_citations  # noqa: E402
from transforms.attribution.claims import check_claims  # noqa: E402
from transforms.verify.registry import make_verifier  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--responses", type=int, default=2000, help="synthetic responses (default 2000)")
    parser.add_argument("--verifier", default="heuristic", help="verifier for claim support (default heuristic)")
    args = parser.parse_args(argv)

    responses = [
        LoggedResponse.model_validate(m) for m in generate_responses(args.responses, flaw_rate=FLAWED_FLAW_RATE)
    ]
    verifier = make_verifier(args.verifier)

    started = time.perf_counter()
    statuses: collections.Counter[str] = collections.Counter()
    for response in responses:
        for result in audit_citations(response, verifier).audit_results:
            statuses[result.verification_status.value] += 1
    citation_seconds = time.perf_counter() - started

    started = time.perf_counter()
    claims = 0
    for response in responses:
        report = check_claims(response, verifier)
        claims += len(report.claims) if report is not None else 0
    claim_seconds = time.perf_counter() - started

    citations = sum(statuses.values())
    print(f"{len(responses)} responses, verifier {verifier.name} {verifier.version}")
    print(f"citation audit: {citations} citations in {citation_seconds:.2f} s = {citations / citation_seconds:.0f}/s")
    print(f"claim checks:   {claims} claims in {claim_seconds:.2f} s = {claims / max(claim_seconds, 1e-9):.0f}/s")
    print("statuses: " + ", ".join(f"{k} {v}" for k, v in statuses.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
