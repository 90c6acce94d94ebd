"""groundwatch's data contracts: the logged-response input, the audit reports, the lake rows.

Every model is pydantic v2 and strict (`extra="forbid"`) except the input contract,
which keeps the fields it does not know (`schemas.responses`); the Arrow schemas of
the lake are derived from the row models (`schemas.lake.arrow_schema`).
"""

from schemas.base import Confidence, NonEmptyStr, StrictModel
from schemas.lake import TABLES, DeadLetterRow, ResponseRow, SentenceRow, TableSpec, arrow_schema, register_table
from schemas.lake_audits import CitationRow, ClaimRow  # registers the citations and claims tables
from schemas.monitoring import AlertRow, DriftCheckRow, WindowMetricsRow  # registers the monitoring tables
from schemas.records import AuditedResponse, Origin, ParsedResponse, ReviewDecision, ReviewRoute
from schemas.reports import (
    INSUFFICIENT_EVIDENCE,
    LIMIT_FLAG_PREFIX,
    AttributionVerdict,
    CitationAuditReport,
    CitationAuditResult,
    CitationAuditSummary,
    ClaimAttributionReport,
    ClaimCheck,
    ClaimSupportLevel,
    OverallVerdict,
    QuoteMatch,
    SentenceAuditReport,
    SentenceVerdict,
    VerificationStatus,
    grounded_probability,
    verdict_confidence,
)
from schemas.responses import (
    CURRENT_SCHEMA_VERSION,
    MAX_ANSWER_CHARS,
    ConfidenceLabel,
    EvidencePassage,
    LoggedCitation,
    LoggedClaim,
    LoggedResponse,
    ResponseMetadata,
    RiskLevel,
)
from schemas.retrieval import (  # registers the retrieved_passages table
    PassageRetrieval,
    RetrievalReport,
    RetrievedPassageRow,
)
from schemas.review import PassageRow, ReviewRow  # registers the passages and reviews tables

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "INSUFFICIENT_EVIDENCE",
    "LIMIT_FLAG_PREFIX",
    "MAX_ANSWER_CHARS",
    "TABLES",
    "AlertRow",
    "AttributionVerdict",
    "AuditedResponse",
    "CitationAuditReport",
    "CitationAuditResult",
    "CitationAuditSummary",
    "CitationRow",
    "ClaimAttributionReport",
    "ClaimCheck",
    "ClaimRow",
    "ClaimSupportLevel",
    "Confidence",
    "ConfidenceLabel",
    "DeadLetterRow",
    "DriftCheckRow",
    "EvidencePassage",
    "LoggedCitation",
    "LoggedClaim",
    "LoggedResponse",
    "NonEmptyStr",
    "Origin",
    "OverallVerdict",
    "ParsedResponse",
    "PassageRetrieval",
    "PassageRow",
    "QuoteMatch",
    "ResponseMetadata",
    "ResponseRow",
    "RetrievalReport",
    "RetrievedPassageRow",
    "ReviewDecision",
    "ReviewRoute",
    "ReviewRow",
    "RiskLevel",
    "SentenceAuditReport",
    "SentenceRow",
    "SentenceVerdict",
    "StrictModel",
    "TableSpec",
    "VerificationStatus",
    "WindowMetricsRow",
    "arrow_schema",
    "grounded_probability",
    "register_table",
    "verdict_confidence",
]
