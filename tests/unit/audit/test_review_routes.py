"""Review routed by uncertainty, not only by risk: each reason's kind (`ReviewRoute`), the escalation band, the
deterministic random sample of confident responses, the lake's `review_routes`, and agreement on the sample
reported apart by `calibrate --from-lake`."""

from __future__ import annotations

import json

import duckdb
import pytest

from pipelines.cli import main
from schemas import ReviewRoute
from tests.support.audit_messages import message
from tests.support.review_lake import EVIDENCE
from tests.unit.audit.test_audit_routing import audited_with
from transforms.audit.routing import decide_review, in_review_sample

SURE = {"attribution_verdict": "fully_grounded", "confidence": 0.95}


def test_a_sentence_inside_the_escalation_band_is_uncertain():
    audited = audited_with([SURE, {"attribution_verdict": "fully_grounded", "confidence": 0.8}])
    assert not decide_review(audited, 0.7).needs_review  # no band: 0.8 is above the threshold
    decision = decide_review(audited.model_copy(update={"escalation_band": (0.75, 0.85)}), 0.7)
    assert decision.routes == [ReviewRoute.uncertain]
    assert decision.reasons == [
        "sentence 1 uncertain: calibrated probability 0.80 inside the escalation band [0.75, 0.85]"
    ]
    # The band is on P(fully grounded): a contradicted verdict at 0.8 is P = 0.2, outside it; it is flagged.
    contradicted = audited_with([{"attribution_verdict": "contradicted", "confidence": 0.8}])
    decision = decide_review(contradicted.model_copy(update={"escalation_band": (0.75, 0.85)}), 0.7)
    assert decision.routes == [ReviewRoute.flagged]


def test_low_confidence_is_uncertain_and_high_risk_failures_are_risk():
    low = decide_review(audited_with([{"attribution_verdict": "partially_grounded", "confidence": 0.5}]), 0.7)
    assert low.routes == [ReviewRoute.uncertain]
    high = audited_with([{"attribution_verdict": "ungrounded", "confidence": 0.95}], risk="high")
    high = high.model_copy(update={"report": high.report.model_copy(update={"critical_flags": ["OTHER_STAGE"]})})
    assert decide_review(high, 0.7).routes == [ReviewRoute.flagged, ReviewRoute.risk]


def test_the_random_sample_takes_confident_responses_only_deterministically_at_its_rate():
    confident = audited_with([SURE])
    assert decide_review(confident, 0.7, review_sample=1.0).routes == [ReviewRoute.sample]
    assert decide_review(confident, 0.7, review_sample=1.0).reasons == [
        "sample: a confident response drawn at random (100%)"
    ]
    assert not decide_review(confident, 0.7, review_sample=0.0).needs_review
    flagged = audited_with([{"attribution_verdict": "contradicted", "confidence": 0.95}])
    assert ReviewRoute.sample not in decide_review(flagged, 0.7, review_sample=1.0).routes
    ids = [f"resp-{i}" for i in range(20_000)]
    drawn = [i for i in ids if in_review_sample(i, 0.02)]
    assert drawn == [i for i in ids if in_review_sample(i, 0.02)]  # a rerun draws the same responses
    assert 0.017 < len(drawn) / len(ids) < 0.023
    # Independent of the audit's own --sample-rate hash: the audited half holds about 2% of the sample too.
    from transforms.ingest.sample import sample_point

    audited_half = [i for i in ids if sample_point(i) < 0.5]
    assert 0.015 < sum(in_review_sample(i, 0.02) for i in audited_half) / len(audited_half) < 0.025


def test_bad_review_sample_is_exit_2(tmp_path, capsys):
    traffic = tmp_path / "in.jsonl"
    traffic.write_text(json.dumps(message("r-1")) + "\n")
    lake = tmp_path / "lake"
    assert main(["audit", "--input", str(traffic), "--lake", str(lake), "--review-sample", "1.5"]) == 2
    assert "--review-sample must be in [0, 1]" in capsys.readouterr().err and not lake.exists()


def test_the_lake_records_why_and_agreement_on_the_sample_is_reported_apart(tmp_path, capsys):
    grounded = "Metoprolol 50 mg twice daily was prescribed on March 3, 2024 [kb-1]."
    wrong = "Metoprolol 80 mg twice daily was prescribed on March 3, 2024 [kb-1]."
    traffic = tmp_path / "in.jsonl"
    messages = [
        message(f"r-{i}", answer=wrong if i < 3 else grounded, evidence=EVIDENCE, metadata={"tenant": "clinic"})
        for i in range(6)
    ]
    traffic.write_text("".join(json.dumps(m) + "\n" for m in messages))
    lake = str(tmp_path / "lake")
    assert main(["audit", "--input", str(traffic), "--lake", lake, "--review-sample", "1"]) == 0
    routes = duckdb.sql(
        f"SELECT response_id, review_routes FROM read_parquet('{lake}/responses/**/*.parquet') ORDER BY 1"
    ).fetchall()
    assert routes == [(f"r-{i}", ["flagged"] if i < 3 else ["sample"]) for i in range(6)]
    labels = tmp_path / "labels.jsonl"
    # The reviewer agrees on every routed sentence and on one of three sampled ones.
    given = ["contradicted"] * 3 + ["fully_grounded", "partially_grounded", "partially_grounded"]
    labels.write_text(
        "".join(
            json.dumps({"response_id": f"r-{i}", "sentence_index": 0, "label": label, "reviewer": "ana"}) + "\n"
            for i, label in enumerate(given)
        )
    )
    assert main(["review", "import", "--lake", lake, str(labels)]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--from-lake", lake]) == 0
    table = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert table["route=sample"][0] == "3" and float(table["route=sample"][3]) == pytest.approx(1 / 3, abs=1e-3)
    assert table["route=routed"][0] == "3" and float(table["route=routed"][3]) == 1.0
    # The import computed the window's metrics again; they hold both agreements: all reviews, and the random
    # sample's alone.
    [row] = duckdb.sql(
        f"""SELECT reviewed_sentences, review_agreement, sample_reviewed_sentences, sample_review_agreement
            FROM read_parquet('{lake}/window_metrics/**/*.parquet') WHERE slice_dimension = 'all'
            ORDER BY computed_at DESC LIMIT 1"""
    ).fetchall()
    assert row[0] == 6 and row[1] == pytest.approx(4 / 6) and row[2] == 3 and row[3] == pytest.approx(1 / 3)
