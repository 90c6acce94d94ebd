"""Measure the retrieval scores on labelled examples: separation (ROC-AUC) per domain and the empty flag.

The examples are plain rows, as in tests/data/retrieval (see its README): context rows are a query with its
passages, each labelled relevant (1) or not (0); answer rows are a query and an answer that addresses it (1)
or dodges it (0). `scripts/bench_relevance.py` prints these figures; a unit test holds them above a floor::

    figures = evaluate(context_rows, answer_rows)
    figures.context_auc["overall"], figures.empty_precision, figures.empty_recall

Empty retrieval is judged on two retrievals per query: all its passages (not empty: it has a relevant one)
and only its irrelevant ones (empty). The flag's precision and recall are those of predicting "empty".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from transforms.evaluation.metrics import roc_auc
from transforms.retrieval.relevance import DEFAULT_CONFIG, RelevanceConfig, answer_relevance, context_relevance

__all__ = ["RelevanceFigures", "empty_flag_counts", "evaluate", "scored_passages"]

Row = Mapping[str, Any]


@dataclass(frozen=True)
class RelevanceFigures:
    """Separation of both scores per domain and overall, and the empty flag's precision and recall."""

    context_auc: dict[str, float | None]
    answer_auc: dict[str, float | None]
    empty_precision: float | None
    empty_recall: float | None
    pairs: int
    answers: int


def scored_passages(
    rows: Sequence[Row], config: RelevanceConfig = DEFAULT_CONFIG
) -> list[tuple[str, str, bool, float]]:
    """(domain, query id, relevant, context relevance) for every labelled passage."""
    return [
        (row["domain"], row["query_id"], bool(p["label"]), context_relevance(row["query"], p["text"], config))
        for row in rows
        for p in row["passages"]
    ]


def empty_flag_counts(scored: Sequence[tuple[str, str, bool, float]], threshold: float) -> tuple[int, int, int]:
    """(true, false, missed) "empty" calls over two retrievals per query: all passages, and the negatives only."""
    by_query: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for _, qid, relevant, score in scored:
        by_query[qid].append((relevant, score))
    tp = fp = fn = 0
    for items in by_query.values():
        full_flag = not any(s >= threshold for _, s in items)
        negatives_flag = not any(s >= threshold for rel, s in items if not rel)
        fp += full_flag  # has a relevant passage, flagged empty
        tp += negatives_flag
        fn += not negatives_flag
    return tp, fp, fn


def _auc_by_domain(items: Sequence[tuple[str, bool, float]]) -> dict[str, float | None]:
    groups: dict[str, list[tuple[bool, float]]] = defaultdict(list)
    for domain, label, score in items:
        groups[domain].append((label, score))
        groups["overall"].append((label, score))
    order = sorted(d for d in groups if d != "overall") + ["overall"]
    return {d: roc_auc([lab for lab, _ in groups[d]], [s for _, s in groups[d]]) for d in order}


def evaluate(
    context_rows: Sequence[Row], answer_rows: Sequence[Row], config: RelevanceConfig = DEFAULT_CONFIG
) -> RelevanceFigures:
    """The figures of both scores and of the empty flag (at `config.empty_threshold`) on the examples."""
    scored = scored_passages(context_rows, config)
    answers = [(r["domain"], bool(r["label"]), answer_relevance(r["query"], r["answer"], config)) for r in answer_rows]
    tp, fp, fn = empty_flag_counts(scored, config.empty_threshold)
    return RelevanceFigures(
        context_auc=_auc_by_domain([(d, rel, s) for d, _, rel, s in scored]),
        answer_auc=_auc_by_domain(answers),
        empty_precision=tp / (tp + fp) if tp + fp else None,
        empty_recall=tp / (tp + fn) if tp + fn else None,
        pairs=len(scored),
        answers=len(answers),
    )
