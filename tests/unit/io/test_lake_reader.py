"""One lake reader for every consumer: the DuckDB views, the drift stage, `groundwatch metrics` and the report.

The lake holds two `window_metrics` rows for one window and slice: the full one the audit wrote (100
responses) and a newer partial one (10 responses), as a stream restarted from its last commit writes
when it reads the end of a closed window again. The table's spec prefers the row of more responses and
the newer only among equals, so every consumer must read the full one.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta

import duckdb
import pytest

from dashboards.report import build_report
from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.runner.drift_run import run_drift
from pipelines.traffic.scenarios import ScenarioSpec, audit_into_lake, scenario_responses
from schemas import LoggedResponse
from schemas.monitoring import ALL_TRAFFIC, CheckStatus
from transforms.io.lake.writer import write_table
from transforms.monitoring.drift import DriftConfig
from transforms.monitoring.lake_frames import load_lake_frames

SPEC = ScenarioSpec("stable", windows=2, per_window=160, seed=5)
REFERENCE, WINDOW = SPEC.start, SPEC.start + timedelta(minutes=1)
"""The first window (30 responses) is the drift reference; the second (100 responses) is checked."""
FIGURES = ("responses", "claims", "attribution_coverage_rate", "low_confidence_claim_rate")


def _quiet(_line: str) -> None:
    pass


def _rows_of(lake: str, window) -> list[dict]:
    """Every stored `window_metrics` row of all traffic in a window, straight from the files."""
    pattern = os.path.join(lake, "window_metrics", "**", "*.parquet")
    found = duckdb.connect().execute(
        "SELECT * FROM read_parquet(?, hive_partitioning = false) WHERE window_start = ? AND slice_dimension = ? "
        "ORDER BY computed_at",
        [pattern, window, ALL_TRAFFIC],
    )
    names = [d[0] for d in found.description]
    return [dict(zip(names, row, strict=True)) for row in found.fetchall()]


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> tuple[str, dict, datetime]:
    """The lake, the figures of the full row of the checked window (the row every consumer must read), and
    when that row was computed."""
    lake = str(tmp_path_factory.mktemp("reader") / "lake")
    by_window: dict = {REFERENCE: [], WINDOW: []}
    for message in scenario_responses(SPEC):
        when = LoggedResponse.model_validate(message).timestamp
        start = REFERENCE if when < WINDOW else WINDOW
        if when < WINDOW + timedelta(minutes=1) and len(by_window[start]) < (30 if start == REFERENCE else 100):
            by_window[start].append(message)
    assert [len(m) for m in by_window.values()] == [30, 100]
    audit_into_lake(by_window[REFERENCE] + by_window[WINDOW], lake)
    [full] = _rows_of(lake, WINDOW)
    assert full["responses"] == 100 and full["claims"] >= DriftConfig().min_claims
    assert full["attribution_coverage_rate"] >= 0.95 and full["low_confidence_claim_rate"] <= 0.10
    partial = dict(
        full,
        responses=10,
        sentences=full["sentences"] // 10,
        claims=16,
        attribution_coverage_rate=0.40,
        low_confidence_claim_rate=0.50,
        computed_at=full["computed_at"] + timedelta(minutes=5),
    )
    write_table(lake, "window_metrics", [partial], name="restart-partial")
    assert [r["responses"] for r in _rows_of(lake, WINDOW)] == [100, 10]  # the partial one is the newer
    return lake, {name: full[name] for name in FIGURES}, full["computed_at"]


def _copy(lake: str, tmp_path) -> str:
    copy = str(tmp_path / "lake")
    shutil.copytree(lake, copy)
    return copy


def test_the_views_keep_the_full_row(lake):
    lake_dir, full, _ = lake
    sql = f"SELECT {', '.join(FIGURES)} FROM window_metrics WHERE window_start = ? AND slice_dimension = 'all'"
    rows = connect_lake(lake_dir).execute(sql, [WINDOW]).fetchall()
    assert rows == [tuple(full.values())]


def test_the_drift_stage_reads_the_full_row_and_checks_its_claim_rates(lake, tmp_path):
    lake_dir, full, _ = lake
    frames = load_lake_frames(lake_dir)
    shown = frames.metrics_in(WINDOW)
    shown = shown[shown["slice_dimension"] == ALL_TRAFFIC]
    assert shown[list(FIGURES)].to_dict("records") == [full]
    assert len(frames.responses_in(WINDOW)) == 100 and len(frames.responses_in(REFERENCE)) == 30
    assert set(load_lake_frames(lake_dir, since=WINDOW).responses["window_start"]) == {WINDOW}

    config = DriftConfig(reference_from=REFERENCE, reference_to=WINDOW)
    outcome = run_drift(_copy(lake_dir, tmp_path), config, workspace=False, out=_quiet)
    checks = {c.check: c for c in outcome.checks if c.window_start == WINDOW and c.slice_dimension == ALL_TRAFFIC}
    # The rates come from the full row (enough claims to judge, inside the limits), not the partial one
    # (16 claims, 40% coverage, half of them low-confidence).
    assert checks["attribution_coverage"].current_value == pytest.approx(full["attribution_coverage_rate"])
    assert checks["low_confidence_claims"].current_value == pytest.approx(full["low_confidence_claim_rate"])
    assert checks["attribution_coverage"].status == checks["low_confidence_claims"].status == CheckStatus.ok
    assert checks["attribution_coverage"].current_responses == 100


def test_groundwatch_metrics_computes_the_window_again_as_full_as_the_full_row(lake, tmp_path, capsys):
    lake_dir = _copy(lake[0], tmp_path)
    full = lake[1]
    assert groundwatch(["metrics", "--lake", lake_dir]) == 0
    assert "of 2 windows" in capsys.readouterr().out
    # The recomputed rows replace the audit's file (same keys, same file); the partial row is still the newest.
    stored = _rows_of(lake_dir, WINDOW)
    assert [r["responses"] for r in stored] == [100, 10] and stored[0]["computed_at"] > lake[2]
    sql = f"SELECT {', '.join(FIGURES)} FROM window_metrics WHERE window_start = ? AND slice_dimension = 'all'"
    [shown] = connect_lake(lake_dir).execute(sql, [WINDOW]).fetchall()
    assert shown == pytest.approx(tuple(full.values()))
    frames = load_lake_frames(lake_dir).metrics_in(WINDOW)
    assert frames[frames["slice_dimension"] == ALL_TRAFFIC]["responses"].tolist() == [100]


def test_the_report_counts_the_full_row(lake):
    lake_dir, full, _ = lake
    page = build_report(lake_dir)
    assert f"<b>{30 + full['responses']}</b>responses audited" in page
