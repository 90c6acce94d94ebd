"""`groundwatch metrics`: window metrics computed again from the lake's rows equal the pipeline's own, and
replace rows that hold only part of a window (a late response, a restart, a catch-up in passes)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.demo import sample_traffic_path
from pipelines.runner import window_metrics
from pipelines.runner.bounded import run_audit as audit
from transforms.io.lake.writer import write_table

FIGURES = (
    "responses, sentences, mean_confidence, median_confidence, mean_attribution_confidence, mean_faithfulness, "
    "fully_grounded_share, contradicted_share, needs_review_responses, attribution_coverage_rate, "
    "low_confidence_claim_rate, citation_failure_rate"
)


def _metrics(lake: str) -> dict[tuple, tuple]:
    sql = f"SELECT window_start, slice_dimension, slice_value, {FIGURES} FROM window_metrics"
    rows = connect_lake(lake).execute(sql)
    return {row[:3]: tuple(-1.0 if x is None else x for x in row[3:]) for row in rows.fetchall()}


def _part_of_the_window(window_start: datetime) -> dict:
    """What a run that saw only one response of the window would have written, later than the first run."""
    return {
        "window_start": window_start, "window_end": window_start + timedelta(minutes=1), "slice_dimension": "all",
        "slice_value": "all", "responses": 1, "sentences": 2, "insufficient_evidence_responses": 0,
        "needs_review_responses": 0, "computed_at": datetime.now(UTC),
    }  # fmt: skip


@pytest.fixture(scope="module")
def audited_lake(tmp_path_factory) -> str:
    lake = str(tmp_path_factory.mktemp("lake"))
    audit([f"--input={sample_traffic_path()}", f"--lake={lake}"], out=lambda _: None)
    return lake


def test_recomputed_metrics_equal_the_pipelines_and_replace_partial_ones(audited_lake, tmp_path, capsys, monkeypatch):
    lake = str(tmp_path / "lake")
    shutil.copytree(audited_lake, lake)
    expected = _metrics(lake)
    windows = sorted({start for start, dimension, _ in expected if dimension == "all"})
    assert len(windows) >= 3
    first, last = windows[0], windows[-1]
    # The lake holds only rows of part of a window (each pass of a catch-up writes its part): the pipeline's
    # whole-window rows go, and rows of one response of the first and last windows take their place.
    shutil.rmtree(os.path.join(lake, "window_metrics"))
    write_table(lake, "window_metrics", [_part_of_the_window(first), _part_of_the_window(last)], name="partial")
    damaged = _metrics(lake)
    assert damaged[(first, "all", "all")][0] == damaged[(last, "all", "all")][0] == 1

    # Only the windows asked for: the first is mended, the last keeps its partial row.
    assert groundwatch(["metrics", "--lake", lake, "--until", (first + timedelta(seconds=1)).isoformat()]) == 0
    assert capsys.readouterr().out.strip() == f"window metrics of 1 windows computed again from {lake}"
    mended = _metrics(lake)
    assert mended[(first, "all", "all")] == pytest.approx(expected[(first, "all", "all")])
    assert mended[(last, "all", "all")][0] == 1

    monkeypatch.setattr(window_metrics, "WINDOWS_PER_BATCH", 2)  # several batches of windows
    assert groundwatch(["metrics", "--lake", lake]) == 0
    assert f"of {len(windows)} windows" in capsys.readouterr().out
    everything = _metrics(lake)
    assert everything.keys() == expected.keys()
    for key, figures in expected.items():
        assert everything[key] == pytest.approx(figures), key


def test_a_time_that_is_not_iso_8601_is_refused(tmp_path, capsys):
    assert groundwatch(["metrics", "--lake", str(tmp_path), "--since", "yesterday"]) == 2
    err = capsys.readouterr().err
    assert err == "groundwatch metrics: argument --since: not an ISO 8601 time: 'yesterday'\n"


def test_a_lake_that_is_not_there_is_a_usage_error(tmp_path, capsys):
    """Before, `metrics --lake nolake` said "0 windows computed again" and exited 0."""
    assert groundwatch(["metrics", "--lake", str(tmp_path / "nolake")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"groundwatch metrics: --lake {tmp_path / 'nolake'} does not exist") and err.count("\n") == 1


def test_an_empty_lake_has_nothing_to_compute(tmp_path, capsys):
    assert groundwatch(["metrics", "--lake", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == f"window metrics of 0 windows computed again from {tmp_path}"


def test_part_of_a_window_read_again_does_not_hide_its_fuller_metrics(audited_lake, tmp_path):
    """A stream restarted from its last commit reads the end of a closed window again and writes metrics of
    that part only; here the first 20 lines of the traffic are audited again into the same lake."""
    lake = str(tmp_path / "lake")
    shutil.copytree(audited_lake, lake)
    expected = _metrics(lake)
    part = tmp_path / "part.jsonl"
    with open(sample_traffic_path(), "rb") as f:
        part.write_bytes(b"".join(f.readlines()[:20]))
    audit([f"--input={part}", f"--lake={lake}"], out=lambda _: None)

    every_row = connect_lake(lake).execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true) WHERE slice_dimension = 'all'",
        [os.path.join(lake, "window_metrics", "**", "*.parquet")],
    )
    assert every_row.fetchone()[0] > len({key for key in expected if key[1] == "all"})  # the part wrote its own
    shown = _metrics(lake)
    assert shown.keys() == expected.keys()
    for key, figures in expected.items():
        assert shown[key] == pytest.approx(figures), key
