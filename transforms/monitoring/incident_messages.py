"""How an incident reads: its id, its one-line message, and its line in the log and on the console."""

from __future__ import annotations

import hashlib
from datetime import datetime

from schemas.monitoring import ALL_TRAFFIC, AlertStatus, IncidentRow
from transforms.monitoring.times import later_text

__all__ = [
    "format_incident",
    "incident_id",
    "incident_message",
    "retrieval_evidence_text",
    "share_labels",
    "slice_label",
]


def incident_id(dimension: str, value: str, started_at: datetime) -> str:
    """A stable id of one incident: its cause slice and the window that opened it."""
    text = "\x1f".join(["incident", dimension, value, started_at.isoformat()])
    return "incident-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def slice_label(dimension: str, value: str) -> str:
    """`retriever_version=r9`, or `all traffic`."""
    return "all traffic" if dimension == ALL_TRAFFIC else f"{dimension}={value}"


def incident_message(row: IncidentRow) -> str:
    """One line: the cause, the drop, the slices affected, and why confidence fell."""
    what = slice_label(row.cause_dimension, row.cause_value)
    drop = (
        f"mean attribution confidence {row.reference_value:.3f} -> {row.current_value:.3f} ({-row.drop:+.0%})"
        if (row.drop is not None and row.reference_value is not None and row.current_value is not None)
        else "confidence fell"
    )
    shares = ", ".join(
        f"{label} {v:.0%}"
        for label, v in zip(
            share_labels(row.retrieval_moved),
            (row.retrieval_share, row.generation_share, row.citation_hygiene_share),
            strict=True,
        )
        if v is not None
    )
    affected = ", ".join(row.affected_slices) or "none"
    return (
        f"{what} since {row.started_at:%Y-%m-%d %H:%M}: {drop} over {row.responses} responses; "
        f"likely cause {row.cause.replace('_', ' ')}{retrieval_evidence_text(row)} "
        f"({shares or 'no problems counted'}: "
        f"{row.ungrounded_sentences} ungrounded, {row.uncited_claims} uncited claims, "
        f"{row.contradicted_sentences} contradicted, {row.misattributed_citations} misattributed, "
        f"{row.fabricated_citations} fabricated ids, {row.inexact_quotes} inexact quotes); "
        f"{len(row.alert_ids)} alerts; also affected: {affected}"
    )


def share_labels(retrieval_moved: bool | None) -> tuple[str, str, str]:
    """What an incident's three shares are called (its message, the report). Where the retrieval scores
    made the call (retrieval moved), the shares only say what went wrong in the answers (unsupported:
    ungrounded sentences and uncited claims; misstated: contradicted sentences and misattributed citations),
    not whose doing it was: a stale index contradicts numbers as a misquoting generator does. Otherwise they
    are the cause's own split."""
    if retrieval_moved:
        return ("unsupported", "misstated", "citation hygiene")
    return ("retrieval", "generation", "citation hygiene")


def retrieval_evidence_text(row: IncidentRow) -> str:
    """Why the call between retrieval and generation was made: `: retrieval moved (context relevance 0.30 ->
    0.17, empty retrieval 4% -> 48%)`, or `: retrieval held (...)`; empty without retrieval scores."""
    if row.retrieval_moved is None or row.context_relevance is None or row.reference_context_relevance is None:
        return ""
    verb = "moved" if row.retrieval_moved else "held"
    return (
        f": retrieval {verb} (context relevance {row.reference_context_relevance:.2f} -> {row.context_relevance:.2f}, "
        f"empty retrieval {row.reference_empty_retrieval_rate or 0:.0%} -> {row.empty_retrieval_rate or 0:.0%})"
    )


def format_incident(row: IncidentRow) -> str:
    """How an incident reads in the log and on the console."""
    if row.status == AlertStatus.cleared:
        what = slice_label(row.cause_dimension, row.cause_value)
        cleared = later_text(row.started_at, row.cleared_at) if row.cleared_at else "?"
        return f"INCIDENT CLEARED {what} started {row.started_at:%Y-%m-%d %H:%M}, cleared {cleared}"
    examples = ", ".join(row.example_response_ids[:3])
    return f"INCIDENT {row.message}. Examples: {examples}"
