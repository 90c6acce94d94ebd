"""An answer dated far from the rest of its input is counted and named in the audit's summary, not accepted
silently (`pipelines.runner.time_outliers`: Tukey's far-out fence on the event times, spans of a day at least)."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

from pipelines.demo import sample_traffic_path
from pipelines.runner.bounded import run_audit
from pipelines.runner.time_outliers import far_in_time
from pipelines.traffic.scenarios import audit_into_lake
from pipelines.traffic.synthetic import DEFAULT_START, generate_responses


def _messages(count: int, *, seconds_between: float) -> list[dict]:
    return list(generate_responses(count, seed=5, seconds_between=seconds_between))


def test_a_year_old_answer_among_a_days_traffic_is_far_out(tmp_path):
    messages = _messages(60, seconds_between=600)
    old = {**messages[0], "response_id": "year-old", "timestamp": (DEFAULT_START - timedelta(days=365)).isoformat()}
    audit_into_lake([*messages, old], str(tmp_path / "lake"))
    far = far_in_time(str(tmp_path / "lake"), ["scenario"])
    assert far.count == 1 and far.examples[0][0] == "year-old"


def test_a_quiet_week_and_answers_a_day_apart_are_not(tmp_path):
    # A small tenant's week: 10 answers a day; the first and last days are as far as any.
    audit_into_lake(_messages(70, seconds_between=86_400 / 10), str(tmp_path / "week"))
    assert far_in_time(str(tmp_path / "week"), ["scenario"]).count == 0
    # A burst of answers and one a day later: within the day's margin.
    burst = _messages(40, seconds_between=1)
    late = {**burst[0], "response_id": "next-day", "timestamp": (DEFAULT_START + timedelta(hours=23)).isoformat()}
    audit_into_lake([*burst, late], str(tmp_path / "burst"))
    assert far_in_time(str(tmp_path / "burst"), ["scenario"]).count == 0


def test_the_audit_summary_counts_and_names_them(tmp_path):
    traffic = tmp_path / "traffic.jsonl"
    with open(sample_traffic_path(), encoding="utf-8") as sample:
        lines = list(itertools.islice(sample, 30))
    old = json.loads(lines[0]) | {"response_id": "year-old-1", "timestamp": "2025-11-29T09:00:00Z"}
    traffic.write_text("".join(lines) + json.dumps(old) + "\n")
    said: list[str] = []
    run_audit([f"--input={traffic}", f"--lake={tmp_path / 'lake'}"], out=said.append)
    far = [line for line in said if line.startswith("far in time")]
    assert len(far) == 1 and far[0].split()[3] == "1" and "year-old-1 at 2025-11-29 09:00" in far[0]
