"""Lake rows of the citation audit and the claim checks: the `citations` and `claims` tables.

One row per citation (the spec 002 fields of `CitationAuditResult`, plus where
it sits and how its quote matched) and one per generator-logged claim (the
`ClaimCheck` fields), each keyed by its response and carrying the slice
columns monitoring groups by. Importing this module registers both tables.

    SELECT verification_status, count(*) FROM citations GROUP BY 1;
    SELECT tenant, avg(CASE WHEN overconfident THEN 1 ELSE 0 END) FROM claims GROUP BY 1;
"""

from __future__ import annotations

from datetime import datetime

from schemas.lake import register_table
from schemas.reports import CitationAuditResult, ClaimCheck
from schemas.responses import RiskLevel

__all__ = ["CitationRow", "ClaimRow"]


class CitationRow(CitationAuditResult):
    """One audited citation, keyed by its response and its position among the response's citations."""

    response_id: str
    citation_index: int
    event_time: datetime
    window_start: datetime
    audited_at: datetime | None = None
    tenant: str
    risk_level: RiskLevel
    retriever_version: str | None = None
    verifier: str = ""
    verifier_version: str = ""


class ClaimRow(ClaimCheck):
    """One checked generator claim, keyed by its response and its index in the logged claims."""

    response_id: str
    event_time: datetime
    window_start: datetime
    audited_at: datetime | None = None
    tenant: str
    risk_level: RiskLevel
    retriever_version: str | None = None
    generator_model: str | None = None
    verifier: str = ""
    verifier_version: str = ""


register_table(
    "citations",
    CitationRow,
    time_column="event_time",
    key=("response_id", "citation_index"),
    version_column="audited_at",
)
register_table(
    "claims", ClaimRow, time_column="event_time", key=("response_id", "claim_index"), version_column="audited_at"
)
