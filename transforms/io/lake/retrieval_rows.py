"""The lake rows of the retrieval scores: the `responses` columns and one `retrieved_passages` row per passage.

    row = ResponseRow(..., **retrieval_columns(audited.retrieval))
    rows = retrieved_passage_rows(audited)       # [("retrieved_passages", row dict), ...]

Both are empty when the ScoreRetrieval step did not run (the columns then stay null). `to_lake_rows` fills
each link row's `passage_sha256` from the passage text as stored, masked under `--redact`.
"""

from __future__ import annotations

from typing import Any

from schemas import AuditedResponse
from schemas.retrieval import RetrievalReport, RetrievedPassageRow

__all__ = ["retrieval_columns", "retrieved_passage_rows"]


def retrieval_columns(report: RetrievalReport | None) -> dict[str, Any]:
    """The `responses` columns of a retrieval report (none without one)."""
    if report is None:
        return {}
    return report.model_dump(exclude={"passages"})


def retrieved_passage_rows(a: AuditedResponse) -> list[tuple[str, dict]]:
    """One `retrieved_passages` row per passage the response retrieved, in logged order."""
    if a.retrieval is None:
        return []
    r = a.parsed.response
    keys = {
        "response_id": r.response_id,
        "event_time": r.timestamp,
        "window_start": a.window_start,
        "audited_at": a.audited_at or a.window_end,
        "tenant": r.metadata.tenant,
        "retriever_version": r.metadata.retriever_version,
    }
    return [
        ("retrieved_passages", RetrievedPassageRow(**p.model_dump(), **keys).model_dump()) for p in a.retrieval.passages
    ]
