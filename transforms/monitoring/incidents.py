"""Incidents: the alerts of one cause, grouped under the slice that explains them.

One retriever regression raises alerts on its retriever version, on every generator model and tenant its
traffic reaches, and on all traffic. An operator needs one thing: "retriever_version=r9 is worse since
10:05". `IncidentTracker.update` takes the alerts a window raised and groups them:

- an alert joins an open incident when that incident's cause explains it: the alert's slice, without the
  cause slice's responses, is back within the alert's limit (or has no responses left);
- the rest are grouped greedily under the candidate slice (one of theirs, never all traffic while another
  can) that explains the most of them, ties going to the larger drop; what none explains is its own incident;
- an incident clears when all of its alerts have cleared.

Each incident carries the drop of its cause slice, example responses (least supported first) and a
breakdown of why confidence fell, counted from the window's lake rows of the cause slice: retrieval
(ungrounded sentences, uncited claims), generation (contradicted sentences, misattributed citations),
citation hygiene (fabricated citation ids, inexact quotes)::

    tracker = IncidentTracker.from_lake_rows(frames.incidents)
    changed = tracker.update(frames, window, alert_changes, open_alerts, now)   # IncidentRows to write
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC, AlertRow, AlertStatus, IncidentRow

__all__ = ["IncidentTracker", "cause_breakdown", "explains", "format_incident", "incident_id"]

_SLICE_COLUMNS = ("retriever_version", "generator_model", "tenant")
_BREAKDOWN = {
    "retrieval": ("ungrounded_sentences", "uncited_claims"),
    "generation": ("contradicted_sentences", "misattributed_citations"),
    "citation_hygiene": ("fabricated_citations", "inexact_quotes"),
}
_MIN_CAUSE_RESPONSES = 5
"""Fewer responses of a slice in the window: too few to name it as the cause of anything."""
_CONFIDENCE_CHECKS = ("mean_confidence_drop", "confidence_drift", "faithfulness_drift")


def incident_id(dimension: str, value: str, started_at: datetime) -> str:
    """A stable id of one incident: its cause slice and the window that opened it."""
    text = "\x1f".join(["incident", dimension, value, started_at.isoformat()])
    return "incident-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _label(dimension: str, value: str) -> str:
    return "all traffic" if dimension == ALL_TRAFFIC else f"{dimension}={value}"


def _in_slice(responses: pd.DataFrame, dimension: str, value: str) -> pd.Series:
    if dimension == ALL_TRAFFIC:
        return pd.Series(True, index=responses.index)
    return responses[dimension] == value


def _limit(alert: AlertRow) -> float | None:
    """The value under which the alert's slice counts as dropped (its reference less the tolerated drop)."""
    if alert.check == "mean_confidence_drop" and alert.threshold is not None:
        return alert.threshold
    if alert.reference_value is None:
        return None
    return alert.reference_value * 0.95  # a distribution drift: the mean must come back near the reference


def explains(cause: tuple[str, str], alert: AlertRow, responses: pd.DataFrame) -> bool:
    """Whether the alert's drop (mostly) vanishes without the cause slice's responses, or nothing is left of it.

    A confidence alert is explained when, without the cause's responses, less than half of its drop remains.
    A claim-rate or coverage alert, whose rate the responses frame does not carry, is explained when the
    cause's responses are at least a third of its slice."""
    if (alert.slice_dimension, alert.slice_value) == cause or cause[0] == ALL_TRAFFIC:
        return True
    mine = responses[_in_slice(responses, alert.slice_dimension, alert.slice_value)]
    rest = mine[~_in_slice(mine, *cause)]
    if not len(rest):
        return True
    if alert.check not in _CONFIDENCE_CHECKS:
        return len(rest) <= len(mine) * 2 / 3
    if len(rest) < 2 * _MIN_CAUSE_RESPONSES and len(rest) <= len(mine) / 3:
        return True  # what is left is a handful of responses: their mean is noise, the cause is most of the slice
    column = "faithfulness" if alert.check == "faithfulness_drift" else "mean_attribution_confidence"
    ref, cur, mean = alert.reference_value, alert.current_value, rest[column].mean()
    if ref is None or cur is None or pd.isna(mean):
        return False
    limit = _limit(alert)
    return ref - mean < 0.5 * max(ref - cur, 1e-9) or (limit is not None and mean >= limit)


def _counts(frames, window_start, responses: pd.DataFrame) -> dict[str, int]:
    ids = set(responses["response_id"])
    sentences = frames.sentences_in(window_start)
    sentences = sentences[sentences["response_id"].isin(ids)]
    verdicts = sentences["attribution_verdict"].astype(str)
    counts = {
        "ungrounded_sentences": int((verdicts == "ungrounded").sum()),
        "contradicted_sentences": int((verdicts == "contradicted").sum()),
    }
    problems = frames.problems
    problems = problems[problems["response_id"].isin(ids)] if len(problems) else problems
    for column in ("uncited_claims", "misattributed_citations", "fabricated_citations", "inexact_quotes"):
        counts[column] = int(problems[column].sum()) if len(problems) else 0
    return counts


def cause_breakdown(frames, window_start, responses: pd.DataFrame, rest: pd.DataFrame | None = None) -> dict[str, int]:
    """Problems of each kind in `responses` (the cause slice's, from the window's lake rows), beyond what the
    rest of the window's traffic has per response: ordinary traffic has some of every kind, and what the
    cause added is what tells retrieval from generation."""
    counts = _counts(frames, window_start, responses)
    if rest is None or not len(rest) or not len(responses):
        return counts
    usual = _counts(frames, window_start, rest)
    scale = len(responses) / len(rest)
    return {k: max(0, round(v - usual[k] * scale)) for k, v in counts.items()}


def _shares(counts: dict[str, int]) -> tuple[str, dict[str, float | None]]:
    total = sum(counts.values())
    shares = {k: (sum(counts[c] for c in cols) / total if total else None) for k, cols in _BREAKDOWN.items()}
    cause = max(_BREAKDOWN, key=lambda k: shares[k] or 0.0) if total else "unknown"
    return cause, shares


class IncidentTracker:
    """The open incidents, each with the alert ids it groups."""

    def __init__(self, open_incidents: dict[str, IncidentRow] | None = None, examples: int = 5):
        self.open: dict[str, IncidentRow] = dict(open_incidents or {})
        self.examples = examples

    @classmethod
    def from_lake_rows(cls, incidents: pd.DataFrame, examples: int = 5) -> IncidentTracker:
        """Rebuild the open incidents from the `incidents` table (latest row per incident_id)."""
        open_incidents = {}
        if len(incidents):
            for record in incidents[incidents["status"] == AlertStatus.firing.value].to_dict("records"):
                record = {k: (None if _missing(v) else v) for k, v in record.items()}
                for column in ("affected_slices", "alert_ids", "example_response_ids"):
                    values = record.get(column)
                    record[column] = [] if values is None else [str(x) for x in values]
                for column in ("window_start", "started_at", "updated_at"):
                    record[column] = pd.Timestamp(record[column]).to_pydatetime()
                row = IncidentRow.model_validate(record)
                open_incidents[row.incident_id] = row
        return cls(open_incidents, examples)

    def update(self, frames, window, changes: list[AlertRow], open_alerts, now: datetime) -> list[IncidentRow]:
        """Group the window's new alerts into incidents and clear those whose alerts all cleared."""
        window_start = window[0]
        responses = frames.responses_in(window_start)
        changed: dict[str, IncidentRow] = {}
        new = [a for a in changes if a.status == AlertStatus.firing]
        loose = []
        for alert in new:
            specific = alert.slice_dimension != ALL_TRAFFIC
            vague = next((i for i in self.open.values() if i.cause_dimension == ALL_TRAFFIC), None)
            same = next(
                (
                    i
                    for i in self.open.values()
                    if (i.cause_dimension, i.cause_value) == (alert.slice_dimension, alert.slice_value)
                ),
                None,
            )
            if specific and vague is not None and same is None:
                # All traffic alerted first (the new slice had too few responses then): name the slice now.
                promoted = vague.model_copy(
                    update={"cause_dimension": alert.slice_dimension, "cause_value": alert.slice_value}
                )
                promoted = self._with_alert(promoted, alert, now)
                self.open[vague.incident_id] = changed[vague.incident_id] = promoted
                continue
            home = next(
                (i for i in self.open.values() if explains((i.cause_dimension, i.cause_value), alert, responses)),
                None,
            )
            if home is None:
                loose.append(alert)
                continue
            joined = self._with_alert(home, alert, now)
            self.open[home.incident_id] = changed[home.incident_id] = joined
        while loose:
            cause, members = self._best_cause(loose, responses)
            row = self._open(frames, window, cause, members, responses, now)
            self.open[row.incident_id] = changed[row.incident_id] = row
            loose = [a for a in loose if a not in members]
        firing_ids = {a.alert_id for a in open_alerts}
        for key, incident in list(self.open.items()):
            if not any(a in firing_ids for a in incident.alert_ids):
                cleared = incident.model_copy(
                    update={"status": AlertStatus.cleared, "cleared_at": window_start, "updated_at": now}
                )
                del self.open[key]
                changed[key] = cleared
        return list(changed.values())

    def _best_cause(self, alerts: list[AlertRow], responses: pd.DataFrame) -> tuple[tuple[str, str], list[AlertRow]]:
        # Candidates: the alerting slices, and every slice with traffic in the window: a new retriever version
        # can be too small to alert on its own in its first window, while the models it serves already do.
        candidates = list(dict.fromkeys((a.slice_dimension, a.slice_value) for a in alerts))
        for column in _SLICE_COLUMNS:
            if column in responses:
                sizes = responses[column].value_counts()
                candidates += [(column, str(v)) for v, n in sizes.items() if n >= _MIN_CAUSE_RESPONSES]
        candidates = list(dict.fromkeys(candidates))
        specific = [c for c in candidates if c[0] != ALL_TRAFFIC] or candidates
        refs = [a.reference_value for a in alerts if a.reference_value is not None]
        reference = max(refs) if refs else None

        def score(cause):
            members = [a for a in alerts if explains(cause, a, responses)]
            mean = responses.loc[_in_slice(responses, *cause), "mean_attribution_confidence"].mean()
            drop = (reference - mean) / reference if reference and not pd.isna(mean) else 0.0
            return len(members), drop, members

        scored = {c: score(c) for c in specific}
        best = max(specific, key=lambda c: scored[c][:2])
        if not scored[best][0]:  # nothing explains the first alert but its own slice (all traffic, say)
            best = (alerts[0].slice_dimension, alerts[0].slice_value)
            return best, score(best)[2]
        return best, scored[best][2]

    def _open(
        self,
        frames: Any,
        window: tuple[datetime, datetime],
        cause: tuple[str, str],
        members: list[AlertRow],
        responses: pd.DataFrame,
        now: datetime,
    ) -> IncidentRow:
        own = [a for a in members if (a.slice_dimension, a.slice_value) == cause]
        lead = max(own, key=_drop) if own else members[0]
        in_cause = responses[_in_slice(responses, *cause)]
        counts = cause_breakdown(frames, window[0], in_cause, responses[~_in_slice(responses, *cause)])
        kind, shares = _shares(counts)
        examples = in_cause.sort_values("mean_attribution_confidence")["response_id"].head(self.examples).tolist()
        affected = [_label(a.slice_dimension, a.slice_value) for a in members]
        affected = [s for s in dict.fromkeys(affected) if s != _label(*cause)]
        cur = in_cause["mean_attribution_confidence"].mean() if len(in_cause) else lead.current_value
        ref = lead.reference_value
        drop = (ref - cur) / ref if ref and cur is not None and not pd.isna(cur) else None
        row = IncidentRow.model_validate(
            dict(
                incident_id=incident_id(cause[0], cause[1], window[0]),
                status=AlertStatus.firing,
                cause_dimension=cause[0],
                cause_value=cause[1],
                affected_slices=affected,
                alert_ids=[a.alert_id for a in members],
                window_start=window[0],
                started_at=window[0],
                current_value=None if cur is None or pd.isna(cur) else float(cur),
                reference_value=ref,
                drop=drop,
                responses=len(in_cause),
                example_response_ids=[str(e) for e in examples],
                cause=kind,
                **counts,
                retrieval_share=shares["retrieval"],
                generation_share=shares["generation"],
                citation_hygiene_share=shares["citation_hygiene"],
                message="",
                updated_at=now,
            )
        )
        return row.model_copy(update={"message": incident_message(row)})

    def _with_alert(self, incident: IncidentRow, alert: AlertRow, now: datetime) -> IncidentRow:
        label = _label(alert.slice_dimension, alert.slice_value)
        affected = incident.affected_slices
        if label != _label(incident.cause_dimension, incident.cause_value) and label not in affected:
            affected = [*affected, label]
        row = incident.model_copy(
            update={"alert_ids": [*incident.alert_ids, alert.alert_id], "affected_slices": affected, "updated_at": now}
        )
        return row.model_copy(update={"message": incident_message(row)})


def _drop(alert: AlertRow) -> float:
    if alert.reference_value and alert.current_value is not None:
        return (alert.reference_value - alert.current_value) / abs(alert.reference_value)
    return 0.0


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def incident_message(row: IncidentRow) -> str:
    """One line: the cause, the drop, the slices affected, and why confidence fell."""
    what = _label(row.cause_dimension, row.cause_value)
    drop = (
        f"mean attribution confidence {row.reference_value:.3f} -> {row.current_value:.3f} ({-row.drop:+.0%})"
        if (row.drop is not None and row.reference_value is not None and row.current_value is not None)
        else "confidence fell"
    )
    shares = ", ".join(
        f"{k.replace('_', ' ')} {v:.0%}"
        for k, v in (
            ("retrieval", row.retrieval_share),
            ("generation", row.generation_share),
            ("citation_hygiene", row.citation_hygiene_share),
        )
        if v is not None
    )
    affected = ", ".join(row.affected_slices) or "none"
    return (
        f"{what} since {row.started_at:%Y-%m-%d %H:%M}: {drop} over {row.responses} responses; "
        f"likely cause {row.cause.replace('_', ' ')} ({shares or 'no problems counted'}: "
        f"{row.ungrounded_sentences} ungrounded, {row.uncited_claims} uncited claims, "
        f"{row.contradicted_sentences} contradicted, {row.misattributed_citations} misattributed, "
        f"{row.fabricated_citations} fabricated ids, {row.inexact_quotes} inexact quotes); "
        f"{len(row.alert_ids)} alerts; also affected: {affected}"
    )


def format_incident(row: IncidentRow) -> str:
    """How an incident reads in the log and on the console."""
    if row.status == AlertStatus.cleared:
        what = _label(row.cause_dimension, row.cause_value)
        return f"INCIDENT CLEARED {what} started {row.started_at:%Y-%m-%d %H:%M}, cleared {row.cleared_at:%H:%M}"
    examples = ", ".join(row.example_response_ids[:3])
    return f"INCIDENT {row.message}. Examples: {examples}"
