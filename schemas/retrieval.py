"""Retrieval quality of one response, and its lake table `retrieved_passages`.

`RetrievalReport` is what the audit's ScoreRetrieval step finds (`transforms.retrieval.report`): how much
the passages are about the query, whether the answer addresses it, and which passages the answer drew on.
The response's figures go to its `responses` row; each passage's go to one `retrieved_passages` row, the link
between the response and the `passages` row of the passage's text (`passage_sha256`). The scores cannot live
in `passages` itself: a passage is stored once per content hash, and the same text is relevant to one query
and not to another. Importing this module registers the table::

    SELECT r.response_id, l.rank, l.context_relevance, l.used, p.content
    FROM retrieved_passages l JOIN responses r USING (response_id)
    JOIN passages p ON p.passage_sha256 = l.passage_sha256;
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from schemas.base import Confidence, StrictModel
from schemas.lake import register_table

__all__ = ["PassageRetrieval", "RetrievalReport", "RetrievedPassageRow"]


class PassageRetrieval(StrictModel):
    """One retrieved passage of a response: where the retriever put it and what the audit found of it."""

    passage_index: int = Field(ge=0)
    """Its position in the logged evidence."""
    doc_id: str
    rank: int | None = None
    """The retriever's rank as logged (1 is best); null when the log gives none."""
    retriever_score: float | None = None
    """The retriever's own score as logged (its scale, not ours); null when the log gives none."""
    context_relevance: Confidence
    """How much the passage is about the query (`transforms.retrieval.relevance.context_relevance`)."""
    used: bool
    """Whether a supported sentence of the answer drew on it."""


class RetrievalReport(StrictModel):
    """The retrieval scores of one response: per passage, and the response's figures."""

    passages: list[PassageRetrieval] = Field(default_factory=list)
    mean_context_relevance: Confidence | None = None
    """Mean of the passages' context relevance; null without passages."""
    max_context_relevance: Confidence | None = None
    answer_relevance: Confidence | None = None
    """How much the answer's claim sentences address the query."""
    empty_retrieval: bool
    """No passage reaches the relevance threshold (`RelevanceConfig.empty_threshold`); true without passages."""
    passages_used_share: Confidence | None = None
    """Share of the retrieved passages a supported sentence drew on; null without passages."""
    top_passage_support_share: Confidence | None = None
    """Share of the answer's claim sentences supported by the top-ranked passage; null unless every passage
    logged a rank (and the answer has a claim sentence)."""


class RetrievedPassageRow(PassageRetrieval):
    """One passage a response retrieved, keyed by the response and the passage's position in its evidence."""

    response_id: str
    event_time: datetime
    window_start: datetime
    audited_at: datetime
    tenant: str
    retriever_version: str | None = None
    passage_sha256: str = ""
    """The `passages` row of its text (in the hour of `event_time`), as the lake stores it."""


register_table(
    "retrieved_passages",
    RetrievedPassageRow,
    time_column="event_time",
    key=("response_id", "passage_index"),
    version_column="audited_at",
)
