#!/usr/bin/env python3
"""Benchmark the retrieval scores: separation on the labelled examples, the empty flag, and CPU per response.

    python scripts/bench_relevance.py [--responses 2000] [--data tests/data/retrieval]

Prints the ROC-AUC of context relevance (relevant vs irrelevant passages) and of answer relevance (answers that
address the query vs answers that dodge it), per domain and overall; the context AUC of direct and of
paraphrased relevant passages separately; the empty-retrieval flag's precision and recall at the configured
threshold and at a few others; and the CPU time per typical response (a query, 5 passages of about 80 words,
a 5-sentence answer; all scores and both evidence-use shares), warm (texts already tokenized, as after the
verifier) and cold (every tokenizer cache cleared before each response). Not a test: figures depend on the
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transforms.evaluation.metrics import roc_auc  # noqa: E402
from transforms.retrieval import relevance  # noqa: E402
from transforms.retrieval.evidence_use import passages_used_share, top_passage_support_share  # noqa: E402
from transforms.retrieval.examples import empty_flag_counts, evaluate, scored_passages  # noqa: E402
from transforms.text import tokens  # noqa: E402
from transforms.text.sentences import split_sentences  # noqa: E402


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _typical_response(rows: list[dict]) -> tuple[str, dict[str, str], str]:
    """A query, 5 passages of about 80 words (examples of one domain joined), a 5-sentence answer."""
    texts = [p["text"] for r in rows[:5] for p in r["passages"]]
    passages = {f"p{i + 1}": " ".join(texts[i * 3 : i * 3 + 3]) for i in range(5)}
    answer = " ".join(texts[0].split(". ")[:2]) + ". " + " ".join(t.split(",")[0] + "." for t in texts[5:8])
    return rows[0]["query"], passages, answer


def _score_one(query: str, passages: dict[str, str], answer: str, claims: list[str] | None) -> None:
    scores = relevance.score_retrieval(query, passages, answer, claim_sentences=claims)
    ids = list(passages)
    support = [(True, (ids[0],)), (True, (ids[0], ids[2])), (False, ()), (True, (ids[1],)), (False, ())]
    passages_used_share(support, ids)
    top_passage_support_share(support, {pid: i + 1 for i, pid in enumerate(ids)})
    assert scores.max_context_relevance is not None


MODES = {
    "warm": "every cache warm (the same response again)",
    "in_audit": "tokenizer warm (the verifier tokenized these texts), own caches cold, sentences from the audit",
    "cold": "every cache cleared, the answer split here",
}


def _cpu_us(n: int, query: str, passages: dict[str, str], answer: str, mode: str) -> float:
    claims = None if mode == "cold" else split_sentences(answer)
    spent = 0.0
    for i in range(n):
        q = query
        if mode != "warm":
            relevance.clear_caches()
            q = f"{query} {i}"  # a new query text, so nothing of it is cached
        if mode == "cold":
            tokens._tokenize_cached.cache_clear()  # stems stay cached, as in any running worker
        elif mode == "in_audit":
            tokens.tokenize(q)
        start = time.process_time()
        _score_one(q, passages, answer, claims)
        spent += time.process_time() - start
    return spent / n * 1e6


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--responses", type=int, default=2000, help="responses timed in each mode (default 2000)")
    parser.add_argument("--data", default=str(ROOT / "tests/data/retrieval"), help="folder of the examples")
    args = parser.parse_args(argv)
    if args.responses < 1:
        print("error: --responses must be at least 1", file=sys.stderr)
        return 2
    data = Path(args.data)
    ctx, ans = _load(data / "context.jsonl"), _load(data / "answers.jsonl")
    figures = evaluate(ctx, ans)
    print(f"examples: {figures.pairs} (query, passage) pairs, {figures.answers} (query, answer) pairs")
    print(f"{'domain':<16}{'context AUC':>12}{'answer AUC':>12}")
    for domain in figures.context_auc:
        print(f"{domain:<16}{_fmt(figures.context_auc[domain]):>12}{_fmt(figures.answer_auc.get(domain)):>12}")
    scored = scored_passages(ctx)
    kinds = [p["kind"] for r in ctx for p in r["passages"]]
    for kind in ("direct", "paraphrase"):
        sel = [(rel, s) for (_, _, rel, s), k in zip(scored, kinds, strict=True) if k == kind or not rel]
        print(f"context AUC, {kind} relevant passages vs all irrelevant: {_fmt(roc_auc(*zip(*sel, strict=True)))}")
    threshold = relevance.DEFAULT_CONFIG.empty_threshold
    print(
        f"empty retrieval at threshold {threshold}: precision {_fmt(figures.empty_precision)}, "
        f"recall {_fmt(figures.empty_recall)} ({2 * len(ctx)} retrievals: all passages / negatives only)"
    )
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        tp, fp, fn = empty_flag_counts(scored, t)
        print(f"  threshold {t:.1f}: flagged right {tp}, flagged wrongly {fp}, missed {fn}")
    query, passages, answer = _typical_response(ctx)
    words = [len(p.split()) for p in passages.values()]
    print(
        f"typical response: {len(passages)} passages of {min(words)}-{max(words)} words, answer "
        f"{len(answer.split())} words; pid {os.getpid()}, one core"
    )
    for mode, what in MODES.items():
        us = _cpu_us(args.responses, query, passages, answer, mode)
        print(f"CPU per response, {mode} ({what}): {us:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
