"""The rows of the audit lake one audited response makes, one builder per table, and `row_dict`.

`to_lake_rows(audited)` gives `(table, row dict)` pairs: one `responses` row, one `sentences` row per
sentence, one `judge_calls` row per judge call, one `citations` row per audited citation, one `claims`
row per logged claim and one `retrieved_passages` row per passage (none of the last three when their stage
did not run), and one `passages` row per distinct evidence passage. Each row is validated by its model in
`schemas` first; `transforms.io.lake.writer` writes them. A stage that adds a table adds its builder to `ROW_BUILDERS`.

`responses` rows keep the query and the answer, and name the passages by content hash; `sentences` rows name
the passages of their evidence and the offsets of its excerpts in them (`transforms.io.lake.evidence`).
`to_lake_rows(audited, redact=True)` (`--redact`) masks e-mail addresses, phone numbers and ID-like numbers
in every free-text column (`REDACTED_COLUMNS`) with masks of the same length, so offsets stay valid.
"""

from __future__ import annotations

import functools
from enum import Enum
from typing import Any

from pydantic import BaseModel

from schemas import AttributionVerdict, AuditedResponse, ResponseRow, SentenceRow
from schemas.lake_audits import CitationRow, ClaimRow
from transforms.io.lake.evidence import (
    evidence_fields,
    passage_rows,
    passage_sha256,
    passage_texts,
    sentence_evidence_fields,
)
from transforms.io.lake.redact import redact as mask
from transforms.io.lake.retrieval_rows import retrieval_columns, retrieved_passage_rows

__all__ = ["REDACTED_COLUMNS", "ROW_BUILDERS", "citation_rows", "claim_rows", "lake_rows", "row_dict", "to_lake_rows"]

REDACTED_COLUMNS: dict[str, tuple[str, ...]] = {
    "responses": ("query_text", "answer_text", "critical_flags", "review_reasons", "extra"),
    "sentences": (
        "sentence_text",
        "supporting_evidence_excerpts",
        "contradicting_evidence_excerpts",
        "unsupported_spans",
        "provenance_notes",
    ),
    "citations": ("quote", "claim_summary", "source_text_excerpt", "auditor_notes", "contextual_fidelity_issues"),
    "claims": ("claim_text", "issues"),
    "judge_calls": ("raw_reply", "parsed_verdicts", "validation_errors", "request_json", "error"),
}
"""The free-text columns `--redact` masks, per table (`passages.content` is masked before it is hashed)."""


def row_dict(row: BaseModel) -> dict[str, Any]:
    """A validated row model as a plain dict Arrow accepts (enums become their values)."""
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in row.model_dump().items()}


def _response_row(a: AuditedResponse) -> list[tuple[str, dict]]:
    r, report = a.parsed.response, a.report
    counts = {v: 0 for v in AttributionVerdict}
    for s in report.sentences:
        counts[s.attribution_verdict] += 1
    confidences = [s.confidence for s in report.sentences]
    citations = a.citations.summary if a.citations is not None else None
    claims = a.claims
    row = ResponseRow(
        response_id=r.response_id,
        event_time=r.timestamp,
        window_start=a.window_start,
        window_end=a.window_end,
        audited_at=a.audited_at or a.window_end,
        tenant=r.metadata.tenant,
        risk_level=r.metadata.risk_level,
        retriever_version=r.metadata.retriever_version,
        generator_model=r.metadata.generator_model,
        prompt_version=r.metadata.prompt_version,
        origin_source=a.parsed.origin.source,
        origin_partition=a.parsed.origin.partition,
        origin_offset=a.parsed.origin.offset,
        sentence_count=len(report.sentences),
        fully_grounded_count=counts[AttributionVerdict.fully_grounded],
        partially_grounded_count=counts[AttributionVerdict.partially_grounded],
        ungrounded_count=counts[AttributionVerdict.ungrounded],
        contradicted_count=counts[AttributionVerdict.contradicted],
        mean_confidence=sum(confidences) / len(confidences) if confidences else None,
        min_confidence=min(confidences) if confidences else None,
        overall_faithfulness_score=report.scored_faithfulness,
        critical_flag_count=len(report.critical_flags),
        critical_flags=report.critical_flags,
        insufficient_evidence="INSUFFICIENT_EVIDENCE" in report.critical_flags,
        abstention=report.abstention,
        citation_total=citations.total_citations if citations else None,
        citation_passed=citations.passed if citations else None,
        citation_failed=citations.failed if citations else None,
        citation_critical_failures=citations.critical_failures if citations else [],
        claim_count=len(claims.claims) if claims is not None else None,
        attribution_coverage_rate=claims.attribution_coverage_rate if claims is not None else None,
        low_confidence_claim_rate=claims.low_confidence_claim_rate if claims is not None else None,
        verifier=a.verifier,
        verifier_version=a.verifier_version,
        calibration_sha256=a.calibration_sha256,
        calibration_section=a.calibration_section,
        decided_by=a.decided_by,
        needs_review=a.review.needs_review if a.review else False,
        review_reasons=a.review.reasons if a.review else [],
        review_routes=[route.value for route in a.review.routes] if a.review else [],
        input_flags=a.parsed.input_flags,
        query_text=r.query,
        answer_text=r.answer,
        extra=r.unknown_fields_json(),
        **retrieval_columns(a.retrieval),
    )
    return [("responses", row_dict(row))]


def _sentence_rows(a: AuditedResponse) -> list[tuple[str, dict]]:
    r = a.parsed.response
    rows = []
    for i, verdict in enumerate(a.report.sentences):
        row = SentenceRow(
            **verdict.model_dump(),
            response_id=r.response_id,
            event_time=r.timestamp,
            window_start=a.window_start,
            tenant=r.metadata.tenant,
            retriever_version=r.metadata.retriever_version,
            decided_by=a.decided_by[i] if i < len(a.decided_by) else a.verifier,
            audited_at=a.audited_at or a.window_end,
        )
        rows.append(("sentences", row_dict(row)))
    return rows


def _judge_call_rows(a: AuditedResponse) -> list[tuple[str, dict]]:
    return [("judge_calls", row_dict(call)) for call in a.judge_calls]


def _keys(a: AuditedResponse) -> dict:
    """The response keys and slice columns that citation and claim rows share."""
    r = a.parsed.response
    return {
        "response_id": r.response_id,
        "event_time": r.timestamp,
        "window_start": a.window_start,
        "audited_at": a.audited_at or a.window_end,
        "tenant": r.metadata.tenant,
        "risk_level": r.metadata.risk_level,
        "retriever_version": r.metadata.retriever_version,
    }


def citation_rows(a: AuditedResponse) -> list[tuple[str, dict]]:
    """One `citations` row per audited citation of the response (none when the stage did not run)."""
    if a.citations is None:
        return []
    return [
        (
            "citations",
            row_dict(
                CitationRow(
                    **result.model_dump(),
                    **_keys(a),
                    citation_index=i,
                    verifier=a.citations.verifier,
                    verifier_version=a.citations.verifier_version,
                )
            ),
        )
        for i, result in enumerate(a.citations.audit_results)
    ]


def claim_rows(a: AuditedResponse) -> list[tuple[str, dict]]:
    """One `claims` row per logged claim (none when the response logged no claims)."""
    if a.claims is None:
        return []
    return [
        (
            "claims",
            row_dict(
                ClaimRow(
                    **check.model_dump(),
                    **_keys(a),
                    generator_model=a.parsed.response.metadata.generator_model,
                    verifier=a.claims.verifier,
                    verifier_version=a.claims.verifier_version,
                )
            ),
        )
        for check in a.claims.claims
    ]


ROW_BUILDERS = [_response_row, _sentence_rows, _judge_call_rows, citation_rows, claim_rows, retrieved_passage_rows]
"""Functions `AuditedResponse -> [(table, row)]`; a stage that adds a table appends its builder here."""


def to_lake_rows(audited: AuditedResponse, *, redact: bool = False) -> list[tuple[str, dict]]:
    """Every lake row one audited response produces: its `responses` row, its `sentences` rows, and so on,
    with its evidence stored whole in `passages`; with `redact`, free text masked (`REDACTED_COLUMNS`)."""
    rows: list[tuple[str, dict]] = []
    for build in ROW_BUILDERS:
        rows.extend(build(audited))
    texts = passage_texts(audited, redact=redact)
    sentences = audited.report.sentences
    for table, row in rows:
        if table == "responses":
            row.update(evidence_fields(texts))
        elif table == "sentences":
            row.update(sentence_evidence_fields(sentences[row["sentence_index"]], texts, redact=redact))
        elif table == "retrieved_passages":
            row["passage_sha256"] = passage_sha256(texts[row["doc_id"]])
    if redact:
        for table, row in rows:
            _mask_row(row, REDACTED_COLUMNS.get(table, ()))
    rows.extend(("passages", row_dict(p)) for p in passage_rows(audited, texts))
    return rows


def lake_rows(*, redact: bool) -> Any:
    """`to_lake_rows` with `redact` fixed: the row builder a pipeline hands to `ToLakeRows`."""
    return functools.partial(to_lake_rows, redact=redact)


def _mask_row(row: dict[str, Any], columns: tuple[str, ...]) -> None:
    for column in columns:
        value = row.get(column)
        if isinstance(value, str):
            row[column] = mask(value)
        elif isinstance(value, list):
            row[column] = [mask(v) if isinstance(v, str) else v for v in value]
