"""A small audited lake for the review tests: real responses through the inline auditor, written by the lake's
writer. Three tenants' worth of messages; `HIGH` is high-risk with a contradicted dose."""

from __future__ import annotations

import json
from collections import defaultdict

from pipelines.runner.inline import InlineAuditor
from tests.support.audit_messages import message
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import write_table

EVIDENCE = [
    {"doc_id": "kb-1", "content": "Background. Metoprolol 50 mg twice daily was prescribed on March 3, 2024. Recheck."},
    {"doc_id": "kb-2", "content": "The patient reported dizziness after the first dose."},
]
HIGH = message(
    "r-high",
    answer="The patient was prescribed 80 mg of metoprolol twice daily on March 3, 2024 [kb-1]. "
    "The patient reported dizziness [kb-2].",
    evidence=EVIDENCE,
    metadata={"tenant": "clinic", "risk_level": "high", "retriever_version": "r7"},
)
LOW = message(
    "r-low",
    timestamp="2026-11-29T10:15:00Z",
    answer="Metoprolol 50 mg twice daily was prescribed on March 3, 2024 [kb-1]. The moon is made of cheese.",
    evidence=EVIDENCE,
    metadata={"tenant": "legal", "risk_level": "low", "retriever_version": "r9"},
)
GOOD = message(
    "r-good", answer="Metoprolol 50 mg twice daily was prescribed on March 3, 2024 [kb-1].", evidence=EVIDENCE
)


def build_lake(path: str, messages: list[dict] | None = None, *, window_seconds: int = 60) -> str:
    """Audit `messages` (default HIGH, LOW, GOOD) in process, in windows of `window_seconds`, and write their rows
    to a lake at `path` (no window metrics: those come from `groundwatch metrics`)."""
    auditor = InlineAuditor(window_seconds=window_seconds)
    tables: dict[str, list] = defaultdict(list)
    for m in messages or [HIGH, LOW, GOOD]:
        for table, row in to_lake_rows(auditor.audit(auditor.parse(json.dumps(m).encode()))):
            tables[table].append(row)
    for table, rows in tables.items():
        write_table(path, table, rows)
    return path
