"""The drift part of `groundwatch demo`: a short retriever regression, audited, checked, alerted, on the dashboard.

    outcome = regression_demo("./groundwatch-lake", beam_args)

Generates the `retriever-regression` scenario (20 one-minute windows; at 60% the main retriever is
replaced by `r9`, whose evidence is partly irrelevant or stale), audits it with the audit pipeline
into its own lake `<lake>/demo-regression/` (so the sample traffic's tables stay as they are), runs
`groundwatch drift` on it with snapshots in the project `groundwatch demo: retriever regression` of
`<lake>/evidently`, and prints the alerts. `groundwatch ui --lake <lake>` then shows the dashboard.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable
from datetime import timedelta
from importlib import resources

from pipelines.audit import run as run_audit
from pipelines.drift import DriftOutcome, run_drift
from pipelines.traffic.scenarios import NEW_RETRIEVER, ScenarioSpec, change_time, scenario_jsonl
from pipelines.traffic.synthetic import DEFAULT_START, write_jsonl
from transforms.monitoring.alerts import format_alert
from transforms.monitoring.drift import DriftConfig
from transforms.monitoring.incidents import format_incident

__all__ = ["DEMO_PROJECT", "DEMO_SPEC", "demo_lake", "regression_demo"]

_ALERTS_SQL = resources.files("dashboards") / "queries" / "alerts.sql"

DEMO_PROJECT = "groundwatch demo: retriever regression"
DEMO_SPEC = ScenarioSpec(
    "retriever-regression", windows=20, per_window=45, change_at=0.6, seed=7, start=DEFAULT_START + timedelta(hours=1)
)


def demo_lake(lake_dir: str) -> str:
    """Where the demo's regression scenario is audited: a lake of its own inside the demo lake."""
    return os.path.join(lake_dir, "demo-regression")


def _forget_demo_project(workspace_dir: str) -> None:
    """A re-run replaces the demo's project instead of adding a second set of snapshots."""
    if not os.path.isdir(workspace_dir):
        return
    from evidently.ui.workspace import Workspace

    ws = Workspace.create(workspace_dir)
    for project in ws.search_project(DEMO_PROJECT):
        ws.delete_project(project.id)


@contextlib.contextmanager
def _quiet_drift_log():
    log = logging.getLogger("groundwatch.drift")
    null = logging.NullHandler()  # without a handler of its own, Python's last-resort handler would still print
    log.addHandler(null)
    log.propagate = False
    try:
        yield
    finally:
        log.removeHandler(null)
        log.propagate = True


def regression_demo(
    lake_dir: str, beam_args: list[str] | None = None, out: Callable[[str], None] = print
) -> DriftOutcome:
    """Audit the regression scenario, check it for drift, print the alerts; returns the drift outcome."""
    scenario_lake = demo_lake(lake_dir)
    change = change_time(DEMO_SPEC)
    out(
        f"== Drift: a retriever regression ==\n{DEMO_SPEC.windows} one-minute windows of traffic; at {change:%H:%M} "
        f"the main retriever r7 is replaced by {NEW_RETRIEVER}, which returns partly irrelevant or stale passages."
    )
    with tempfile.TemporaryDirectory(prefix="groundwatch-demo-") as folder:
        traffic = os.path.join(folder, "regression.jsonl")
        write_jsonl(scenario_jsonl(DEMO_SPEC), traffic)
        argv = [f"--input={traffic}", f"--lake={scenario_lake}", f"--window_seconds={DEMO_SPEC.window_seconds}"]
        run_audit([*argv, *(beam_args or [])], out=lambda _: None)
    _forget_demo_project(os.path.join(lake_dir, "evidently"))
    with _quiet_drift_log():  # the demo prints the alerts worth reading; `groundwatch drift` logs every one
        outcome = run_drift(
            scenario_lake,
            DriftConfig(),
            recompute=True,
            out=lambda _: None,
            workspace_dir=os.path.join(lake_dir, "evidently"),
            project_name=DEMO_PROJECT,
        )
    named = [a for a in outcome.fired if a.slice_value == NEW_RETRIEVER or f"={NEW_RETRIEVER}" in a.message]
    # The new retriever's own alerts first, its confidence drop before the rest.
    named.sort(key=lambda a: (a.slice_value != NEW_RETRIEVER, a.check != "mean_confidence_drop", a.window_start))
    out(
        f"{len(outcome.windows)} windows checked, {len(outcome.open_incidents)} open incident(s), "
        f"{len(outcome.fired)} alerts fired, {len(outcome.firing)} firing at the end."
    )
    for incident in outcome.open_incidents:  # the incident first: one line per cause, then its raw alerts
        out(format_incident(incident))
    for alert in (named or outcome.fired)[:4]:
        out(format_alert(alert))
    out(
        f"Alerts are in the lake: groundwatch query --lake {scenario_lake} --file {_ALERTS_SQL}\n"
        f"Dashboard: groundwatch ui --lake {lake_dir}   (project '{DEMO_PROJECT}')"
    )
    return outcome
