"""The review queue by reason: the router's reasons, grouped into kinds an operator counts, per tenant."""

from __future__ import annotations

import pandas as pd

from dashboards.review_reasons import reason_kind, review_queue


def test_each_reason_the_router_writes_has_its_kind():
    assert reason_kind("sentence 2 contradicted by evidence kb-1054") == "contradicted sentence"
    assert reason_kind("sentence 0 ungrounded (no supporting evidence)") == "ungrounded sentence"
    assert reason_kind("sentence 1 confidence 0.55 below 0.70 (evidence 1)") == "low-confidence sentence"
    assert reason_kind("citation critical failure: [9] names no passage of the evidence (fabricated)") == (
        "fabricated citation"
    )
    assert reason_kind("high-risk citation [2] (sentence 1, source 2) failed (misattributed): x") == (
        "high-risk citation failed"
    )
    assert reason_kind("high-risk claim 0: low confidence") == "high-risk claim"
    assert reason_kind("answer given with no usable evidence (INSUFFICIENT_EVIDENCE)") == "no usable evidence"
    assert reason_kind("LIMIT_EXCEEDED_SENTENCES: more than 200 sentences; only the first 200 were audited") == (
        "audit limit"
    )
    assert reason_kind("something new") == "other"


def test_review_queue_counts_a_response_once_per_kind_with_its_tenant_share():
    responses = pd.DataFrame(
        {
            "tenant": ["acme", "acme", "acme", "acme", "zeta"],
            "needs_review": [True, True, False, False, True],
            "review_reasons": [
                ["sentence 0 contradicted by evidence 1", "sentence 2 contradicted by evidence 3"],
                ["sentence 1 ungrounded (no supporting evidence)"],
                [],
                None,
                ["sentence 0 contradicted by evidence 1"],
            ],
        }
    )
    queue = review_queue(responses)
    rows = {(t, r): (n, s) for t, r, n, s in queue.itertuples(index=False)}
    assert rows == {
        ("acme", "contradicted sentence"): (1, 0.25),
        ("acme", "ungrounded sentence"): (1, 0.25),
        ("zeta", "contradicted sentence"): (1, 1.0),
    }
