"""What the judge is asked about and what it must answer, as pydantic models.

Input side: a `JudgeItem` is one answer's share of a judge task (`sentences`,
`citations` or `claims`), with its evidence passages keyed by their ids.
Output side: one reply model per task; `reply_json_schema(task)` derives the
JSON schema sent as the `response_format` (strict-mode compatible: every
property required, no extra properties). A `JudgeOutcome` is the harness's
verdict on one item after validation and retries.
"""

from __future__ import annotations

import copy
from enum import StrEnum
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from schemas.base import Confidence, NonEmptyStr, StrictModel
from schemas.judge import JudgeCallRow
from schemas.reports import (
    AttributionVerdict,
    ClaimSupportLevel,
    OverallVerdict,
    SentenceVerdict,
    VerificationStatus,
)

__all__ = [
    "CitationAnswer",
    "CitationInput",
    "CitationJudgment",
    "CitationReply",
    "ClaimAnswer",
    "ClaimInput",
    "ClaimJudgment",
    "ClaimReply",
    "IndexedSentence",
    "JudgeItem",
    "JudgeOutcome",
    "JudgeStatus",
    "Passage",
    "SentenceAnswer",
    "SentenceReply",
    "Task",
    "reply_json_schema",
    "reply_model",
]


class Task(StrEnum):
    """The three things the judge can be asked to do."""

    sentences = "sentences"
    citations = "citations"
    claims = "claims"


JudgeStatus = Literal["judged", "judge_validation_failed", "judge_error"]


class Passage(StrictModel):
    """One evidence passage as the judge sees it."""

    evidence_id: NonEmptyStr
    text: str


class IndexedSentence(StrictModel):
    """One answer sentence with its position in the whole answer."""

    sentence_index: int = Field(ge=0)
    text: str


class CitationInput(StrictModel):
    """One citation to audit: which passage it points at, the claim it backs, any quote."""

    citation_id: NonEmptyStr
    cited_evidence_id: str
    claim_text: str
    quote: str | None = None


class ClaimInput(StrictModel):
    """One generator-logged claim with the passages it says it came from."""

    claim_index: int = Field(ge=0)
    claim_text: str
    source_doc_ids: list[str] = Field(default_factory=list)


class JudgeItem(StrictModel):
    """One answer's share of one judge task."""

    task: Task
    response_id: NonEmptyStr
    query: str = ""
    answer: str = ""
    evidence: list[Passage]
    sentences: list[IndexedSentence] = Field(default_factory=list)
    citations: list[CitationInput] = Field(default_factory=list)
    claims: list[ClaimInput] = Field(default_factory=list)

    @property
    def passages(self) -> dict[str, str]:
        return {p.evidence_id: p.text for p in self.evidence}


class SentenceAnswer(StrictModel):
    """The judge's verdicts on the sentences of one answer."""

    answer_id: str
    sentences: list[SentenceVerdict]


class SentenceReply(StrictModel):
    """The judge's reply to a sentence attribution audit."""

    answers: list[SentenceAnswer]


class CitationJudgment(StrictModel):
    """The judge's part of one citation's audit; existence and quote checks stay deterministic."""

    citation_id: str
    claim_support_level: ClaimSupportLevel
    contextual_fidelity_issues: list[str]
    overall_verdict: OverallVerdict
    verification_status: VerificationStatus
    source_text_excerpt: str
    auditor_notes: str


class CitationAnswer(StrictModel):
    """The judge's audit of the citations of one answer."""

    answer_id: str
    audit_results: list[CitationJudgment]


class CitationReply(StrictModel):
    """The judge's reply to a citation audit."""

    answers: list[CitationAnswer]


class ClaimJudgment(StrictModel):
    """The judge's check of one logged claim against the passages it names."""

    claim_index: int = Field(ge=0)
    attribution_verdict: AttributionVerdict
    confidence: Confidence
    supporting_evidence_ids: list[str]
    supporting_evidence_excerpts: list[str]
    notes: str


class ClaimAnswer(StrictModel):
    """The judge's checks of the claims of one answer."""

    answer_id: str
    claims: list[ClaimJudgment]


class ClaimReply(StrictModel):
    """The judge's reply to a per-claim attribution check."""

    answers: list[ClaimAnswer]


class JudgeOutcome(StrictModel):
    """What the harness concluded for one item: validated verdicts, or why there are none."""

    response_id: str
    task: Task
    status: JudgeStatus
    attempts: int = Field(ge=0, le=3)
    sentence_verdicts: list[SentenceVerdict] = Field(default_factory=list)
    citation_judgments: list[CitationJudgment] = Field(default_factory=list)
    claim_judgments: list[ClaimJudgment] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    calls: list[JudgeCallRow] = Field(default_factory=list)


_REPLY_MODELS: dict[Task, type[BaseModel]] = {
    Task.sentences: SentenceReply,
    Task.citations: CitationReply,
    Task.claims: ClaimReply,
}
_ANSWER_MODELS: dict[Task, tuple[type[BaseModel], str]] = {
    Task.sentences: (SentenceVerdict, "sentences"),
    Task.citations: (CitationJudgment, "audit_results"),
    Task.claims: (ClaimJudgment, "claims"),
}


def reply_model(task: Task) -> type[BaseModel]:
    return _REPLY_MODELS[task]


def part_model(task: Task) -> tuple[type[BaseModel], str]:
    """The model of one verdict of a task, and the key of the verdict list in each answer."""
    return _ANSWER_MODELS[task]


def _strict(node: Any) -> Any:
    # OpenAI's strict mode wants every property required and nothing else allowed; defaults mean nothing there.
    if isinstance(node, list):
        return [_strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in ("default", "title", "properties")}
    if "properties" in node:  # property names are data, not keywords: a field called "title" stays
        out["properties"] = {k: _strict(v) for k, v in node["properties"].items()}
        out["required"] = list(node["properties"])
        out["additionalProperties"] = False
    return out


@cache
def _schema(task: Task) -> dict[str, Any]:
    schema: dict[str, Any] = _strict(reply_model(task).model_json_schema())  # a dict in, a dict out
    return schema


def reply_json_schema(task: Task) -> dict[str, Any]:
    """The JSON schema of a task's reply, from its pydantic model, ready for `response_format`."""
    return copy.deepcopy(_schema(task))
