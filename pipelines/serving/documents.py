"""What the verification service answers: its JSON documents, their pydantic models and the OpenAPI document.

    result = verify_result(audited, status="determined", elapsed_ms=2.1)     # VerifyResult
    openapi_document()                                                       # served at GET /openapi.json

A result carries the sentence report under the specification's field names (`answer_id`, `sentences`,
`overall_faithfulness_score`, `critical_flags`), the citation audit, the claim checks and the routing
decision. `status` is `determined`, or `undetermined` when the judge gave no verdict in time: then the
verdicts are the offline heuristic's and `review.needs_review` is true with the reason first.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from schemas import (
    AuditedResponse,
    CitationAuditReport,
    ClaimAttributionReport,
    LoggedResponse,
    ReviewDecision,
    SentenceAuditReport,
)
from schemas.base import StrictModel

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_ITEMS",
    "MAX_BODY_BYTES",
    "BatchRequest",
    "BatchResult",
    "ErrorBody",
    "ItemError",
    "VerifyResult",
    "openapi_document",
    "verify_result",
]

MAX_BODY_BYTES = 1 << 20
"""Largest body `POST /v1/verify` accepts: 1 MiB (a long answer with a dozen long passages is ~100 KB); 413 above."""
MAX_BATCH_BYTES = 8 << 20
"""Largest body `POST /v1/verify/batch` accepts: 8 MiB; 413 above."""
MAX_BATCH_ITEMS = 256
"""Most responses one batch may carry; 413 above (split the batch)."""

Status = Literal["determined", "undetermined"]


class VerifyResult(StrictModel):
    """The audit of one logged response, as the service returns it."""

    response_id: str
    status: Status
    """`undetermined`: the judge gave no verdict in time; the offline verdicts are shown and review is required."""
    verifier: str
    """The verifier that produced the verdicts (`heuristic` for the offline fallback of an undetermined result)."""
    verifier_version: str
    report: SentenceAuditReport
    decided_by: list[str]
    citations: CitationAuditReport | None = None
    claims: ClaimAttributionReport | None = None
    review: ReviewDecision
    judge_status: str | None = None
    """How the judge call ended (`judged`, `judge_validation_failed`, `judge_error`, `judge_timeout`), if any."""
    input_flags: list[str] = Field(default_factory=list)
    elapsed_ms: float
    """Server-side time of this response's audit."""


class ItemError(StrictModel):
    """A batch item that could not be audited, and why (the reason codes of the pipeline's dead letters)."""

    index: int
    error: str
    message: str


class BatchResult(StrictModel):
    """The audits of a batch: one result or one error per item, in order of `index`; the counts add up."""

    results: list[VerifyResult]
    indexes: list[int]
    """The batch position of each entry of `results`."""
    errors: list[ItemError]
    received: int
    verified: int
    rejected: int


class BatchRequest(BaseModel):
    """Several logged responses in one request."""

    responses: list[LoggedResponse] = Field(max_length=MAX_BATCH_ITEMS)


class ErrorBody(StrictModel):
    """A rejected request: a reason code and one line saying why."""

    error: str
    message: str


def verify_result(audited: AuditedResponse, *, status: Status, elapsed_ms: float) -> VerifyResult:
    """The service's document for a scored AuditedResponse."""
    return VerifyResult(
        response_id=audited.parsed.response.response_id,
        status=status,
        verifier=audited.verifier,
        verifier_version=audited.verifier_version,
        report=audited.report,
        decided_by=audited.decided_by,
        citations=audited.citations,
        claims=audited.claims,
        review=audited.review or ReviewDecision(needs_review=True, reasons=["not routed"]),
        judge_status=audited.judge_status,
        input_flags=audited.parsed.input_flags,
        elapsed_ms=round(elapsed_ms, 3),
    )


def _error_responses(*codes: int) -> dict:
    meaning = {
        400: "Invalid JSON or not UTF-8.",
        401: "API key missing.",
        403: "API key not accepted.",
        413: "Body over the size limit.",
        422: "The response violates the input contract.",
        500: "An audit stage failed for this response.",
    }
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {str(c): {"description": meaning[c], "content": content} for c in codes}


def openapi_document(*, api_key: bool = False, version: str = "1") -> dict:
    """The OpenAPI 3.1 document of the service, its schemas generated from the same pydantic models."""
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (LoggedResponse, "validation"),
        (BatchRequest, "validation"),
        (VerifyResult, "serialization"),
        (BatchResult, "serialization"),
        (ErrorBody, "serialization"),
    ]
    _, schema = models_json_schema(models, ref_template="#/components/schemas/{model}")
    security: list[dict[str, list[str]]] = [{"bearer": []}, {"apiKey": []}] if api_key else []

    def schema_of(name: str) -> dict:
        return {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}

    def body(name: str) -> dict:
        return {"required": True, "content": schema_of(name)}

    def ok(name: str, what: str) -> dict:
        return {"description": what, "content": schema_of(name)}

    return {
        "openapi": "3.1.0",
        "info": {
            "title": "groundwatch verification service",
            "version": version,
            "description": "Sentence, citation and claim audit of RAG responses against their evidence.",
        },
        "paths": {
            "/v1/verify": {
                "post": {
                    "summary": f"Audit one logged response (body at most {MAX_BODY_BYTES:,} bytes).",
                    "operationId": "verify",
                    "requestBody": body("LoggedResponse"),
                    "responses": {
                        "200": ok("VerifyResult", "The audit."),
                        **_error_responses(400, 401, 403, 413, 422, 500),
                    },
                    "security": security,
                }
            },
            "/v1/verify/batch": {
                "post": {
                    "summary": f"Audit up to {MAX_BATCH_ITEMS} responses (body at most {MAX_BATCH_BYTES:,} bytes); "
                    "an invalid item is an error entry, not a failed request.",
                    "operationId": "verifyBatch",
                    "requestBody": body("BatchRequest"),
                    "responses": {
                        "200": ok("BatchResult", "One result or error per item."),
                        **_error_responses(400, 401, 403, 413),
                    },
                    "security": security,
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness and this worker's counts.",
                    "operationId": "health",
                    "responses": {"200": {"description": "Serving."}},
                }
            },
        },
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
    }
