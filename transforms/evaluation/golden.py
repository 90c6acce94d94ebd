"""Run a verifier over a labeled golden set and score it (the engine of `groundwatch calibrate`).

The file is a labelled golden file (format: `docs/calibration.md`): one JSON object per
line with `answer`, `evidence`, `label`, `acceptable_labels`, optional
`unsupported_spans` and per-citation labels. Each record is judged as ONE
sentence (`verifier.verify([answer], evidence).verdicts[0]`), never re-split. A line that
is not a valid record is not dropped silently: `load_golden` returns it with
its line number and the reason, and the report lists it.

    records, rejected = load_golden(path)
    run = score_golden(records, make_verifier("heuristic"))
    summary = summarize(run)          # overall and per source, sentences and citations
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from schemas import EvidencePassage
from transforms.attribution.citations import judge_support
from transforms.evaluation.metrics import (
    CITATION_LABELS,
    SENTENCE_LABELS,
    Scored,
    bootstrap_intervals,
    classification_metrics,
    span_token_f1,
)
from transforms.verify.base import Verifier

__all__ = ["GoldenRecord", "GoldenRun", "load_golden", "score_golden", "summarize"]

_WHOLE_SENTENCE_VERDICTS = frozenset({"ungrounded", "contradicted"})


@dataclass(frozen=True)
class GoldenRecord:
    """One labeled sentence with its evidence, as read from the golden file."""

    id: str
    source: str
    answer: str
    evidence: tuple[EvidencePassage, ...]
    label: str
    acceptable: tuple[str, ...]
    granularity: str = ""
    unsupported_spans: tuple[str, ...] = ()
    citations: tuple[dict, ...] = ()
    sub_dataset: str = ""
    """`meta.sub_dataset` when the file gives one (AttributionBench's parts): a source of its own for
    leave-one-source-out cross-validation."""


@dataclass
class GoldenRun:
    """Everything a verifier said about a golden set, ready to be scored."""

    sentences: list[Scored] = field(default_factory=list)
    citations: list[Scored] = field(default_factory=list)
    spans: list[tuple[str, int, int, int]] = field(default_factory=list)
    """(source, true-positive, predicted, gold) unsupported-span token counts per record with human spans."""
    mistakes: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time spent verifying the records' sentences (citations not included)."""
    decided_by: dict[str, int] = field(default_factory=dict)
    """Sentences per stage that decided them (a cascade's `heuristic`, `model`, `openai`)."""


def _record(obj: dict, line_no: int) -> GoldenRecord:
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    answer, label = obj.get("answer"), obj.get("label")
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError("missing or empty 'answer'")
    if label not in SENTENCE_LABELS:
        raise ValueError(f"'label' must be one of {', '.join(SENTENCE_LABELS)}, got {label!r}")
    evidence = tuple(EvidencePassage(doc_id=e["doc_id"], content=e["content"]) for e in obj.get("evidence") or [])
    acceptable = tuple(obj.get("acceptable_labels") or [label])
    unknown = [a for a in acceptable if a not in SENTENCE_LABELS]
    if unknown:
        raise ValueError(f"unknown acceptable_labels {unknown}")
    doc_ids = {p.doc_id for p in evidence}
    citations = []
    for c in obj.get("citations") or []:
        if c.get("label") not in CITATION_LABELS:
            raise ValueError(f"citation label must be one of {', '.join(CITATION_LABELS)}, got {c.get('label')!r}")
        if c.get("doc_id") not in doc_ids:
            raise ValueError(f"citation {c.get('citation_id')!r} names doc_id {c.get('doc_id')!r} not in the evidence")
        citations.append(c)
    return GoldenRecord(
        id=str(obj.get("id") or f"line-{line_no}"),
        source=str(obj.get("source_dataset") or "unknown"),
        answer=answer,
        evidence=evidence,
        label=label,
        acceptable=acceptable,
        granularity=str(obj.get("label_granularity") or ""),
        unsupported_spans=tuple(s for s in obj.get("unsupported_spans") or [] if isinstance(s, str) and s.strip()),
        citations=tuple(citations),
        sub_dataset=_sub_dataset(obj),
    )


def _sub_dataset(obj: dict) -> str:
    meta = obj.get("meta")
    value = meta.get("sub_dataset") if isinstance(meta, dict) else None
    return str(value) if value else ""


def load_golden(path: str | Path) -> tuple[list[GoldenRecord], list[tuple[int, str]]]:
    """The valid records of a golden JSONL file, and (line number, reason) for every line that is not one."""
    records, rejected = [], []
    with open(path, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                records.append(_record(json.loads(line), line_no))
            except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
                rejected.append((line_no, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"))
    return records, rejected


def predicted_spans(verdict_label: str, spans: Sequence[str], answer: str) -> list[str]:
    """The verifier's unsupported spans; a wholly unsupported sentence without spans counts as one span."""
    if spans:
        return list(spans)
    return [answer] if verdict_label in _WHOLE_SENTENCE_VERDICTS else []


def score_golden(records: Iterable[GoldenRecord], verifier: Verifier, *, with_citations: bool = True) -> GoldenRun:
    """Judge every record (and each of its labeled citations against its one passage) with `verifier`."""
    run = GoldenRun()
    for rec in records:
        started = time.perf_counter()
        try:
            result = verifier.verify([rec.answer], list(rec.evidence))
        except Exception as exc:  # which record, for the one-line reason (a model that fails on one input)
            exc.add_note(f"golden record {rec.id!r}")
            raise
        run.seconds += time.perf_counter() - started
        verdict = result.verdicts[0]
        for stage in result.decided_by[:1]:
            run.decided_by[stage] = run.decided_by.get(stage, 0) + 1
        predicted = verdict.attribution_verdict.value
        run.sentences.append(
            Scored(
                gold=rec.label,
                predicted=predicted,
                acceptable=rec.acceptable,
                score=verdict.grounded_probability,
                confidence=verdict.confidence,
                source=rec.source,
            )
        )
        if predicted not in rec.acceptable:
            run.mistakes.append(
                {
                    "id": rec.id,
                    "source": rec.source,
                    "gold": rec.label,
                    "predicted": predicted,
                    "confidence": round(verdict.confidence, 3),
                }
            )
        if rec.unsupported_spans:
            tp, n_pred, n_gold = span_token_f1(
                rec.answer, rec.unsupported_spans, predicted_spans(predicted, verdict.unsupported_spans, rec.answer)
            )
            run.spans.append((rec.source, tp, n_pred, n_gold))
        if with_citations:
            by_id = {p.doc_id: p for p in rec.evidence}
            for c in rec.citations:
                level, cverdict = judge_support(rec.answer, [by_id[c["doc_id"]]], verifier)
                run.citations.append(
                    Scored(
                        gold=c["label"],
                        predicted=level.value,
                        acceptable=tuple(c.get("acceptable_labels") or [c["label"]]),
                        score=cverdict.grounded_probability,  # SUPPORTS is the claim fully grounded in it
                        confidence=cverdict.confidence,
                        source=rec.source,
                    )
                )
    return run


def _span_metrics(rows: Sequence[tuple[str, int, int, int]]) -> dict | None:
    if not rows:
        return None
    tp, n_pred, n_gold = (sum(r[i] for r in rows) for i in (1, 2, 3))
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": len(rows), "token_precision": precision, "token_recall": recall, "token_f1": f1}


def _by_source(items: Sequence[Scored]) -> dict[str, list[Scored]]:
    groups: dict[str, list[Scored]] = {}
    for it in items:
        groups.setdefault(it.source, []).append(it)
    return dict(sorted(groups.items()))


def summarize(run: GoldenRun, *, resamples: int = 200) -> dict:
    """Metrics overall and per source for sentences, unsupported spans and citations.

    The overall sentence block also carries bootstrap intervals (`resamples` of them; 0 for none).
    """

    def sentence_block(items: Sequence[Scored], source: str | None) -> dict:
        metrics = classification_metrics(items, SENTENCE_LABELS, positive="fully_grounded")
        metrics["spans"] = _span_metrics([r for r in run.spans if source is None or r[0] == source])
        return metrics

    out = {
        "sentences": {
            "overall": sentence_block(run.sentences, None),
            "per_source": {s: sentence_block(items, s) for s, items in _by_source(run.sentences).items()},
        },
        "citations": None,
        "intervals": bootstrap_intervals(run.sentences, positive="fully_grounded", resamples=resamples)
        if resamples
        else None,
        "seconds": run.seconds,
        "sentences_per_second": len(run.sentences) / run.seconds if run.seconds else None,
    }
    if run.citations:
        out["citations"] = {
            "overall": classification_metrics(run.citations, CITATION_LABELS, positive="SUPPORTS"),
            "per_source": {
                s: classification_metrics(items, CITATION_LABELS, positive="SUPPORTS")
                for s, items in _by_source(run.citations).items()
            },
        }
    return out
