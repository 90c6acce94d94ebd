"""`groundwatch drift` watches abstentions: a jump in answers that decline raises `abstention_rise`."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from pipelines.runner.drift_run import run_drift
from pipelines.traffic.scenarios import ScenarioSpec, audit_into_lake, scenario_responses
from schemas import LoggedResponse
from schemas.monitoring import CheckStatus
from transforms.monitoring.abstention import ABSTENTION_CHECK, abstention_p_value
from transforms.monitoring.drift import DriftConfig

pytestmark = pytest.mark.scenario  # scenario lakes: the integration tier (docs/development.md)

REFUSALS = (
    "I couldn't find that information in the provided documents.",
    "The retrieved passages do not say.",
    "Sorry, the documentation does not cover this.",
)


def _quiet(_line: str) -> None:
    pass


@pytest.fixture(scope="module")
def refusing_lake(tmp_path_factory):
    """Stable traffic whose generator, from the sixth window on, declines a third of its answers."""
    spec = ScenarioSpec("stable", windows=8, per_window=30, seed=3)
    change = spec.start + timedelta(seconds=5 * spec.window_seconds)
    rng = random.Random(5)
    messages = []
    for message in scenario_responses(spec):
        when = LoggedResponse.model_validate(message).timestamp
        if when >= change and rng.random() < 0.35:
            message = {**message, "answer": rng.choice(REFUSALS)}
        messages.append(message)
    lake = str(tmp_path_factory.mktemp("abstain") / "lake")
    audit_into_lake(messages, lake)
    return change, run_drift(lake, DriftConfig(baseline_windows=3), workspace=False, out=_quiet)


def test_a_jump_in_abstentions_alerts_after_the_change_and_not_before(refusing_lake):
    change, outcome = refusing_lake
    rows = [c for c in outcome.checks if c.check == ABSTENTION_CHECK and c.slice_dimension == "all"]
    assert {c.status for c in rows if c.window_start < change} <= {CheckStatus.ok, CheckStatus.insufficient_data,
                                                                     CheckStatus.no_reference}  # fmt: skip
    fired = [a for a in outcome.fired if a.check == ABSTENTION_CHECK]
    assert fired and all(a.window_start >= change for a in fired)
    first = min((a for a in fired if a.slice_dimension == "all"), key=lambda a: a.window_start)
    assert first.current_value > first.reference_value + 0.10 and first.p_value < 0.001
    assert first.metric == "abstention_rate"


def test_the_binomial_test_needs_more_than_one_abstention_over_a_clean_reference():
    assert abstention_p_value(1, 30, 0, 200) > 0.05  # one refusal in a window is not a jump
    assert abstention_p_value(10, 30, 0, 200) < 1e-6
    assert abstention_p_value(0, 30, 5, 200) == 1.0
