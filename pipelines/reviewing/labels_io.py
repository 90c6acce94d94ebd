"""Labels in and out of the lake: `review import` reads a JSONL file of labels, `review export` writes the
reviewed sentences as a golden file that `groundwatch calibrate --golden` reads.

    labels, where = read_labels("labels.jsonl", default_reviewer="ana")   # ReviewInputError: "line 3: ..."
    export_golden(con, "reviewed.jsonl", tenant="acme")                   # -> records written

An import line is `{"response_id": "r-1", "sentence_index": 2, "label": "contradicted", "reviewer": "ana",
"note": "dose differs"}` (`reviewer` may come from `--reviewer` instead; `note` is optional). An exported
record is the golden format (`docs/calibration.md`): the sentence as `answer`, the response's whole passages
as `evidence`, the latest label as `label`, and in `meta` the response, sentence, tenant, reviewer, the
verifier's verdict at the time and the query.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from pipelines.reviewing.store import LATEST_REVIEWS_SQL, Label, ReviewInputError

__all__ = ["EXPORT_SQL", "export_golden", "golden_record", "read_labels"]

_FIELDS = {"response_id", "sentence_index", "label", "reviewer", "note"}


def _label(obj: object, default_reviewer: str) -> Label:
    if not isinstance(obj, dict):
        raise ReviewInputError("not a JSON object")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise ReviewInputError(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_FIELDS))}")
    index = obj.get("sentence_index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ReviewInputError(f"sentence_index must be a non-negative integer, got {index!r}")
    response_id, note = obj.get("response_id"), obj.get("note", "")
    reviewer = obj.get("reviewer") or default_reviewer
    if not isinstance(response_id, str) or not isinstance(note, str) or not isinstance(reviewer, str):
        raise ReviewInputError("response_id, reviewer and note must be strings")
    return Label(response_id, index, str(obj.get("label")), reviewer, note)


def read_labels(path: str, *, default_reviewer: str = "") -> tuple[list[Label], list[str]]:
    """The labels of a JSONL file and where each was (`line N`); blank lines are skipped.

    Raises `ReviewInputError` naming the line of the first bad one, or when the file holds none."""
    labels, where = [], []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ReviewInputError(f"cannot read {path}: {e}") from None
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            labels.append(_label(json.loads(line), default_reviewer))
        except json.JSONDecodeError as e:
            raise ReviewInputError(f"line {line_no}: not JSON ({e.msg})") from None
        except ReviewInputError as e:
            raise ReviewInputError(f"line {line_no}: {e}") from None
        where.append(f"line {line_no}")
    if not labels:
        raise ReviewInputError(f"{path} holds no labels")
    return labels, where


EXPORT_SQL = f"""
WITH latest AS ({LATEST_REVIEWS_SQL})
SELECT l.response_id, l.sentence_index, l.label, l.reviewer, l.note, l.tenant, l.verifier_verdict,
       l.verifier_confidence, l.verifier_version, s.sentence_text, s.supporting_evidence_ids,
       s.supporting_evidence_excerpts, r.query_text, r.answer_text, r.evidence_doc_ids, r.evidence_sha256
FROM latest l
JOIN sentences s USING (response_id, sentence_index)
JOIN responses r USING (response_id)
WHERE $tenant IS NULL OR l.tenant = $tenant
ORDER BY l.response_id, l.sentence_index
"""
"""The latest label of each reviewed sentence with what a golden record needs (optionally one tenant's)."""


_PASSAGES_SQL = (
    "SELECT passage_sha256, any_value(content) FROM passages WHERE passage_sha256 IN (SELECT unnest($h)) GROUP BY 1"
)


def golden_record(row: dict, passages: dict[str, str]) -> dict:
    """One golden-file record from a row of `EXPORT_SQL`, with the passage texts by hash."""
    pairs = zip(row["evidence_doc_ids"] or [], row["evidence_sha256"] or [], strict=False)
    evidence = [{"doc_id": doc_id, "content": passages[h]} for doc_id, h in pairs if h in passages]
    if not evidence:  # a response written before passages were kept: its excerpts are all there is
        pairs = zip(row["supporting_evidence_ids"] or [], row["supporting_evidence_excerpts"] or [], strict=False)
        evidence = [{"doc_id": d, "content": e} for d, e in pairs]
    answer, sentence = row["answer_text"] or "", row["sentence_text"]
    at = answer.find(sentence) if answer else -1
    return {
        "id": f"review:{row['response_id']}:{row['sentence_index']}",
        "source_dataset": f"reviews:{row['tenant']}",
        "answer": sentence,
        "evidence": evidence,
        "label": row["label"],
        "acceptable_labels": [row["label"]],
        "label_granularity": "fine",
        "meta": {
            "response_id": row["response_id"],
            "sentence_index": row["sentence_index"],
            "tenant": row["tenant"],
            "reviewer": row["reviewer"],
            "note": row["note"],
            "verifier_verdict": row["verifier_verdict"],
            "verifier_confidence": row["verifier_confidence"],
            "verifier_version": row["verifier_version"],
            "question": row["query_text"],
            "answer_context": answer[:at] if at > 0 else "",
        },
    }


def export_golden(con: duckdb.DuckDBPyConnection, out: str, *, tenant: str | None = None) -> int:
    """Write the reviewed sentences (latest label each) to `out` as a golden file; returns how many."""
    cursor = con.execute(EXPORT_SQL, {"tenant": tenant})
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
    hashes = sorted({h for row in rows for h in row["evidence_sha256"] or []})
    passages = dict(con.execute(_PASSAGES_SQL, {"h": hashes}).fetchall()) if hashes else {}
    records = [golden_record(row, passages) for row in rows]
    with open(out, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)
