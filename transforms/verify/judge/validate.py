"""Checks every judge reply before anything in it is believed.

`validate_reply(task, text, items)` parses the reply and checks, answer by
answer: the answer is there exactly once; every input sentence (or citation,
or claim) is there exactly once and nothing else is; each verdict validates
against its pydantic model (enums, confidence in [0, 1], no NaN); every
evidence id belongs to that answer's passages; every excerpt is a verbatim
substring of a passage it is attributed to; and the verdict agrees with its
own fields (a contradiction names a contradicting passage, a fabricated
citation fails, ...). Answers that pass are accepted even when others in the
same batched reply fail, so a retry only re-sends what was wrong.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from schemas.reports import AttributionVerdict, ClaimSupportLevel, OverallVerdict, SentenceVerdict, VerificationStatus
from transforms.verify.judge.schema import CitationJudgment, ClaimJudgment, JudgeItem, Task, part_model

__all__ = ["REPLY", "ReplyValidation", "validate_reply"]

REPLY = "reply"
"""The key of problems that concern the whole reply rather than one answer."""

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)
_MAX_ERRORS_PER_ANSWER = 20


@dataclass
class ReplyValidation:
    """The outcome of checking one reply: accepted verdicts and problems, by answer id."""

    accepted: dict[str, list[BaseModel]] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    parsed: dict[str, Any] = field(default_factory=dict)

    @property
    def reply_errors(self) -> list[str]:
        return self.errors.get(REPLY, [])


def _parse(text: str) -> tuple[Any, str | None]:
    fenced = _FENCE.match(text)
    if fenced:  # a fence around otherwise valid JSON is a formatting slip, not a wrong verdict
        text = fenced.group(1)
    if not text.strip():
        return None, "the reply is empty"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as err:
        return None, f"the reply is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})"


def _pydantic_errors(where: str, err: ValidationError) -> list[str]:
    return [f"{where}: field {'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()]


def _excerpt_errors(
    where: str, kind: str, ids: Sequence[str], excerpts: Sequence[str], passages: dict[str, str]
) -> list[str]:
    problems = []
    known = [i for i in ids if i in passages]
    for excerpt in excerpts:
        if not excerpt.strip():
            problems.append(f"{where}: an empty {kind} excerpt")
        elif not any(excerpt in passages[i] for i in known):
            listed = ", ".join(repr(i) for i in ids) or "none"
            problems.append(
                f"{where}: {kind} excerpt {excerpt!r} is not a verbatim substring of the passages it cites ({listed})"
            )
    return problems


def _unknown_ids(where: str, ids: Sequence[str], passages: dict[str, str]) -> list[str]:
    known = ", ".join(repr(i) for i in passages) or "none"
    return [f"{where}: unknown evidence id {i!r} (this answer's ids: {known})" for i in ids if i not in passages]


def _check_sentence(item: JudgeItem, v: SentenceVerdict, texts: dict[int, str]) -> list[str]:
    where, passages = f"sentence {v.sentence_index}", item.passages
    problems = _unknown_ids(where, [*v.supporting_evidence_ids, *v.contradicting_evidence_ids], passages)
    expected = texts.get(v.sentence_index)
    if expected is not None and " ".join(v.sentence_text.split()) != " ".join(expected.split()):
        problems.append(f"{where}: sentence_text {v.sentence_text!r} differs from the given text {expected!r}")
    problems += _excerpt_errors(
        where, "supporting", v.supporting_evidence_ids, v.supporting_evidence_excerpts, passages
    )
    problems += _excerpt_errors(
        where, "contradicting", v.contradicting_evidence_ids, v.contradicting_evidence_excerpts, passages
    )
    verdict = v.attribution_verdict
    if verdict is AttributionVerdict.fully_grounded and not v.supporting_evidence_ids:
        problems.append(f"{where}: fully_grounded but no supporting_evidence_ids")
    if verdict is AttributionVerdict.partially_grounded and not v.unsupported_spans:
        problems.append(f"{where}: partially_grounded but no unsupported_spans")
    if verdict is AttributionVerdict.contradicted and not v.contradicting_evidence_ids:
        problems.append(f"{where}: contradicted but no contradicting_evidence_ids")
    if expected is not None:
        for span in v.unsupported_spans:
            if span not in expected:
                problems.append(f"{where}: unsupported span {span!r} is not part of the sentence")
    if v.multi_source_flag and len(set(v.supporting_evidence_ids)) < 2:
        problems.append(f"{where}: multi_source_flag is true but fewer than two supporting passages are listed")
    if v.multi_source_flag and not v.provenance_notes.strip():
        problems.append(f"{where}: multi_source_flag is true but provenance_notes is empty")
    return problems


def _check_citation(item: JudgeItem, j: CitationJudgment, cited: dict[str, str]) -> list[str]:
    where, passages = f"citation {j.citation_id}", item.passages
    doc_id = cited.get(j.citation_id)
    problems: list[str] = []
    if doc_id is None:
        return problems
    if doc_id not in passages:
        if j.verification_status is not VerificationStatus.fabricated or j.overall_verdict is not OverallVerdict.FAIL:
            problems.append(f"{where}: cites {doc_id!r}, which is not among the passages: must be fabricated and FAIL")
        if j.source_text_excerpt:
            problems.append(f"{where}: source_text_excerpt given for a passage that does not exist")
        return problems
    if j.verification_status is VerificationStatus.fabricated:
        problems.append(f"{where}: marked fabricated but passage {doc_id!r} exists")
    if j.source_text_excerpt and j.source_text_excerpt not in passages[doc_id]:
        problems.append(
            f"{where}: source_text_excerpt {j.source_text_excerpt!r} is not a verbatim substring of passage {doc_id!r}"
        )
    supportive = (ClaimSupportLevel.SUPPORTS, ClaimSupportLevel.PARTIALLY_SUPPORTS)
    if j.claim_support_level in supportive and not j.source_text_excerpt.strip():
        problems.append(f"{where}: {j.claim_support_level.value} needs a source_text_excerpt from passage {doc_id!r}")
    if j.overall_verdict is OverallVerdict.PASS and (
        j.claim_support_level is not ClaimSupportLevel.SUPPORTS
        or j.verification_status in (VerificationStatus.misattributed, VerificationStatus.fabricated)
    ):
        problems.append(f"{where}: PASS contradicts {j.claim_support_level.value} / {j.verification_status.value}")
    return problems


def _check_claim(item: JudgeItem, j: ClaimJudgment) -> list[str]:
    where = f"claim {j.claim_index}"
    problems = _unknown_ids(where, j.supporting_evidence_ids, item.passages)
    problems += _excerpt_errors(
        where, "supporting", j.supporting_evidence_ids, j.supporting_evidence_excerpts, item.passages
    )
    if j.attribution_verdict is AttributionVerdict.fully_grounded and not j.supporting_evidence_ids:
        problems.append(f"{where}: fully_grounded but no supporting_evidence_ids")
    return problems


def _expected_keys(task: Task, item: JudgeItem) -> list[Any]:
    if task is Task.sentences:
        return [s.sentence_index for s in item.sentences]
    if task is Task.citations:
        return [c.citation_id for c in item.citations]
    return [c.claim_index for c in item.claims]


_KEY_FIELD = {Task.sentences: "sentence_index", Task.citations: "citation_id", Task.claims: "claim_index"}
_NOUN = {Task.sentences: "sentence", Task.citations: "citation", Task.claims: "claim"}


def _check_answer(task: Task, item: JudgeItem, entry: Any) -> tuple[list[BaseModel], list[str]]:
    model, list_key = part_model(task)
    noun, key_field = _NOUN[task], _KEY_FIELD[task]
    parts = entry.get(list_key) if isinstance(entry, dict) else None
    if not isinstance(parts, list):
        return [], [f"the answer has no {list_key!r} list"]
    problems: list[str] = []
    verdicts: list[BaseModel] = []
    for position, raw in enumerate(parts):
        try:
            verdicts.append(model.model_validate(raw))
        except ValidationError as err:
            key = raw.get(key_field, f"#{position}") if isinstance(raw, dict) else f"#{position}"
            problems += _pydantic_errors(f"{noun} {key}", err)
    expected = _expected_keys(task, item)
    seen = Counter(getattr(v, key_field) for v in verdicts)
    for key in expected:
        if key not in seen and not any(p.startswith(f"{noun} {key}:") for p in problems):
            problems.append(f"{noun} {key} is missing from the reply")
        elif seen[key] > 1:
            problems.append(f"{noun} {key} appears {seen[key]} times; it must appear exactly once")
    for key in seen.keys() - set(expected):
        problems.append(f"{noun} {key} was not in the input; reply only about the given {noun}s")
    texts = {s.sentence_index: s.text for s in item.sentences}
    cited = {c.citation_id: c.cited_evidence_id for c in item.citations}
    for v in verdicts:
        if isinstance(v, SentenceVerdict):
            problems += _check_sentence(item, v, texts)
        elif isinstance(v, CitationJudgment):
            problems += _check_citation(item, v, cited)
        elif isinstance(v, ClaimJudgment):
            problems += _check_claim(item, v)
    order = {key: i for i, key in enumerate(expected)}
    verdicts.sort(key=lambda v: order.get(getattr(v, key_field), len(order)))
    return verdicts, problems[:_MAX_ERRORS_PER_ANSWER]


def validate_reply(task: Task, text: str, items: Sequence[JudgeItem]) -> ReplyValidation:
    """Check one reply against the items it answers; never raises on anything the judge wrote."""
    result = ReplyValidation()
    document, parse_error = _parse(text)
    if parse_error is None and not (isinstance(document, dict) and isinstance(document.get("answers"), list)):
        parse_error = 'the reply must be a JSON object with an "answers" list'
    if parse_error is not None:
        result.errors = {item.response_id: [parse_error] for item in items}
        return result
    entries: dict[str, list[Any]] = {}
    for entry in document["answers"]:
        answer_id = entry.get("answer_id") if isinstance(entry, dict) else None
        entries.setdefault(str(answer_id), []).append(entry)
    wanted = {item.response_id for item in items}
    for answer_id in entries.keys() - wanted:
        result.errors.setdefault(REPLY, []).append(f"answer_id {answer_id!r} is not one of the given answers")
    for item in items:
        found = entries.get(item.response_id, [])
        result.parsed[item.response_id] = found[0] if len(found) == 1 else found
        if not found:
            result.errors[item.response_id] = ["the answer is missing from the reply"]
            continue
        if len(found) > 1:
            result.errors[item.response_id] = [f"the answer appears {len(found)} times; it must appear exactly once"]
            continue
        verdicts, problems = _check_answer(task, item, found[0])
        if problems:
            result.errors[item.response_id] = problems
        else:
            result.accepted[item.response_id] = verdicts
    return result
