#!/usr/bin/env python3
"""Seconds per message for the worst messages the input contract accepts, through the whole per-response audit.

    python scripts/bench_limits.py [--only NAME ...] [--timeout 120] [--profile NAME]

Builds one message of each kind at the contract's edge (a 4.7 MB evidence passage, a 1 MB passage, a
150 KB answer with 20,000 citation markers, 20,000 passages, an answer of 200,000 characters in
about 3,700 sentences, 5,000 logged claims and 5,000 logged citations, and one at every limit of
transforms/audit/limits.py but over none: the most the audit checks in full) and runs it through what the
pipeline does to one response, in this order: `parse_message`, `audit_response` with the heuristic verifier
and the pipeline's audit steps (citations, claims), and `to_lake_rows`. Each message runs in a child process
of its own (one core), stopped after `--timeout` seconds. Prints the message's size, its CPU seconds, and
the limits flagged on it (see docs/limits.md). `--profile NAME` prints cProfile's top functions for one kind.

Not a test: the figures depend on the machine. The target is under 2 s per message on one core.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import multiprocessing
import os
import pstats
import random
import sys
import time
from datetime import UTC, datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_WORDS = (
    "revenue quarter board dividend share tenant lease deposit contract clause agreement policy premium "
    "coverage claim patient dose treatment trial result filing statement company segment note debt year "
    "officer director appointed approved declared reported increased decreased stood charged annual fund"
).split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 18))]
    words.insert(rng.randint(1, len(words) - 1), f"${rng.randint(1, 999)}.{rng.randint(0, 9)} million")
    return " ".join(words).capitalize() + "."


def _text(chars: int, rng: random.Random) -> str:
    parts, size = [], 0
    while size < chars:
        s = _sentence(rng)
        parts.append(s)
        size += len(s) + 1
    return " ".join(parts)[:chars]


def _base(response_id: str) -> dict:
    return {
        "response_id": response_id,
        "timestamp": "2026-11-29T09:00:00Z",
        "query": "What did the filing report?",
        "metadata": {"tenant": "bench", "risk_level": "high"},
    }


def _answer_from(passage: str, rng: random.Random, sentences: int, doc_id: str) -> str:
    picked = [s.strip() for s in passage.split(". ") if len(s) > 40]
    return " ".join(f"{rng.choice(picked).rstrip('.')} [{doc_id}]." for _ in range(sentences))


def huge_passage(chars: int) -> dict:
    rng = random.Random(chars)
    passage = _text(chars, rng)
    message = _base(f"passage-{chars}")
    message["evidence"] = [{"doc_id": "doc_a", "content": passage}, {"doc_id": "doc_b", "content": _text(500, rng)}]
    message["answer"] = _answer_from(passage, rng, 5, "doc_a")
    message["claims"] = [{"claim_text": message["answer"].split(" [")[0], "source_doc_ids": ["doc_a"]}]
    return message


def many_markers(markers: int = 20_000) -> dict:
    """About 150 KB of answer: a word or two, then two markers ("[3][4]"), ten thousand times."""
    rng = random.Random(markers)
    evidence = [{"doc_id": f"doc_{i}", "content": _text(400, rng)} for i in range(10)]
    message = _base("markers")
    parts = []
    for i in range(markers // 2):
        word = rng.choice(_WORDS).capitalize() if i % 8 == 0 else rng.choice(_WORDS)
        parts.append(f"{word} [{i % 10}][{(i + 1) % 10}]" + ("." if i % 8 == 7 else ""))
    message["evidence"] = evidence
    message["answer"] = " ".join(parts)
    return message


def many_passages(passages: int = 20_000) -> dict:
    rng = random.Random(passages)
    evidence = [{"doc_id": f"doc_{i}", "content": _text(200, rng)} for i in range(passages)]
    message = _base("passages")
    message["evidence"] = evidence
    message["answer"] = " ".join(
        f"{evidence[i]['content'].split('. ')[0].rstrip('.')} [doc_{i}]." for i in range(0, passages, passages // 5)
    )
    return message


def many_sentences(answer_chars: int = 199_000) -> dict:
    rng = random.Random(answer_chars)
    evidence = [{"doc_id": f"doc_{i}", "content": _text(2_000, rng)} for i in range(5)]
    message = _base("sentences")
    message["evidence"] = evidence
    parts, size = [], 0
    while size < answer_chars - 200:
        doc = rng.randrange(5)
        words = rng.choice(evidence[doc]["content"].split(". ")).split()[:6]
        s = " ".join(words).rstrip(".") + f" [doc_{doc}]."
        parts.append(s)
        size += len(s) + 1
    message["answer"] = " ".join(parts)
    return message


def many_claims(claims: int = 5_000) -> dict:
    message = many_sentences(60_000)
    message["response_id"] = "claims"
    sentences = [s for s in message["answer"].split("]. ") if s]
    message["claims"] = [
        {"claim_text": sentences[i % len(sentences)].split(" [")[0], "source_doc_ids": [f"doc_{i % 5}"]}
        for i in range(claims)
    ]
    message["citations"] = [
        {"citation_id": f"c{i}", "doc_id": f"doc_{i % 5}", "quote": sentences[i % len(sentences)].split(" [")[0][:80]}
        for i in range(claims)
    ]
    return message


def at_the_limits() -> dict:
    """Every limit of transforms.audit.limits reached but none exceeded: the most the audit checks of one message."""
    from transforms.audit import limits

    rng = random.Random(7)
    chars = limits.MAX_EVIDENCE_CHARS // 4
    evidence = [{"doc_id": f"doc_{i}", "content": _text(min(chars, limits.MAX_PASSAGE_CHARS), rng)} for i in range(4)]
    sentences = []
    for i in range(limits.MAX_SENTENCES):
        doc = i % 4
        text = rng.choice(evidence[doc]["content"][:20_000].split(". ")).split()[:10]
        sentences.append(" ".join(text).rstrip(".").capitalize() + f" [doc_{doc}].")
    message = _base("at-limits")
    message["evidence"] = evidence
    message["answer"] = " ".join(sentences)
    message["claims"] = [
        {"claim_text": sentences[i].split(" [")[0], "source_doc_ids": [f"doc_{i % 4}"]}
        for i in range(limits.MAX_CLAIMS)
    ]
    message["citations"] = [
        {"citation_id": f"c{i}", "doc_id": f"doc_{i % 4}", "quote": sentences[i].split(" [")[0][:60]}
        for i in range(limits.MAX_CITATIONS)
    ]
    return message


KINDS = {
    "passage_4_7mb": lambda: huge_passage(4_700_000),
    "passage_1mb": lambda: huge_passage(1_000_000),
    "markers_20k": many_markers,
    "passages_20k": many_passages,
    "sentences_200k_chars": many_sentences,
    "claims_citations_5k": many_claims,
    "at_the_limits": at_the_limits,
}


def audit_one(raw: bytes) -> dict:
    """What the pipeline does to one message, outside Beam: parse, verify, audit steps, score, lake rows."""
    from schemas import Origin, ParsedResponse
    from transforms.audit.stages import audit_response
    from transforms.audit.steps import audit_steps
    from transforms.ingest.parse import input_flags, parse_message
    from transforms.io.lake.rows import to_lake_rows
    from transforms.verify.base import DEFAULT_CONFIDENCE_THRESHOLD
    from transforms.verify.registry import make_verifier

    verifier = make_verifier("heuristic")
    steps = [step for _, _, step in audit_steps(DEFAULT_CONFIDENCE_THRESHOLD)]
    now = datetime.now(UTC)
    start = time.process_time()
    response = parse_message(raw)
    parsed = ParsedResponse(response=response, origin=Origin(source="bench"), input_flags=input_flags(response))
    audited = audit_response(parsed, verifier=verifier, window_start=now, window_end=now, now=now, steps=steps)
    rows = list(to_lake_rows(audited))
    seconds = time.process_time() - start
    limits = getattr(audited.report, "limits_exceeded", None) or []
    return {
        "seconds": seconds,
        "sentences": len(audited.report.sentences),
        "rows": len(rows),
        "flags": [f for f in audited.report.critical_flags if f.startswith("LIMIT")],
        "limits": list(limits),
    }


def _child(raw: bytes, queue) -> None:
    try:
        queue.put(audit_one(raw))
    except Exception as e:  # the figure table says what failed rather than stopping
        queue.put({"error": f"{type(e).__name__}: {e}"[:200]})


def run_kind(name: str, timeout: float) -> str:
    raw = json.dumps(KINDS[name]()).encode("utf-8")
    queue = multiprocessing.get_context("fork").Queue()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(raw, queue))
    child.start()
    child.join(timeout)
    size = f"{len(raw) / 1e6:6.2f} MB"
    if child.is_alive():
        child.kill()
        child.join()
        return f"{name:<22} {size}  > {timeout:.0f} s (stopped)"
    result = queue.get() if not queue.empty() else {"error": f"exit code {child.exitcode}"}
    if "error" in result:
        return f"{name:<22} {size}  failed: {result['error']}"
    limits = ", ".join(result["limits"] or result["flags"]) or "none"
    return (
        f"{name:<22} {size}  {result['seconds']:7.2f} s  ({result['sentences']} sentences audited, "
        f"limits exceeded: {limits})"
    )


def profile(name: str, top: int = 25) -> None:
    raw = json.dumps(KINDS[name]()).encode("utf-8")
    audit_one(json.dumps(huge_passage(2_000)).encode("utf-8"))  # imports and first-use tables, not profiled
    profiler = cProfile.Profile()
    profiler.enable()
    audit_one(raw)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(KINDS), help="Kinds to run. Default all.")
    parser.add_argument("--timeout", type=float, default=120.0, help="Seconds before a message is stopped. Def. 120.")
    parser.add_argument("--profile", choices=sorted(KINDS), help="Print cProfile's top functions for this kind.")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.profile)
        return 0
    print("CPU seconds per message: parse, verify, citation and claim audits, score, lake rows (one core)")
    for name in args.only or KINDS:
        print(run_kind(name, args.timeout), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
