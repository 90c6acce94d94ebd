"""Agreement between verifier and reviewers, monitored: the verifier degrades for one tenant against simulated
reviewers whose labels come from a labelled file, window metrics show the agreement fall in that slice, and
`drift` raises a `review_agreement_drop` alert naming it, grouped into an incident."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.drift import run_drift
from schemas import LoggedResponse, Origin, ParsedResponse
from transforms.audit.stages import audit_response
from transforms.io.lake.rows import to_lake_rows
from transforms.io.lake.writer import write_table
from transforms.monitoring.drift import DriftConfig
from transforms.monitoring.review_agreement import AGREEMENT_CHECK, agreement_p_value
from transforms.monitoring.window_metrics import compute_window_metrics, stats_from_audited
from transforms.verify.heuristic.verifier import HeuristicVerifier

SCENARIO = pytest.mark.scenario  # a lake of nine windows audited and drift-checked: the integration tier

LABELLED = Path(__file__).parents[2] / "data" / "review_agreement" / "labelled.jsonl"
"""Answers with their true verdict: half fully grounded, half a contradicted number."""
START = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
WINDOW = timedelta(seconds=60)
WINDOWS, DEGRADED_FROM, PER_TENANT = 9, 7, 24


def _quiet(_line: str) -> None:
    pass


def _audit_windows(lake: str) -> list[dict]:
    """Audit nine windows of two tenants' traffic; from window 7 on, tenant beta's verifier no longer checks
    numbers (a release that turned its quantity cue off). Returns the simulated reviewers' labels."""
    records = [json.loads(line) for line in LABELLED.read_text().splitlines()]
    healthy, degraded = HeuristicVerifier(), HeuristicVerifier({"cues": {"quantity": "off"}})
    tables: dict[str, list] = {}
    stats, labels = [], []
    for w in range(WINDOWS):
        start = START + w * WINDOW
        for tenant in ("acme", "beta"):
            verifier = degraded if tenant == "beta" and w >= DEGRADED_FROM else healthy
            for k in range(PER_TENANT):
                record = records[k % len(records)]
                response = LoggedResponse.model_validate(
                    {
                        "response_id": f"{tenant}-{w}-{k}",
                        "timestamp": (start + timedelta(seconds=k)).isoformat(),
                        "query": "What does the record say?",
                        "answer": record["answer"],
                        "evidence": record["evidence"],
                        "metadata": {"tenant": tenant, "risk_level": "low", "retriever_version": "r7"},
                    }
                )
                audited = audit_response(
                    ParsedResponse(response=response, origin=Origin(source="scenario", offset=k)),
                    verifier=verifier,
                    window_start=start,
                    window_end=start + WINDOW,
                    now=start + WINDOW,
                )
                stats.append(stats_from_audited(audited))
                for table, row in to_lake_rows(audited):
                    tables.setdefault(table, []).append(row)
                label = {"response_id": response.response_id, "sentence_index": 0, "label": record["label"]}
                labels.append({**label, "reviewer": "simulated"})
    tables["window_metrics"] = [m.model_dump() for m in compute_window_metrics(stats)]
    for table, rows in tables.items():
        write_table(lake, table, rows)
    return labels


@pytest.fixture(scope="module")
def reviewed_lake(tmp_path_factory):
    folder = tmp_path_factory.mktemp("agreement")
    lake = str(folder / "lake")
    labels = _audit_windows(lake)
    path = folder / "labels.jsonl"
    path.write_text("".join(json.dumps(label) + "\n" for label in labels))
    assert main(["review", "import", "--lake", lake, str(path)]) == 0  # computes the windows' metrics again
    return lake


@SCENARIO
def test_window_metrics_hold_agreement_per_slice_where_reviews_exist(reviewed_lake):
    rows = duckdb.sql(
        f"""SELECT slice_value, window_start, reviewed_sentences, review_agreement, computed_at
            FROM read_parquet('{reviewed_lake}/window_metrics/**/*.parquet') WHERE slice_dimension = 'tenant'
            QUALIFY row_number() OVER (PARTITION BY slice_value, window_start ORDER BY computed_at DESC) = 1
            ORDER BY 1, 2"""
    ).fetchall()
    agreement = {(tenant, start.minute): (n, share) for tenant, start, n, share, _ in rows}
    assert agreement[("acme", 8)] == (PER_TENANT, 1.0)
    assert agreement[("beta", 0)] == (PER_TENANT, 1.0)
    assert agreement[("beta", 8)] == (PER_TENANT, 0.5)  # the contradicted half is no longer caught


@SCENARIO
def test_drift_alerts_on_the_degraded_slice_and_an_incident_groups_it(reviewed_lake):
    outcome = run_drift(reviewed_lake, DriftConfig(), workspace=False, out=_quiet)
    fired = [a for a in outcome.fired if a.check == AGREEMENT_CHECK]
    slices = {(a.slice_dimension, a.slice_value) for a in fired}
    assert ("tenant", "beta") in slices and ("tenant", "acme") not in slices
    assert all(a.window_start >= START + DEGRADED_FROM * WINDOW for a in fired)
    beta = next(a for a in fired if a.slice_value == "beta")
    assert beta.current_value == 0.5 and beta.reference_value == 1.0
    assert "tenant=beta" in beta.message or "tenant beta" in beta.message
    grouped = {alert for incident in outcome.incident_changes for alert in incident.alert_ids}
    assert beta.alert_id in grouped
    checks = [c for c in outcome.checks if c.check == AGREEMENT_CHECK and c.slice_value == "acme"]
    assert checks and all(c.status.value in ("ok", "insufficient_data") for c in checks)


def test_the_binomial_test_weighs_the_number_of_reviews():
    assert agreement_p_value(12, 24, 144, 144) < 1e-9
    assert agreement_p_value(1, 2, 144, 144) > 0.001  # one disagreement in two reviews is no evidence
