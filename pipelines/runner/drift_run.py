"""A drift run: check each new window of the lake against its reference and record checks, alerts and incidents.

    outcome = run_drift("./groundwatch-lake", DriftConfig(min_responses=20))
    outcome.fired, outcome.firing         # alerts fired in this run, alerts still firing

It reads the lake's `window_metrics`, `responses` and `sentences`, checks every window not checked
before (see `transforms.monitoring.drift`), and writes what it found back to the lake: one `drift_checks` row
per check, slice and window, and one `alerts` row per alert episode (rewritten when it clears).
Alerts also go to the log and, when Kafka is configured, to the alerts topic. Each checked window adds one
snapshot to the Evidently workspace in `<lake>/evidently`; a lake in object storage keeps its workspace under
the same prefix, `s3://bucket/lake/evidently/` (`dashboards.workspace_sync`: Evidently works on a local copy,
and the snapshots added are uploaded at the end of the run). `groundwatch drift` runs it once, the streaming
monitor after each window (`pipelines.runner.drift_stage`), the demo on its regression.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dashboards.workspace import GroundwatchWorkspace
from pipelines.runner.progress import Progress
from schemas.monitoring import AlertRow, AlertStatus, DriftCheckRow, IncidentRow
from transforms.io.kafka.client import (
    KafkaFailed,
    close_producer,
    failures,
    kafka_words,
    named_kafka_errors,
    not_taken,
    refused_for_good,
    send_or_refusal,
)
from transforms.io.kafka.client import producer as kafka_producer
from transforms.io.kafka.sink import ensure_topics
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.manifest import record_removal
from transforms.io.lake.writer import write_table
from transforms.monitoring.alerts import AlertTracker, format_alert
from transforms.monitoring.drift import (
    DRIFT_CHECKS,
    DriftConfig,
    History,
    eligible_history,
    evaluate_window,
    record_baseline,
)
from transforms.monitoring.incident_messages import slice_label
from transforms.monitoring.incidents import IncidentTracker, format_incident
from transforms.monitoring.lake_frames import load_lake_frames
from transforms.monitoring.times import span_text

if TYPE_CHECKING:
    from kafka.errors import KafkaError

__all__ = [
    "DEFAULT_ALERTS_TOPIC",
    "DriftOutcome",
    "log_alerts_to_stderr",
    "run_drift",
    "send_alerts_to_kafka",
]

DEFAULT_ALERTS_TOPIC = "rag.alerts"
log = logging.getLogger("groundwatch.drift")


@dataclass
class DriftOutcome:
    """What one drift run did: windows checked, check rows, alert changes, alerts still firing."""

    windows: list[datetime] = field(default_factory=list)
    checks: list[DriftCheckRow] = field(default_factory=list)
    changes: list[AlertRow] = field(default_factory=list)
    firing: list[AlertRow] = field(default_factory=list)
    incident_changes: list[IncidentRow] = field(default_factory=list)
    open_incidents: list[IncidentRow] = field(default_factory=list)
    refused: str | None = None
    """What the alerts topic refused for good in this run, in one line; their windows are checked (`run_drift`)."""

    @property
    def fired(self) -> list[AlertRow]:
        return [a for a in self.changes if a.status == AlertStatus.firing]


def send_alerts_to_kafka(
    rows: list[AlertRow | IncidentRow], connection: str | Mapping[str, Any], topic: str = DEFAULT_ALERTS_TOPIC
) -> int:
    """Publish alert (and incident) rows as JSON to a Kafka topic, keyed by alert_id or incident_id (the firing
    and the cleared row alike); an incident's JSON has `incident_id`, an alert's `alert_id`.

    `connection` is a bootstrap string or a connection dict as `transforms.io.kafka.client.client_config` takes
    (security settings included); the topic is created if the cluster does not auto-create it. A failed
    request raises `KafkaFailed`, naming the servers. Alerts come from a run outside Beam, so this uses a plain
    producer, configured like the pipeline's sink.
    """
    if not rows:
        return 0
    settings = _settings(connection)
    ensure_topics(settings, [topic])
    return _publish(rows, settings, topic)


def _settings(connection: str | Mapping[str, Any]) -> dict[str, Any]:
    return {"bootstrap_servers": connection} if isinstance(connection, str) else dict(connection)


_UPDATES = "alert and incident updates"


def _publish(rows: list[AlertRow | IncidentRow], settings: dict[str, Any], topic: str) -> int:
    """`send_alerts_to_kafka` to a topic that exists."""
    failed = _send(rows, settings, topic)
    if failed:
        raise not_taken(failed, len(rows), settings.get("bootstrap_servers", ""), topic, _UPDATES)
    return len(rows)


def _send(rows: list[AlertRow | IncidentRow], settings: dict[str, Any], topic: str) -> list[KafkaError]:
    """Send the rows, keyed by their ids, and wait for each one's answer; the errors of those not taken."""
    with named_kafka_errors(settings.get("bootstrap_servers", "")):
        # One request at a time: an alert's firing and cleared rows reach the topic in the order they were sent.
        producer = kafka_producer(settings, max_in_flight_requests_per_connection=1)
        try:
            sent = []
            for row in rows:
                key = row.incident_id if isinstance(row, IncidentRow) else row.alert_id
                sent.append(send_or_refusal(producer, topic, key=key.encode(), value=row.model_dump_json().encode()))
            # Each record's own answer: an alert is never dropped silently.
            return failures(producer, sent)
        finally:
            close_producer(producer, timeout=10)


@dataclass
class _AlertPublisher:
    """Sends each window's alert and incident updates before the window is recorded as checked.

    A window counts as checked once its `drift_checks` rows are in the lake, and no later run checks it again,
    so an update that did not reach the topic then never would. So a window's updates are sent first, each
    window's answered before the next window's are sent (so an alert's firing and cleared rows keep their
    order). When they are not all answered (the broker lost mid-run, say), `KafkaFailed` is raised with the
    window not recorded, and the next run checks it again and sends them: delivery is at-least-once, by key
    (an update taken before another failed is sent again). An update the topic refuses for what it is
    (`refused_for_good`: larger than the topic takes, say) would be refused again however often it was sent:
    it is counted, the run goes on, and `refused_line` says so at the end.
    """

    settings: dict[str, Any]
    topic: str
    sent: int = 0
    offered: int = 0
    refused: list[KafkaError] = field(default_factory=list)

    @property
    def servers(self) -> str:
        return self.settings.get("bootstrap_servers", "")

    def publish(self, rows: list[AlertRow | IncidentRow], window: datetime) -> None:
        if not rows:
            return
        try:
            failed = _send(rows, self.settings, self.topic)
        except KafkaFailed as e:
            raise self._unrecorded(e, window) from None
        lasting = [error for error in failed if not refused_for_good(error)]
        if lasting:
            raise self._unrecorded(not_taken(lasting, len(rows), self.servers, self.topic, _UPDATES), window)
        self.offered += len(rows)
        self.sent += len(rows) - len(failed)
        self.refused.extend(failed)

    def _unrecorded(self, error: KafkaFailed, window: datetime) -> KafkaFailed:
        done = f"{self.sent} updates of the windows before were sent"
        if self.refused:
            done += f", and {len(self.refused)} refused for good, the first: {kafka_words(self.refused[0])}"
        return KafkaFailed(
            f"{error}; the windows from {window:%Y-%m-%d %H:%M:%S %Z} on are not checked, and the next run checks "
            f"them again and sends their updates ({done})"
        )

    def refused_line(self) -> str | None:
        """What the topic refused in this run, if anything; those updates' windows are checked."""
        if not self.refused:
            return None
        error = not_taken(self.refused, self.offered, self.servers, self.topic, _UPDATES)
        return f"{error}; their windows are checked, and their alerts and incidents are in the lake"


def run_drift(
    lake_dir: str,
    config: DriftConfig,
    *,
    workspace: bool = True,
    recompute: bool = False,
    kafka_bootstrap: str | Mapping[str, Any] | None = None,
    alerts_topic: str = DEFAULT_ALERTS_TOPIC,
    now: datetime | None = None,
    out: Callable[[str], None] = print,
    workspace_dir: str | None = None,
    project_name: str | None = None,
    progress: str | None = None,
) -> DriftOutcome:
    """Check every window of the lake not checked yet (all of them with `recompute`) and record the outcome.

    Snapshots go to the `groundwatch` project of `<lake>/evidently` unless `workspace_dir`/`project_name` say otherwise.
    With `progress` (the command's name) the windows checked are shown as they go (`pipelines.runner.progress`).

    With `kafka_bootstrap`, Kafka is reached (and the alerts topic created) before any window is checked, and each
    window's alert and incident updates are sent before the window is recorded as checked (`_AlertPublisher`):
    no later run checks a window again, so it would never send them. A broker away raises `KafkaFailed` with
    nothing checked; a broker lost mid-run raises it with the windows before in the lake and their updates sent.
    Either way the next run, Kafka back, checks the rest and sends their updates.
    """
    now = now or datetime.now(UTC)
    kafka = _settings(kafka_bootstrap) if kafka_bootstrap else None
    if kafka:
        ensure_topics(kafka, [alerts_topic])
    if recompute:
        # Start over: earlier conclusions (and their snapshots) would otherwise sit beside the new ones.
        for folder in ("drift_checks", "alerts", "incidents", "evidently"):
            record_removal(lake_dir, lakefs.list_files(lakefs.join(lake_dir, folder)))  # in the manifest first
            lakefs.remove_tree(lakefs.join(lake_dir, folder))
    frames = load_lake_frames(lake_dir)
    checked = set() if recompute or not len(frames.drift_checks) else set(frames.drift_checks["window_start"])
    history = History() if recompute else eligible_history(frames, config)
    if recompute:
        tracker = AlertTracker(clear_after=config.clear_after)
    else:
        tracker = AlertTracker.from_lake_rows(frames.alerts, config.clear_after, checks=frames.drift_checks)
    limits = (config.drift_p_value, config.max_confidence_drop)  # an incident's residual tests, as the checks'
    incidents = IncidentTracker(examples=config.examples, p_value=limits[0], min_drop=limits[1])
    if not recompute:
        incidents = IncidentTracker.from_lake_rows(
            frames.incidents, config.examples, p_value=limits[0], min_drop=limits[1]
        )
    with contextlib.ExitStack() as stack:
        board, copy = None, None
        if workspace and workspace_dir is None and lakefs.is_remote(lake_dir):
            # Evidently's workspace is a local folder: work on a copy of the bucket's, then upload what changed.
            from dashboards.workspace_sync import local_copy  # kept lazy: start-up (boto3, only for object storage)

            copy = stack.enter_context(local_copy(lake_dir, snapshots=False))
            workspace_dir = copy.folder
        if workspace:
            board = GroundwatchWorkspace.open(
                lake_dir, path=workspace_dir, **({"project_name": project_name} if project_name else {})
            )
        shown = None
        if progress:
            todo = sum(1 for window in frames.windows if window[0] not in checked)
            shown = stack.enter_context(Progress(progress, total=todo, unit="windows"))
        publisher = _AlertPublisher(kafka, alerts_topic) if kafka else None
        try:
            outcome = _check_windows(
                frames, checked, history, tracker, incidents, board, config, now, lake_dir, shown, publisher
            )
        finally:
            if copy is not None:  # even after a failure: the windows checked so far keep their snapshots
                copy.push()
    if publisher is not None and publisher.offered:
        out(f"sent {publisher.sent} alert updates to Kafka topic {alerts_topic}")
        outcome.refused = publisher.refused_line()
    outcome.firing = list(tracker.open.values())
    outcome.open_incidents = list(incidents.open.values())
    out(summary(outcome, lake_dir))
    return outcome


def _check_windows(
    frames,
    checked,
    history,
    tracker,
    incidents,
    board,
    config,
    now,
    lake_dir,
    shown: Progress | None,
    publisher: _AlertPublisher | None,
) -> DriftOutcome:
    """Check every window not `checked` yet; send its updates; write its alerts, incidents and, last, its checks
    (what marks it checked); add its snapshot."""
    outcome = DriftOutcome()
    for window in frames.windows:
        if window[0] in checked:
            continue
        evaluation = evaluate_window(frames, window, history, config, now)
        changes = tracker.update(evaluation, now, config.examples)
        drifting = {(d, v) for check, d, v in tracker.open if check in DRIFT_CHECKS}
        record_baseline(evaluation, history, drifting)
        incident_changes = incidents.update(frames, window, changes, list(tracker.open.values()), now)
        if publisher is not None:
            publisher.publish([*incident_changes, *changes], window[0])
        for row in changes:
            # One file per alert, named by its id: the cleared row replaces the firing one.
            write_table(lake_dir, "alerts", [row], name=row.alert_id)
            (log.warning if row.status == AlertStatus.firing else log.info)(format_alert(row))
        for incident in incident_changes:
            write_table(lake_dir, "incidents", [incident], name=incident.incident_id)
            (log.warning if incident.status == AlertStatus.firing else log.info)(format_incident(incident))
        write_table(lake_dir, "drift_checks", evaluation.checks, name=f"checks-{window[0]:%Y%m%dT%H%M%S}")
        outcome.incident_changes.extend(incident_changes)
        if board is not None:
            board.add_window(
                frames, evaluation, list(tracker.open.values()), changes, config, open_incidents=len(incidents.open)
            )
        outcome.windows.append(window[0])
        outcome.checks.extend(evaluation.checks)
        outcome.changes.extend(changes)
        if shown is not None:
            shown.advance()
    return outcome


def summary(outcome: DriftOutcome, lake_dir: str) -> str:
    """The run in a few lines: windows, check outcomes, alerts fired, cleared and still firing."""
    statuses = Counter(c.status.value for c in outcome.checks)
    lines = [
        f"windows checked  {len(outcome.windows)}"
        + (f"   ({span_text(outcome.windows[0], outcome.windows[-1])})" if outcome.windows else ""),
        "checks           " + (", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "none"),
        f"open incidents   {len(outcome.open_incidents)}"
        + "".join(f"\n  - {i.message}" for i in outcome.open_incidents),
        f"alerts fired     {len(outcome.fired)}",
        f"alerts cleared   {sum(1 for a in outcome.changes if a.status == AlertStatus.cleared)}",
        f"still firing     {len(outcome.firing)}"
        + "".join(f"\n  - {a.check} [{_where(a)}] since {a.started_at:%Y-%m-%d %H:%M}" for a in outcome.firing),
        f"lake             {lake_dir} (drift_checks, alerts, incidents; {_workspace_note(lake_dir)})",
    ]
    return "\n".join(lines)


def _workspace_note(lake_dir: str) -> str:
    return f"Evidently {lakefs.join(lake_dir, 'evidently')}"


def _where(alert: AlertRow) -> str:
    return slice_label(alert.slice_dimension, alert.slice_value)


def log_alerts_to_stderr() -> None:
    """On the command line the log is stderr: alerts and clears, one line each.

    Only this handler prints them: importing Beam logs a line on the root logger, which gives the root logger a
    handler of its own (`logging.basicConfig`), and a record passed on to it would be printed a second time."""
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
