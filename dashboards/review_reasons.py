"""The review queue by reason: each review reason the router wrote, as one short kind an operator can count.

    reason_kind("sentence 2 contradicted by evidence kb-1054")   # "contradicted sentence"
    review_queue(responses)   # one row per (tenant, kind): responses in review for that reason

`transforms.audit.routing.decide_review` writes reasons as sentences naming the sentence and the evidence
ids, which a reviewer needs but a count cannot group: the patterns of `schemas.review_reasons` follow its
wording, in its order. A reason that matches none counts as `other`, so a new rule shows up instead of vanishing.
"""

from __future__ import annotations

import re

import pandas as pd

from schemas.review_reasons import KIND_PATTERNS, REASON_KINDS

__all__ = ["REASON_KINDS", "KIND_PATTERNS", "reason_kind", "review_queue"]

_COMPILED = [(re.compile(pattern), kind) for kind, pattern in KIND_PATTERNS.items()]


def reason_kind(reason: str) -> str:
    """The kind of one review reason (one of `REASON_KINDS`)."""
    for pattern, kind in _COMPILED:
        if pattern.search(reason):
            return kind
    return "other"


def review_queue(responses: pd.DataFrame) -> pd.DataFrame:
    """Per tenant and reason kind: responses in review for it, and their share of the tenant's responses.

    `responses` has `tenant`, `needs_review` and `review_reasons` (a list per response); a response with two
    reasons of one kind counts once for it. Sorted by responses, most first."""
    columns = ["tenant", "reason", "responses_in_review", "share_of_tenant"]
    if not len(responses):
        return pd.DataFrame(columns=columns)
    totals = responses.groupby("tenant").size()
    rows: list[tuple[str, str]] = []
    for tenant, needs, reasons in responses[["tenant", "needs_review", "review_reasons"]].itertuples(index=False):
        if not needs:
            continue
        kinds = {reason_kind(str(r)) for r in ([] if reasons is None else list(reasons))} or {"other"}
        rows.extend((tenant, kind) for kind in kinds)
    if not rows:
        return pd.DataFrame(columns=columns)
    counts = pd.DataFrame(rows, columns=["tenant", "reason"]).value_counts().rename("responses_in_review")
    queue = counts.reset_index()
    queue["share_of_tenant"] = queue["responses_in_review"] / queue["tenant"].map(totals)
    return queue.sort_values(["responses_in_review", "tenant", "reason"], ascending=[False, True, True])[columns]
