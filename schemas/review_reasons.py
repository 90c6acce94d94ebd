"""The kinds of review reasons: the router's wording (`transforms.audit.routing`) as patterns a reader counts.

The router writes reasons as sentences naming the sentence and the evidence ids, which a reviewer needs but a
count cannot group. Each pattern here follows its wording, in its order; a reason that matches none is of
kind `other`, so a new rule shows up instead of vanishing. The patterns are simple enough for Python's `re`
and DuckDB's RE2 alike. The review queue does not use them: it filters and counts by the routes the audit
stores (`responses.review_routes`), as matching every reason's text made an uncompacted lake's queue slow.
"""

from __future__ import annotations

import re

from schemas.reports import LIMIT_FLAG_PREFIX

__all__ = ["KIND_PATTERNS", "REASON_KINDS"]

_PATTERNS = (
    (r"^sentence \d+ contradicted", "contradicted sentence"),
    (r"^sentence \d+ ungrounded", "ungrounded sentence"),
    (r"^sentence \d+ confidence", "low-confidence sentence"),
    (r"^sentence \d+ uncertain", "uncertain sentence"),
    (r"^checks_disagree", "checks disagree"),
    (r"^judge_", "judge unusable"),
    (r"no usable evidence|INSUFFICIENT_EVIDENCE", "no usable evidence"),
    (r"^citation critical failure", "fabricated citation"),
    (r"^high-risk citation", "high-risk citation failed"),
    (r"^high-risk claim", "high-risk claim"),
    (r"^high-risk critical flag", "high-risk flag"),
    ("^" + re.escape(LIMIT_FLAG_PREFIX), "audit limit"),
    (r"^sample:", "random sample"),
)
KIND_PATTERNS: dict[str, str] = {kind: pattern for pattern, kind in _PATTERNS}
"""Each kind's regular expression, in the router's order."""
REASON_KINDS: tuple[str, ...] = (*KIND_PATTERNS, "other")
