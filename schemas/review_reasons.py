"""The kinds of review reasons: the router's wording (`transforms.audit.routing`) as patterns a reader counts.

The router writes reasons as sentences naming the sentence and the evidence ids, which a reviewer needs but a
count cannot group. Each pattern here follows its wording, in its order; a reason that matches none is of
kind `other`, so a new rule shows up instead of vanishing. The patterns are simple enough for Python's `re`
and DuckDB's RE2 alike: the dashboards classify with the first, the review queue's rollup with the second
(`reason_kinds_sql`, a bit per kind).
"""

from __future__ import annotations

import re

from schemas.reports import LIMIT_FLAG_PREFIX

__all__ = ["KIND_PATTERNS", "REASON_KINDS", "reason_kinds_sql"]

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


def reason_kinds_sql(reasons: str) -> str:
    """SQL of an integer with bit i set when one of the reasons (`reasons`: SQL of a list of strings) is of
    the i-th kind of `KIND_PATTERNS` (`other` has no bit). Each reason is matched on its own: an anchored
    pattern gives up at a reason's first characters, where over the reasons joined one a line it had to look
    for every line start (3.5 times slower)."""
    return " + ".join(
        f"CASE WHEN len(list_filter({reasons}, lambda r: regexp_matches(r, '{pattern}'))) > 0 THEN {1 << i} ELSE 0 END"
        for i, pattern in enumerate(KIND_PATTERNS.values())
    )
