"""The citation audit and claim checks inside the audit pipeline: lake tables, response figures, review routing."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamPipeline

from dashboards.views import connect_lake
from pipelines.runner.audit_graph import build_pipeline
from tests.support.audit_messages import EVIDENCE, at, message, raw

PRESCRIBED = "The patient was prescribed 50 mg of metoprolol twice daily on March 3, 2024"
POTASSIUM = "Lab results showed potassium at 4.2 mmol/L on admission"
CLAIMS = [
    {"claim_text": PRESCRIBED, "source_doc_ids": ["1"], "confidence": "HIGH"},
    {"claim_text": "Potassium was 5.9 mmol/L", "source_doc_ids": ["2"], "confidence": "HIGH"},
    {"claim_text": "A follow-up is planned", "source_doc_ids": [], "confidence": 0.4},
]


def _inputs():
    messages = [
        message("ok", answer=f"{PRESCRIBED} [1]. {POTASSIUM} [2].", claims=CLAIMS),
        message("fabricated", answer=f"{PRESCRIBED} [9].", metadata={"tenant": "acme", "risk_level": "low"}),
        message("swapped-high", answer=f"{PRESCRIBED} [2]. {POTASSIUM} [1].", metadata={"risk_level": "high"}),
        message("swapped-low", answer=f"{PRESCRIBED} [2]. {POTASSIUM} [1].", metadata={"risk_level": "low"}),
        message("no-citations", answer=f"{PRESCRIBED}.", evidence=EVIDENCE),
    ]
    return [(raw(m), at(i)) for i, m in enumerate(messages)]


def test_citations_and_claims_reach_the_lake_and_routing(tmp_path):
    lake = tmp_path / "lake"
    with BeamPipeline(options=PipelineOptions([f"--lake={lake}", "--runner=FnApiRunner"])) as p:
        build_pipeline(p, p.options, source=p | beam.Create(_inputs()))
    con = connect_lake(str(lake))

    citations = con.execute(
        "SELECT response_id, citation_index, citation_id, verification_status, overall_verdict, supporting_doc_id "
        "FROM citations ORDER BY response_id, citation_index"
    ).fetchall()
    assert citations == [
        ("fabricated", 0, "[9]", "fabricated", "FAIL", None),
        ("ok", 0, "[1]", "accurate", "PASS", None),
        ("ok", 1, "[2]", "accurate", "PASS", None),
        ("swapped-high", 0, "[2]", "misattributed", "FAIL", "1"),
        ("swapped-high", 1, "[1]", "misattributed", "FAIL", "2"),
        ("swapped-low", 0, "[2]", "misattributed", "FAIL", "1"),
        ("swapped-low", 1, "[1]", "misattributed", "FAIL", "2"),
    ]

    trail = con.execute("SELECT DISTINCT verifier, audited_at IS NOT NULL FROM citations").fetchall()
    assert trail == [("heuristic", True)]

    claims = con.execute(
        "SELECT claim_index, missing_source, low_confidence, overconfident, verified_verdict "
        "FROM claims WHERE response_id = 'ok' ORDER BY claim_index"
    ).fetchall()
    assert claims == [
        (0, False, False, False, "fully_grounded"),
        (1, False, False, True, "contradicted"),
        (2, True, True, False, None),
    ]

    responses = {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT response_id, citation_total, citation_failed, citation_critical_failures, "
            "attribution_coverage_rate, low_confidence_claim_rate, needs_review, review_reasons FROM responses"
        ).fetchall()
    }
    assert responses["ok"][:5] == (2, 0, [], 2 / 3, 1 / 3)
    assert responses["no-citations"][:3] == (0, 0, [])
    assert responses["no-citations"][3] is None  # no claims logged: no rate, not a zero

    # A fabricated citation is critical at any risk level; other citation failures route only high-risk traffic.
    fabricated_reasons = responses["fabricated"][6]
    assert responses["fabricated"][5] and any("[9]" in r and "fabricated" in r for r in fabricated_reasons)
    assert any("high-risk citation [2]" in r and "misattributed" in r for r in responses["swapped-high"][6])
    assert not any("citation" in r for r in responses["swapped-low"][6])
