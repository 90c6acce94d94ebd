"""A tenant with fifty answers a day gets drift checks in one-minute windows: its windows grow into spans that
hold the minimum, and a drop in its last day raises an alert."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dashboards.views import connect_lake
from pipelines.cli import main as groundwatch
from pipelines.traffic.scenarios import audit_into_lake
from pipelines.traffic.synthetic import DEFAULT_START, generate_responses
from transforms.monitoring.drift import DriftConfig

pytestmark = pytest.mark.scenario  # two week-long lakes, drift-checked: tens of seconds

PER_DAY = 50
DAYS = 7
DROP_DAY = 6
"""The last day's answers are drawn with most sentences flawed (0.6 instead of 0.03)."""


def _week(drop: bool) -> list[dict]:
    messages = []
    for day in range(DAYS):
        start = DEFAULT_START + timedelta(days=day)
        flaws = 0.6 if drop and day == DROP_DAY else 0.03
        for i, message in enumerate(
            generate_responses(PER_DAY, seed=day, start=start, seconds_between=86_400 / PER_DAY, flaw_rate=flaws)
        ):
            # One tenant, one retriever, one generator: a small customer's own lake.
            message["response_id"] = f"small-{day}-{i}"
            message["metadata"] = {**message["metadata"], "tenant": "small-co", "retriever_version": "r7"}
            message.pop("generator_model", None)
            messages.append(message)
    return messages


@pytest.fixture(scope="module", params=[False, True], ids=["steady", "drop"])
def small_lake(request, tmp_path_factory) -> tuple[str, bool]:
    lake = str(tmp_path_factory.mktemp("small") / "lake")
    audit_into_lake(_week(request.param), lake, window_seconds=60)
    # The command as a user runs it: growing spans is its default.
    assert groundwatch(["drift", "--lake", lake, "--no-workspace"]) == 0
    return lake, request.param


def _checks(lake: str, where: str = "true") -> dict[str, int]:
    sql = f"SELECT status, count(*) FROM drift_checks WHERE slice_dimension = 'all' AND {where} GROUP BY 1"
    return dict(connect_lake(lake).execute(sql).fetchall())


def test_a_small_tenants_windows_grow_until_they_can_be_checked(small_lake):
    lake, _ = small_lake
    statuses = _checks(lake)
    judged = sum(n for status, n in statuses.items() if status in ("ok", "alert", "inconclusive"))
    spans = (
        connect_lake(lake)
        .execute(
            "SELECT count(DISTINCT window_start), min(current_responses) FROM drift_checks "
            "WHERE slice_dimension = 'all' AND span_start IS NOT NULL AND status <> 'no_reference'"
        )
        .fetchone()
    )
    assert judged > 0, statuses
    # About 350 answers in spans of 20: some 17 spans, of which the first six make the reference.
    assert spans[0] >= 8 and spans[1] >= DriftConfig().min_responses


def test_a_drop_in_a_small_tenants_last_day_raises_an_alert_and_a_steady_week_none(small_lake):
    lake, drop = small_lake
    last_day = f"window_start >= TIMESTAMPTZ '{(DEFAULT_START + timedelta(days=DROP_DAY)).isoformat()}'"
    alerts = (
        connect_lake(lake)
        .execute(f"SELECT count(*) FROM alerts WHERE slice_dimension IN ('all', 'tenant') AND {last_day}")
        .fetchone()[0]
    )
    before = _checks(lake, f"NOT ({last_day}) AND span_start IS NOT NULL").get("alert", 0)
    assert before == 0  # the steady days raise nothing
    assert (alerts > 0) == drop
    # Every slice of this lake is checked over spans, so nothing else names a cause: the drop is an incident.
    incidents = connect_lake(lake).execute("SELECT cause_dimension, cause_value, started_at FROM incidents").fetchall()
    day_before = DEFAULT_START + timedelta(days=DROP_DAY - 1)  # a span of some nine hours may start then
    assert bool(incidents) == drop and all(started >= day_before for *_, started in incidents), incidents
