"""Incidents: the alerts of one cause, grouped under the slice that explains them.

One retriever regression raises alerts on its retriever version, on every generator model and tenant its
traffic reaches, and on all traffic. An operator needs one thing: "retriever_version=r9 is worse since
10:05". `IncidentTracker.update` takes the alerts a window raised and groups them:

- an alert joins an open incident when that incident's cause explains it: pooled over the incident's windows
  (`transforms.monitoring.incident_stats`), the alert's slice without the cause's responses shows no
  significant fall of its own; or when all open causes together explain it;
- the rest are grouped greedily under the candidate slice (one of theirs, never all traffic while another
  can, nor a slice that is all traffic under another name: `another_name_for_all_traffic`) that explains the
  most of them in their window, ties going to the larger drop; what none explains is
  its own incident. In an incident's first windows its cause is named again from all its windows so far, if
  another slice explains more of its alerts (in the opening window a model that r9 reaches can look as bad
  as r9);
- a second cause that starts while the alerts it raises are already open for the first one (a generator
  that starts misquoting numbers during a retriever regression) raises no new alert: each window, inside
  every slice with an open confidence alert, the slices without the open causes' responses are tested
  against the windows before the incident, and one that fell significantly on its own, and whose removal
  leaves the alerting slice unexplained no more, opens an incident (started at its most likely change point);
- an alert of a slice checked over a span of windows (a tenant too small for one window,
  `transforms.monitoring.drift`) takes no part in the grouping above: its span pools windows from before the
  change, it arrives later than the window alerts, and its reference may be all traffic's, so as a candidate or
  a suspect it would name causes of its own (on scenario traffic it did). It joins the open incident whose cause
  served a third of the span's responses or explains it over the span (`_span_explained`); without one it stays
  an alert of its own, and tries again each window while it fires. It opens an incident of its own slice only
  when it fires while no window alert does (a small customer's own lake, where every slice is checked over
  spans), and holds open no other incident: it lags behind the recovery as it lagged behind the change;
- an incident clears when all of its alerts have cleared (of span alerts, only those of its cause count).

Each incident carries, pooled over its windows (`started_at` to `figures_through`) and refreshed whenever it
changes: the drop of its cause slice against the windows before it, example responses (least supported
first) and a breakdown of why confidence fell, counted from the lake rows of the cause slice beyond what the
other traffic has: retrieval (ungrounded sentences, uncited claims), generation (contradicted sentences,
misattributed citations), citation hygiene (fabricated citation ids, inexact quotes). Where the lake has
retrieval scores, they decide between retrieval and generation (`transforms.monitoring.incident_retrieval`):
the cause slice's context relevance and empty-retrieval rate against the same reference::

    tracker = IncidentTracker.from_lake_rows(frames.incidents)
    changed = tracker.update(frames, window, alert_changes, open_alerts, now)   # IncidentRows to write
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from schemas.monitoring import ALL_TRAFFIC, AlertRow, AlertStatus, IncidentRow
from transforms.monitoring.incident_messages import format_incident, incident_id, incident_message, slice_label
from transforms.monitoring.incident_retrieval import RETRIEVAL_FIELDS, attribute, retrieval_evidence
from transforms.monitoring.incident_stats import (
    COUNT_COLUMNS,
    MIN_POOLED_RESPONSES,
    POOLED_WINDOWS,
    Residual,
    best_split,
    cause_breakdown,
    in_slice,
    outside,
    pooled_responses,
    reference_windows,
    residual,
    span,
)
from transforms.monitoring.plans import CHECK_COLUMNS

__all__ = [
    "IncidentTracker",
    "another_name_for_all_traffic",
    "cause_breakdown",
    "explains",
    "format_incident",
    "incident_id",
]

_SLICE_COLUMNS = ("retriever_version", "generator_model", "tenant")
_RENAME_WINDOWS = POOLED_WINDOWS
"""An incident's cause may be named again during its first windows only: then its name settles, before a
second cause starting later (whose responses are not yet an incident of their own) can pull it away."""
_MIN_CAUSE_RESPONSES = 5
"""Fewer responses of a slice in the window: too few to name it as the cause of anything."""
_CONFIDENCE_CHECKS = ("mean_confidence_drop", "confidence_drift", "faithfulness_drift")


def _limit(alert: AlertRow) -> float | None:
    """The value under which the alert's slice counts as dropped (its reference less the tolerated drop)."""
    if alert.check == "mean_confidence_drop" and alert.threshold is not None:
        return alert.threshold
    if alert.reference_value is None:
        return None
    return alert.reference_value * 0.95  # a distribution drift: the mean must come back near the reference


def another_name_for_all_traffic(frames, before: datetime) -> frozenset[tuple[str, str]]:
    """The slices that held all but a handful (under `_MIN_CAUSE_RESPONSES`) of the responses of the reference
    windows before `before`: the one generator model of a deployment, say. Without them too little is left to
    compare with, so each 'explains' every alert (`explains`) as all traffic does: never named a cause. A slice new
    since then (a retriever that took over) leaves the whole reference outside it, and stays a candidate."""
    reference = pooled_responses(frames, reference_windows(frames, before))
    if len(reference) < MIN_POOLED_RESPONSES:
        return frozenset()  # too few responses before to tell a slice from all traffic: none is excluded
    found = set()
    for column in _SLICE_COLUMNS:
        if column in reference:
            sizes = reference[column].value_counts()
            found |= {(column, str(v)) for v, n in sizes.items() if len(reference) - n < _MIN_CAUSE_RESPONSES}
    return frozenset(found)


def explains(cause: tuple[str, str], alert: AlertRow, responses: pd.DataFrame) -> bool:
    """Whether the alert's drop (mostly) vanishes without the cause slice's responses, or nothing is left of it.

    A confidence alert is explained when, without the cause's responses, less than half of its drop remains.
    A claim-rate or coverage alert, whose rate the responses frame does not carry, is explained when the
    cause's responses are at least a third of its slice."""
    if (alert.slice_dimension, alert.slice_value) == cause or cause[0] == ALL_TRAFFIC:
        return True
    mine = responses[in_slice(responses, alert.slice_dimension, alert.slice_value)]
    rest = mine[~in_slice(mine, *cause)]
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


_SPAN_COLUMNS = {
    "confidence_drift": "mean_attribution_confidence",
    "mean_confidence_drop": "mean_attribution_confidence",
    "faithfulness_drift": "faithfulness",
    **CHECK_COLUMNS,
}
"""The responses' column whose mean a check compares (a claim-rate or coverage check has none)."""


def _span_explained(cause: tuple[str, str], alert: AlertRow, mine: pd.DataFrame) -> bool:
    """Whether, without the cause's responses in the span (`mine`: the alert's slice over its span), less than
    half of the alert's move from its reference is left, or the rest moved the other way. False for a check
    without a column (`_SPAN_COLUMNS`): there only the cause's share of the span can say (`_span_home`)."""
    column, ref, cur = _SPAN_COLUMNS.get(alert.check), alert.reference_value, alert.current_value
    if column not in mine or ref is None or cur is None:
        return False
    left = float(mine.loc[~in_slice(mine, *cause), column].astype(float).mean()) - ref
    return pd.isna(left) or left * (cur - ref) <= 0 or abs(left) < 0.5 * abs(cur - ref)


class IncidentTracker:
    """The open incidents, each with the alert ids it groups."""

    def __init__(
        self,
        open_incidents: dict[str, IncidentRow] | None = None,
        examples: int = 5,
        *,
        p_value: float = 0.001,
        min_drop: float = 0.10,
    ):
        self.open: dict[str, IncidentRow] = dict(open_incidents or {})
        self.examples = examples
        self.p_value = p_value
        """Family-wise p-value of a window's residual tests (shared by them, as the drift checks share theirs)."""
        self.min_drop = min_drop
        """Smallest relative fall of a residual that counts as a cause of its own (the drift checks' limit)."""

    @classmethod
    def from_lake_rows(cls, incidents: pd.DataFrame, examples: int = 5, **settings) -> IncidentTracker:
        """Rebuild the open incidents from the `incidents` table (latest row per incident_id)."""
        open_incidents = {}
        if len(incidents):
            for record in incidents[incidents["status"] == AlertStatus.firing.value].to_dict("records"):
                record = {k: (None if _missing(v) else v) for k, v in record.items()}
                for column in ("affected_slices", "alert_ids", "example_response_ids"):
                    values = record.get(column)
                    record[column] = [] if values is None else [str(x) for x in values]
                for column in ("window_start", "started_at", "updated_at", "figures_through"):
                    if record.get(column) is not None:
                        record[column] = pd.Timestamp(record[column]).to_pydatetime()
                row = IncidentRow.model_validate(record)
                open_incidents[row.incident_id] = row
        return cls(open_incidents, examples, **settings)

    def _causes(self, but: IncidentRow | None = None) -> list[tuple[str, str]]:
        return [_cause(i) for i in self.open.values() if i is not but]

    def update(self, frames, window, changes: list[AlertRow], open_alerts, now: datetime) -> list[IncidentRow]:
        """Group the window's new alerts into incidents, look for a second cause inside the alerts already
        grouped, refresh the pooled figures of the incidents that changed, and clear those whose alerts cleared."""
        window_start = window[0]
        all_traffic = another_name_for_all_traffic(frames, window_start)
        changed: dict[str, IncidentRow] = {}
        loose = []
        # Alerts of slices checked over spans are placed last, apart (see the module's docstring).
        span_alerts = [a for a in open_alerts if a.span_start is not None]
        changes = [a for a in changes if a.span_start is None]
        open_alerts = [a for a in open_alerts if a.span_start is None]
        for alert in (a for a in changes if a.status == AlertStatus.firing):
            vague = next((i for i in self.open.values() if i.cause_dimension == ALL_TRAFFIC), None)
            if (
                alert.slice_dimension != ALL_TRAFFIC
                and vague is not None
                and _slice(alert) not in self._causes()
                and _slice(alert) not in another_name_for_all_traffic(frames, vague.started_at)
            ):
                # All traffic alerted first (the new slice had too few responses then): name the slice now.
                promoted = vague.model_copy(
                    update={"cause_dimension": alert.slice_dimension, "cause_value": alert.slice_value}
                )
                self.open[vague.incident_id] = changed[vague.incident_id] = self._with_alert(promoted, alert, now)
                continue
            homes = self._homes(frames, window_start, alert)
            if not homes:
                loose.append(alert)
            for home in homes:
                self.open[home.incident_id] = changed[home.incident_id] = self._with_alert(home, alert, now)
        while loose:
            others = self._causes()
            responses = outside(frames.responses_in(window_start), others)
            cause, members = self._best_cause(loose, responses, all_traffic)
            row = self._open(window_start, cause, members, window_start, now)
            self.open[row.incident_id] = changed[row.incident_id] = row
            loose = [a for a in loose if a not in members]
            for alert in [a for a in loose if a.check not in _CONFIDENCE_CHECKS]:
                for home in self._most_overlap(frames, window_start, alert):
                    self.open[home.incident_id] = changed[home.incident_id] = self._with_alert(home, alert, now)
                    loose.remove(alert)
        for row in self._rename(frames, window_start, open_alerts, now):
            changed[row.incident_id] = row
        for row in self._second_causes(frames, window_start, open_alerts, now):
            self.open[row.incident_id] = changed[row.incident_id] = row
        grouped = {a for i in self.open.values() for a in i.alert_ids}
        for alert in (a for a in span_alerts if a.alert_id not in grouped):
            joined = self._span_home(frames, window_start, alert)
            if joined is not None:
                self.open[joined] = changed[joined] = self._with_alert(self.open[joined], alert, now)
            elif not open_alerts and alert.window_start == window_start:
                # New, and nothing else fires (a small customer's own lake): its slice is the cause.
                row = self._open(window_start, _slice(alert), [alert], alert.span_start, now)
                self.open[row.incident_id] = changed[row.incident_id] = row
            # else it stays an alert of its own while the window alerts name their causes, and tries again
        # A span alert holds open only an incident of its own slice (one it opened); elsewhere it lags.
        firing_ids = {a.alert_id for a in open_alerts}
        firing_ids |= {a.alert_id for a in span_alerts if any(_slice(a) == _cause(i) for i in self.open.values())}
        for key, incident in list(self.open.items()):
            if not any(a in firing_ids for a in incident.alert_ids):
                cleared = incident.model_copy(
                    update={"status": AlertStatus.cleared, "cleared_at": window_start, "updated_at": now}
                )
                del self.open[key]
                changed[key] = cleared
            elif key in changed:
                # Figures pooled over the incident's windows so far: one window of a slice is a dozen responses.
                row = changed[key].model_copy(update=self._figures(frames, changed[key], window_start))
                self.open[key] = changed[key] = row.model_copy(update={"message": incident_message(row)})
        return list(changed.values())

    def _residual(self, frames, slice_, causes, since: datetime, until: datetime, within=None) -> Residual:
        windows, reference = span(frames, since, until), reference_windows(frames, since)
        return residual(frames, slice_, causes, windows, reference, within or (ALL_TRAFFIC, ALL_TRAFFIC))

    def _homes(self, frames, window_start: datetime, alert: AlertRow) -> list[IncidentRow]:
        """The open incidents whose causes explain the alert: one alone, or all of them together."""
        same = [i for i in self.open.values() if _cause(i) == _slice(alert)]
        if same or not self.open:
            return same
        if alert.check not in _CONFIDENCE_CHECKS:
            # A claim-rate or coverage alert carries no mean to test a residual on: it joins the incident whose
            # cause holds the most of its slice's responses rather than open one under some slice of its own.
            return self._most_overlap(frames, window_start, alert)
        since = min(i.started_at for i in self.open.values())
        homes = [i for i in self.open.values() if self._explains(frames, since, window_start, [_cause(i)], alert)]
        if homes:
            return homes[:1]
        explained = self._explains(frames, since, window_start, self._causes(), alert)
        return list(self.open.values()) if explained else []

    def _span_home(self, frames, window_start: datetime, alert: AlertRow) -> str | None:
        """The open incident a span alert belongs to: of those whose cause served a third of the span's responses
        or explains the alert over the span (`_span_explained`), the one that served the most; else None. An
        incident named after the alert's own slice comes last: it serves the whole span by definition, and
        when a window's residual test named it beside another cause, its span alerts would hold it open."""
        span = frames.responses_over(alert.span_start, window_start)
        mine = span[in_slice(span, *_slice(alert))]
        homes = []
        for key, incident in self.open.items():
            served = int(in_slice(mine, *_cause(incident)).sum())
            if served and (served >= len(mine) / 3 or _span_explained(_cause(incident), alert, mine)):
                homes.append((_cause(incident) != _slice(alert), served, key))
        return max(homes)[2] if homes else None

    def _most_overlap(self, frames, window_start: datetime, alert: AlertRow) -> list[IncidentRow]:
        mine = frames.responses_in(window_start)
        mine = mine[in_slice(mine, *_slice(alert))]
        shares = [(int(in_slice(mine, *_cause(i)).sum()), i.incident_id) for i in self.open.values()]
        best = max(shares, default=(0, ""))
        return [self.open[best[1]]] if best[0] else []

    def _explains(self, frames, since: datetime, window_start: datetime, causes, alert: AlertRow) -> bool:
        """Whether, pooled over the windows from `since`, the alert's slice without the responses of `causes`
        shows no fall of its own (a claim-rate or coverage alert, whose rate the responses do not carry:
        whether the causes' responses are at least a third of its slice)."""
        if _slice(alert) in causes or (ALL_TRAFFIC, ALL_TRAFFIC) in causes:
            return True
        if alert.check not in _CONFIDENCE_CHECKS:
            pooled = pooled_responses(frames, span(frames, since, window_start))
            mine = pooled[in_slice(pooled, *_slice(alert))]
            return len(outside(mine, causes)) <= len(mine) * 2 / 3
        left = self._residual(frames, _slice(alert), causes, since, window_start)
        return not left.separate(self.p_value, self.min_drop)

    def _candidates(self, pooled: pd.DataFrame, causes, all_traffic: frozenset) -> list[tuple[str, str]]:
        found = []
        for column in _SLICE_COLUMNS:
            if column in pooled:
                sizes = pooled[column].value_counts()
                found += [(column, str(v)) for v, n in sizes.items() if n >= MIN_POOLED_RESPONSES]
        return [c for c in found if c not in causes and c not in all_traffic]

    def _rename(self, frames, window_start: datetime, open_alerts, now: datetime) -> list[IncidentRow]:
        """In an incident's first windows, the slice that explains its alerts' drops best over its windows so
        far: in the opening window a model that r9's traffic reaches can look as bad as r9 itself, and claim-rate
        alerts, all that some first windows raise, do not tell them apart."""
        renamed = []
        firing = {a.alert_id: a for a in open_alerts}
        if len(self.open) != 1:
            return []  # with two causes open, each one's residuals lean on the other's name: leave both
        for key, incident in list(self.open.items()):
            if len(span(frames, incident.started_at, window_start, last=0)) > _RENAME_WINDOWS:
                continue  # the name has settled
            others = self._causes(but=incident)
            alerts = [firing[a] for a in incident.alert_ids if a in firing]
            slices = list(dict.fromkeys(_slice(a) for a in alerts if a.check in _CONFIDENCE_CHECKS))
            if not slices:
                continue
            pooled = outside(pooled_responses(frames, span(frames, incident.started_at, window_start)), others)

            def left(cause, slices=slices, others=others, since=incident.started_at) -> float:
                # The relative fall of the alerting slices left once the cause's responses are taken out.
                total = 0.0
                for slice_ in slices:
                    rest = self._residual(frames, slice_, [cause, *others], since, window_start)
                    total += max(0.0, rest.drop) if rest.responses >= MIN_POOLED_RESPONSES else 0.0
                return total

            current = left(_cause(incident))
            all_traffic = another_name_for_all_traffic(frames, incident.started_at)
            named = self._candidates(pooled, others, all_traffic)
            scored = [(left(c), c) for c in named if c != _cause(incident)]
            if not scored or min(scored)[0] >= 0.5 * current:
                continue
            _, (dimension, value) = min(scored)
            labels = dict.fromkeys(slice_label(*_slice(a)) for a in alerts)
            row = incident.model_copy(
                update={
                    "cause_dimension": dimension,
                    "cause_value": value,
                    "affected_slices": [s for s in labels if s != slice_label(dimension, value)],
                    "updated_at": now,
                }
            )
            self.open[key] = row
            renamed.append(row)
        return renamed

    def _second_causes(self, frames, window_start: datetime, open_alerts, now: datetime) -> list[IncidentRow]:
        """An incident for a cause that starts while the alerts it raises are already open for another one (a
        generator that starts misquoting numbers during a retriever regression): inside an alerting slice,
        another slice without the open causes' responses falls on its own, and naming it explains the rest."""
        if not self.open:
            return []
        causes = self._causes()
        since = min(i.started_at for i in self.open.values())
        pooled = outside(pooled_responses(frames, span(frames, since, window_start)), causes)
        suspects = list(
            dict.fromkeys(_slice(a) for a in open_alerts if a.check in _CONFIDENCE_CHECKS and _slice(a) not in causes)
        )
        all_traffic = another_name_for_all_traffic(frames, since)
        tests = []
        for suspect in suspects:
            mine = pooled[in_slice(pooled, *suspect)]
            named = self._candidates(mine, causes, all_traffic)
            tests += [(suspect, c) for c in named if suspect[0] == ALL_TRAFFIC or c == suspect]
        threshold = self.p_value / max(1, len(tests))  # Bonferroni over the window's residual tests
        found = []
        for suspect, candidate in tests:
            left = self._residual(frames, candidate, causes, since, window_start, within=suspect)
            if not left.separate(threshold, self.min_drop):
                continue
            rest = self._residual(frames, suspect, [*causes, candidate], since, window_start)
            if not rest.separate(threshold, self.min_drop):
                found.append((left.drop, candidate, suspect))
        if not found:
            return []
        _, cause, suspect = max(found)
        start = best_split(frames, cause, causes, span(frames, since, window_start, last=0)) or window_start
        members = [a for a in open_alerts if _slice(a) in (cause, suspect)]
        return [self._open(window_start, cause, members, start, now)]

    def _best_cause(
        self, alerts: list[AlertRow], responses: pd.DataFrame, all_traffic: frozenset
    ) -> tuple[tuple[str, str], list[AlertRow]]:
        # Candidates: the alerting slices, and every slice with traffic in the window: a new retriever version
        # can be too small to alert on its own in its first window, while the models it serves already do.
        candidates = list(dict.fromkeys((a.slice_dimension, a.slice_value) for a in alerts))
        for column in _SLICE_COLUMNS:
            if column in responses:
                sizes = responses[column].value_counts()
                candidates += [(column, str(v)) for v, n in sizes.items() if n >= _MIN_CAUSE_RESPONSES]
        candidates = list(dict.fromkeys(candidates))
        # Never all traffic while another slice can be named, nor a slice that is all traffic under another name.
        everything = (ALL_TRAFFIC, ALL_TRAFFIC)
        specific = [c for c in candidates if c[0] != ALL_TRAFFIC and c not in all_traffic] or [everything]

        def score(cause):
            members = [a for a in alerts if explains(cause, a, responses)]
            mean = responses.loc[in_slice(responses, *cause), "mean_attribution_confidence"].mean()
            # Ties go to the least supported slice (the largest drop against any one reference), also when
            # the alerts are claim-rate ones, which carry no reference mean.
            return len(members), -1.0 if pd.isna(mean) else -float(mean), members

        scored = {c: score(c) for c in specific}
        best = max(specific, key=lambda c: scored[c][:2])
        if not scored[best][0]:  # nothing explains the first alert but its own slice (all traffic, say)
            best = (alerts[0].slice_dimension, alerts[0].slice_value)
            best = everything if best in all_traffic else best
            return best, score(best)[2]
        return best, scored[best][2]

    def _open(self, window_start, cause, members: list[AlertRow], started_at, now) -> IncidentRow:
        own = [a for a in members if _slice(a) == cause]
        lead = max(own, key=_drop) if own else members[0]
        affected = [slice_label(*_slice(a)) for a in members]
        # Its figures and message come from `update`, which fills them for every incident that changed.
        return IncidentRow.model_validate(
            dict(
                incident_id=incident_id(cause[0], cause[1], started_at),
                status=AlertStatus.firing,
                cause_dimension=cause[0],
                cause_value=cause[1],
                affected_slices=[s for s in dict.fromkeys(affected) if s != slice_label(*cause)],
                alert_ids=[a.alert_id for a in members],
                window_start=window_start,
                started_at=started_at,
                reference_value=lead.reference_value,
                responses=0,
                cause="unknown",
                **dict.fromkeys(COUNT_COLUMNS, 0),
                message="",
                updated_at=now,
            )
        )

    def _figures(self, frames, incident: IncidentRow, window_start: datetime) -> dict[str, Any]:
        """The incident's drop, examples and breakdown, pooled over its windows so far, its cause slice without
        the other open causes' responses, against the windows before it started."""
        cause = _cause(incident)
        others = [c for c in self._causes() if c != cause]
        windows = span(frames, incident.started_at, window_start, last=0)
        pooled = outside(pooled_responses(frames, windows), others)
        in_cause = pooled[in_slice(pooled, *cause)]
        counts = cause_breakdown(frames, windows, in_cause, pooled[~in_slice(pooled, *cause)])
        reference = reference_windows(frames, incident.started_at)
        before = outside(pooled_responses(frames, reference), others)
        mine = in_slice(before, *cause)
        # A slice new in the last of those windows (r9 from the change, the incident opening a window later)
        # has no history of its own: its reference is the traffic it replaced.
        new_slice = before.loc[mine, "window_start"].nunique() < max(1, len(reference) / 2)
        before = before[~mine] if new_slice else before[mine]
        evidence = retrieval_evidence(in_cause, before, p_value=self.p_value, min_change=self.min_drop)
        kind, shares = attribute(evidence, counts)
        ref = before["mean_attribution_confidence"].mean() if len(before) else incident.reference_value
        cur = in_cause["mean_attribution_confidence"].mean() if len(in_cause) else None
        ref = None if ref is None or pd.isna(ref) else float(ref)
        cur = None if cur is None or pd.isna(cur) else float(cur)
        ranked = in_cause.sort_values("mean_attribution_confidence")["response_id"].head(self.examples)
        return dict(
            figures_through=window_start,
            current_value=cur,
            reference_value=ref,
            drop=(ref - cur) / ref if ref and cur is not None else None,
            responses=len(in_cause),
            example_response_ids=[str(e) for e in ranked],
            cause=kind,
            **counts,
            retrieval_share=shares["retrieval"],
            generation_share=shares["generation"],
            citation_hygiene_share=shares["citation_hygiene"],
            **(evidence.fields() if evidence is not None else dict.fromkeys(RETRIEVAL_FIELDS)),
        )

    def _with_alert(self, incident: IncidentRow, alert: AlertRow, now: datetime) -> IncidentRow:
        label = slice_label(alert.slice_dimension, alert.slice_value)
        affected = incident.affected_slices
        if label != slice_label(incident.cause_dimension, incident.cause_value) and label not in affected:
            affected = [*affected, label]
        # Its message comes from `update`, with the figures it refreshes.
        return incident.model_copy(
            update={"alert_ids": [*incident.alert_ids, alert.alert_id], "affected_slices": affected, "updated_at": now}
        )


def _cause(incident: IncidentRow) -> tuple[str, str]:
    return incident.cause_dimension, incident.cause_value


def _slice(alert: AlertRow) -> tuple[str, str]:
    return alert.slice_dimension, alert.slice_value


def _drop(alert: AlertRow) -> float:
    if alert.reference_value and alert.current_value is not None:
        return (alert.reference_value - alert.current_value) / abs(alert.reference_value)
    return 0.0


def _missing(value) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
