"""Lake rows of the review workbench: the `passages` table and the append-only `reviews` table.

- `passages`: each evidence passage's full text, once per content hash and hour partition. A response's
  `evidence_sha256` and a sentence's `supporting_passage_sha256` / `contradicting_passage_sha256` name them,
  and the sentence's `*_starts` / `*_ends` give the character offsets of its excerpts inside them.
- `reviews`: one row per reviewed sentence per submission. Nothing is overwritten: a later review of the same
  sentence supersedes the earlier one in the `reviews_latest` view (`transforms.review.store`), both rows stay.

Importing this module registers both tables.

    SELECT label, count(*) FROM reviews GROUP BY 1;
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from schemas.base import Confidence, StrictModel
from schemas.lake import register_table
from schemas.reports import AttributionVerdict
from schemas.responses import RiskLevel

__all__ = ["PassageRow", "ReviewRow"]


class PassageRow(StrictModel):
    """One evidence passage's text, stored once per content hash in each hour partition."""

    passage_sha256: str
    """SHA-256 (hex) of `content` as stored (after `--redact` masking, when it was on)."""
    partition_hour: datetime
    """The hour of the responses that retrieved it (their `event_time`, truncated): the partition it lies in."""
    content: str
    audited_at: datetime


class ReviewRow(StrictModel):
    """A reviewer's label for one sentence, with the verifier's verdict as it stood when the label was given."""

    review_id: str
    response_id: str
    sentence_index: int = Field(ge=0)
    label: AttributionVerdict
    verifier_verdict: AttributionVerdict
    verifier_confidence: Confidence
    verifier_version: str
    calibration_sha256: str | None = None
    reviewer: str
    note: str = ""
    reviewed_at: datetime
    tenant: str
    risk_level: RiskLevel
    event_time: datetime
    """The response's `event_time`: where its rows lie in the lake."""
    source: str = "web"
    """How the label arrived: `web` (the review app), `cli` (`review label`) or `import` (`review import`)."""


register_table(
    "passages",
    PassageRow,
    time_column="partition_hour",
    key=("passage_sha256", "partition_hour"),
    version_column="audited_at",
)
register_table("reviews", ReviewRow, time_column="reviewed_at", key=("review_id",), version_column="reviewed_at")
