"""Lake rows of the citation audit and the claim checks, one builder per table (listed in `transforms.io.lake.writer`).

`citation_rows(audited)` gives one `("citations", row)` pair per audited citation, `claim_rows(audited)`
one `("claims", row)` pair per logged claim; both give nothing when their stage did not run.
"""

from __future__ import annotations

from schemas import AuditedResponse
from schemas.lake_audits import CitationRow, ClaimRow

__all__ = ["citation_rows", "claim_rows"]


def _row_dict(row):
    from transforms.io.lake.writer import row_dict  # transforms.io.lake.writer lists these builders, so import it late

    return row_dict(row)


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
            _row_dict(
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
            _row_dict(
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
