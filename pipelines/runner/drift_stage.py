"""Drift inside the stream: the monitor checks each closed window as `groundwatch drift` does, as it runs.

    stage = StreamDrift(lake, DriftConfig(), connection=connection, alerts_topic="rag.alerts", every_seconds=30)
    stage.start()          # beside the stream: a thread that calls `pipelines.drift.run_drift` every 30 s
    ...                    # the pipeline runs
    stage.stop()           # with the stream
    stage.run_once()       # a catch-up: once, after its last pass

A stage beside the graph that the monitor drives, not a stateful transform in it. The checks compare a window
with the raw scores (confidence, faithfulness) of the earlier windows that make its reference and update the
open alerts and incidents; the lake already holds all of that across restarts (`run_drift` rebuilds its
`AlertTracker` and `IncidentTracker` from the `alerts` and `incidents` tables on every call and checks only the
windows without `drift_checks` rows), so a restarted monitor carries on where the last one stopped, with no
runner state to checkpoint or migrate. And it runs in the launching process, the same on Prism, Flink or
Dataflow, whatever the runner's support for state and timers.

Each run writes `drift_checks`, `alerts` and `incidents` rows to the lake, logs each alert and incident change
(`groundwatch.drift`), and publishes them to the alerts topic, as `groundwatch drift --bootstrap-servers` does
(an update the topic refuses for good is logged as an error). A failing run is logged and counted, and the
stream goes on: the next run checks again the windows whose rows did not reach the lake (a window counts as
checked once they are there). A window's updates are sent before its rows are written, so a run with the broker
away, from its start or lost mid-run, leaves the windows it could not send for unchecked, and the next run sends
them. Each run checks the windows closed since the last one, often one: the passing windows an open alert has
counted towards clearing come back from the lake with it (`AlertTracker.from_lake_rows`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pipelines.runner.drift_run import DEFAULT_ALERTS_TOPIC, DriftOutcome, run_drift
from transforms.monitoring.drift import DriftConfig

__all__ = ["StreamDrift"]

log = logging.getLogger("groundwatch.monitor.drift")


class StreamDrift:
    """Runs `run_drift` over the lake every `every_seconds` in a thread of its own, or once (`run_once`)."""

    def __init__(
        self,
        lake: str,
        config: DriftConfig,
        *,
        connection: Mapping[str, Any] | None,
        alerts_topic: str = DEFAULT_ALERTS_TOPIC,
        every_seconds: float = 30.0,
        workspace: bool = True,
        out: Callable[[str], None] = print,
    ):
        if every_seconds < 0:
            raise ValueError("--drift-every-seconds must be >= 0 (0 turns the drift stage off)")
        self.lake, self.config, self.every_seconds, self.workspace = lake, config, every_seconds, workspace
        # No topic: alerts go to the lake and the log only.
        self.connection = dict(connection) if connection and alerts_topic else None
        self.alerts_topic = alerts_topic
        self.out = out
        self.runs = self.errors = self.windows_checked = self.alert_changes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> DriftOutcome | None:
        """One drift run over the windows not checked yet; None when it failed (logged and counted)."""
        lines: list[str] = []
        try:
            outcome = run_drift(
                self.lake,
                self.config,
                workspace=self.workspace,
                kafka_bootstrap=self.connection,
                alerts_topic=self.alerts_topic,
                out=lines.append,
            )
        except Exception as error:  # noqa: BLE001 - the stream must outlive a failing check or an unreachable topic
            self.errors += 1
            log.exception("drift stage run failed (%d so far); the next run tries again: %s", self.errors, error)
            return None
        finally:
            self.runs += 1
        self.windows_checked += len(outcome.windows)
        self.alert_changes += len(outcome.changes) + len(outcome.incident_changes)
        if outcome.windows:  # a run that found nothing new stays quiet
            for line in lines:
                self.out(line)
        if outcome.refused:
            log.error("the alerts topic refused updates of this drift run: %s", outcome.refused)
        return outcome

    def start(self) -> StreamDrift:
        """Run every `every_seconds` until `stop()`; nothing when `every_seconds` is 0."""
        if self.every_seconds and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="groundwatch-drift", daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_seconds):
            self.run_once()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the thread, letting a run in progress finish (its rows are then whole)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def summary(self) -> str:
        return (
            f"drift stage    {self.runs} runs, {self.windows_checked} windows checked, "
            f"{self.alert_changes} alert/incident updates, {self.errors} failed runs"
        )
