"""How much of one response the audit checks: the limits that bound the work per message, in one place.

The input contract accepts messages up to `MAX_MESSAGE_BYTES` (about 4.8 MB): one passage can be
megabytes long, an answer can carry 20,000 citation markers. Auditing all of it took minutes for one message
and held up the run behind it. So the audit checks the part of a response within these limits, and every limit
a response goes over is named in its critical flags (`LIMIT_EXCEEDED_<NAME>`, e.g.
`LIMIT_EXCEEDED_PASSAGE_CHARS`), which send it to review with a reason saying what was left unchecked::

    bounded, exceeded = bound_response(response)   # the response as audited, and the flags
    exceeded                                       # ["LIMIT_EXCEEDED_SENTENCES"] or []

Nothing is dropped silently: what is past a limit is not audited, and the flag says so. Responses within
every limit are audited exactly as before. The figures behind the values are in docs/limits.md
(`scripts/bench_limits.py`).
"""

from __future__ import annotations

import re

from schemas import LIMIT_FLAG_PREFIX, LoggedResponse
from transforms.attribution.markers import sentence_spans

__all__ = [
    "LIMITS",
    "LIMIT_FLAG_PREFIX",
    "MAX_CLAIMS",
    "MAX_CITATIONS",
    "MAX_EVIDENCE_CHARS",
    "MAX_MARKERS",
    "MAX_PASSAGES",
    "MAX_PASSAGE_CHARS",
    "MAX_SENTENCES",
    "bound_response",
    "describe_limit",
    "limit_flag",
]

MAX_PASSAGE_CHARS = 100_000
"""Characters of one evidence passage used as evidence (about 25 pages); the rest of the passage is not read."""

MAX_EVIDENCE_CHARS = 100_000
"""Characters of all evidence passages together; passages past this budget are kept by id with no content
(a citation of one then finds its passage, and fails for want of support, not as fabricated)."""

MAX_PASSAGES = 1_000
"""Evidence passages read, in the order given; the ones after are not part of the audited evidence."""

MAX_SENTENCES = 500
"""Answer sentences verified (the contract allows answers of 200,000 characters: 2,000-4,000 sentences);
the answer is audited up to the end of this sentence."""

MAX_MARKERS = 500
"""Bracketed citation markers ("[1]", "[doc_7]") audited; the answer is audited up to the last of them."""

MAX_CLAIMS = 100
"""Logged claims checked, in the order given."""

MAX_CITATIONS = 100
"""Logged (explicit) citations checked, in the order given."""

LIMITS = {
    "PASSAGE_CHARS": MAX_PASSAGE_CHARS,
    "EVIDENCE_CHARS": MAX_EVIDENCE_CHARS,
    "PASSAGES": MAX_PASSAGES,
    "SENTENCES": MAX_SENTENCES,
    "MARKERS": MAX_MARKERS,
    "CLAIMS": MAX_CLAIMS,
    "CITATIONS": MAX_CITATIONS,
}
"""Each limit by the name its flag carries."""

_WHAT = {
    "PASSAGE_CHARS": "characters of a passage",
    "EVIDENCE_CHARS": "characters of evidence in all",
    "PASSAGES": "evidence passages",
    "SENTENCES": "answer sentences",
    "MARKERS": "citation markers",
    "CLAIMS": "logged claims",
    "CITATIONS": "logged citations",
}
_MARKER = re.compile(r"\[[^\[\]\n]{1,120}\]")  # as transforms.attribution.markers finds them, links included
_SENTENCE_END = re.compile(r"[.!?]\s|\n")


def limit_flag(name: str) -> str:
    """The critical flag of a limit: `LIMIT_EXCEEDED_SENTENCES`."""
    return LIMIT_FLAG_PREFIX + name


def describe_limit(flag: str) -> str:
    """A reviewer's line for a limit flag: what was over which limit, and that the rest was not audited."""
    name = flag.removeprefix(LIMIT_FLAG_PREFIX)
    if name not in LIMITS:
        return flag
    return f"{flag}: more than {LIMITS[name]:,} {_WHAT[name]}; only the first {LIMITS[name]:,} were audited"


def _cut_text(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a sentence end or else a space when there is one near the cut
    (half a number such as "$3,0" would otherwise read as a claim of its own)."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    floor = limit - min(limit, 2_000)
    ends = [m.end() for m in _SENTENCE_END.finditer(head, floor)]
    if ends:
        return head[: ends[-1]].rstrip()
    space = head.rfind(" ", floor)
    return head[:space] if space > 0 else head


def _bound_answer(answer: str, exceeded: list[str]) -> str:
    spans = sentence_spans(answer) if len(answer) > MAX_SENTENCES else []  # fewer characters, fewer sentences
    if len(spans) > MAX_SENTENCES:
        exceeded.append(limit_flag("SENTENCES"))
        answer = answer[: spans[MAX_SENTENCES - 1][1]]
    if answer.count("[") > MAX_MARKERS:
        markers = [m.end() for m in _MARKER.finditer(answer)]
        if len(markers) > MAX_MARKERS:
            exceeded.append(limit_flag("MARKERS"))
            answer = answer[: markers[MAX_MARKERS - 1]]
    return answer


def _bound_evidence(evidence: list, exceeded: list[str]) -> list:
    if len(evidence) > MAX_PASSAGES:
        exceeded.append(limit_flag("PASSAGES"))
        evidence = evidence[:MAX_PASSAGES]
    bounded, budget, long_passage, over_budget = [], MAX_EVIDENCE_CHARS, False, False
    for passage in evidence:
        content = passage.content
        if len(content) > MAX_PASSAGE_CHARS:
            content, long_passage = _cut_text(content, MAX_PASSAGE_CHARS), True
        if len(content) > budget:
            content, over_budget = _cut_text(content, budget), True
        # The passage the budget ran out in is cut; every one after it keeps its id and no content.
        budget = 0 if over_budget else budget - len(content)
        bounded.append(passage if content is passage.content else passage.model_copy(update={"content": content}))
    exceeded.extend(
        limit_flag(n) for n, hit in (("PASSAGE_CHARS", long_passage), ("EVIDENCE_CHARS", over_budget)) if hit
    )
    return bounded


def bound_response(response: LoggedResponse) -> tuple[LoggedResponse, list[str]]:
    """The response cut to the audit's limits, and the flag of every limit it went over (empty: unchanged).

    The answer is cut after its `MAX_SENTENCES`-th sentence and then after its `MAX_MARKERS`-th marker; the
    evidence to `MAX_PASSAGES` passages, each to `MAX_PASSAGE_CHARS` characters, `MAX_EVIDENCE_CHARS` in all;
    the logged claims and citations to `MAX_CLAIMS` and `MAX_CITATIONS`. Within every limit the response
    itself is returned.
    """
    exceeded: list[str] = []
    answer = _bound_answer(response.answer, exceeded)
    evidence = _bound_evidence(response.evidence, exceeded)
    update: dict[str, object] = {}  # field name -> its bounded value, for model_copy
    if answer is not response.answer:
        update["answer"] = answer
    if any(a is not b for a, b in zip(evidence, response.evidence, strict=False)) or len(evidence) != len(
        response.evidence
    ):
        update["evidence"] = evidence
    for name, field, limit in (("CLAIMS", "claims", MAX_CLAIMS), ("CITATIONS", "citations", MAX_CITATIONS)):
        items = getattr(response, field)
        if items is not None and len(items) > limit:
            exceeded.append(limit_flag(name))
            update[field] = items[:limit]
    if not update:
        return response, exceeded
    return response.model_copy(update=update), exceeded
