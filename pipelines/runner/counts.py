"""What happened to every message of a run: the counts a run prints and checks (read = audited + sampled
out + dead-lettered; the lines of a JSONL input are read + skipped blank), from Beam's counters, summed over
the passes of a run in passes.

    counts = counts_from_result(pipeline_result)
    counts.adds_up, print(format_counts(counts, "./groundwatch-lake"))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from apache_beam.metrics.metric import MetricsFilter

from transforms.ingest.parse import DEAD_LETTER_NAMESPACE, METRICS_NAMESPACE, UNKNOWN_FIELDS_COUNTER
from transforms.io.jsonl import SKIPPED_BLANK_COUNTER
from transforms.io.kafka.client import KAFKA_METRICS_NAMESPACE, REFUSED_PREFIX
from transforms.io.lake import filesystem as lakefs
from transforms.io.lake.writer import LAKE_METRICS_NAMESPACE

__all__ = ["AuditCounts", "counts_from_result", "format_counts", "sum_counts"]


@dataclass(frozen=True)
class AuditCounts:
    """What happened to every message of a run."""

    read: int
    audited: int
    sampled_out: int
    dead_lettered: int
    needs_review: int
    dead_letter_reasons: dict[str, int]
    offset_commit_failures: int = 0
    """Kafka offset commit attempts that failed (the broker was away): a commit is retried with the partition's
    next chunk read (a stream's idle ones included), and a run's offsets left uncommitted are read again by the
    next one."""
    rows_written: dict[str, int] = field(default_factory=dict)
    """Rows the run wrote to each lake table, by the lake writer's own count."""
    skipped_blank: int = 0
    """Blank lines of a JSONL input: no message, so not in `read`, but lines given (read + skipped = lines)."""
    with_unknown_fields: int = 0
    """Valid messages that carried fields the input contract does not know (kept in `responses.extra`)."""
    kafka_refused: dict[str, int] = field(default_factory=dict)
    """Messages a Kafka sink's topic refused for good (too large, say), by topic: each one's row is in the lake."""

    @property
    def adds_up(self) -> bool:
        return self.read == self.audited + self.sampled_out + self.dead_lettered

    def lake_shortfall(self) -> str | None:
        """What the lake lacks of this run's audited responses and dead letters, or None when it got them all.

        Every audited response is one `responses` row and every dead letter one `dead_letters` row. Fewer rows
        written than counted means rows were lost between the audit and the lake: the in-process runner with
        worker processes has lost part of a large run's output this way (seen for runs of 100,000 messages).
        """
        short = [
            f"{got} {table} rows for {expected} {what}"
            for table, what, expected in (
                ("responses", "audited responses", self.audited),
                ("dead_letters", "dead letters", self.dead_lettered),
            )
            if (got := self.rows_written.get(table, 0)) < expected
        ]
        return f"the lake got {' and '.join(short)}" if short else None


def sum_counts(runs: Sequence[AuditCounts]) -> AuditCounts:
    """The counts of several runs (the passes of a catch-up) as one."""
    reasons: Counter[str] = Counter()
    written: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    for c in runs:
        reasons.update(c.dead_letter_reasons)
        written.update(c.rows_written)
        refused.update(c.kafka_refused)
    total = lambda field: sum(getattr(c, field) for c in runs)  # noqa: E731
    return AuditCounts(
        read=total("read"),
        audited=total("audited"),
        sampled_out=total("sampled_out"),
        dead_lettered=total("dead_lettered"),
        needs_review=total("needs_review"),
        dead_letter_reasons=dict(sorted(reasons.items())),
        offset_commit_failures=total("offset_commit_failures"),
        rows_written=dict(sorted(written.items())),
        skipped_blank=total("skipped_blank"),
        with_unknown_fields=total("with_unknown_fields"),
        kafka_refused=dict(sorted(refused.items())),
    )


def counts_from_result(result) -> AuditCounts:
    """The run's counts from Beam's committed counters."""
    totals: dict[tuple[str, str], int] = {}
    for namespace in (METRICS_NAMESPACE, DEAD_LETTER_NAMESPACE, KAFKA_METRICS_NAMESPACE, LAKE_METRICS_NAMESPACE):
        query = result.metrics().query(MetricsFilter().with_namespace(namespace))
        for counter in query["counters"]:
            key = (counter.key.metric.namespace, counter.key.metric.name)
            # Some portable runners report only attempted values.
            value = counter.committed if counter.committed is not None else counter.attempted
            totals[key] = totals.get(key, 0) + (value or 0)
    reasons = {name: n for (ns, name), n in totals.items() if ns == DEAD_LETTER_NAMESPACE and n}
    get = lambda name: totals.get((METRICS_NAMESPACE, name), 0)  # noqa: E731
    return AuditCounts(
        read=get("read"),
        audited=get("audited"),
        sampled_out=get("sampled_out"),
        dead_lettered=sum(reasons.values()),
        needs_review=get("needs_review"),
        dead_letter_reasons=dict(sorted(reasons.items())),
        offset_commit_failures=totals.get((KAFKA_METRICS_NAMESPACE, "offset_commit_failures"), 0),
        rows_written={
            name.removesuffix("_rows"): n
            for (ns, name), n in sorted(totals.items())
            if ns == LAKE_METRICS_NAMESPACE and name.endswith("_rows")
        },
        skipped_blank=get(SKIPPED_BLANK_COUNTER),
        with_unknown_fields=get(UNKNOWN_FIELDS_COUNTER),
        kafka_refused={
            name.removeprefix(REFUSED_PREFIX): n
            for (ns, name), n in sorted(totals.items())
            if ns == KAFKA_METRICS_NAMESPACE and name.startswith(REFUSED_PREFIX) and n
        },
    )


def format_counts(counts: AuditCounts, lake: str) -> str:
    """The end-of-run summary: the four counts, the blank lines skipped, the dead-letter reasons, the messages
    with unknown fields, failed offset commits and messages a Kafka topic refused (when any), and where the lake
    is."""
    lines = [
        f"read           {counts.read:>8}",
        f"skipped blank  {counts.skipped_blank:>8}   (blank lines: no message)",
        f"audited        {counts.audited:>8}   ({counts.needs_review} need review)",
        f"sampled out    {counts.sampled_out:>8}",
        f"dead-lettered  {counts.dead_lettered:>8}"
        + (
            f"   ({', '.join(f'{k}: {v}' for k, v in counts.dead_letter_reasons.items())})"
            if counts.dead_letter_reasons
            else ""
        ),
        f"lake           {lakefs.normalize(lake)}",
    ]
    if counts.with_unknown_fields:
        lines.insert(
            -1,
            f"unknown fields {counts.with_unknown_fields:>8} messages carried fields the contract does not know "
            "(kept in responses.extra)",
        )
    if counts.offset_commit_failures:
        lines.insert(
            -1,
            f"offset commits {counts.offset_commit_failures:>8} failed (retried; uncommitted offsets are read again)",
        )
    if counts.kafka_refused:
        by_topic = ", ".join(f"{topic}: {n}" for topic, n in counts.kafka_refused.items())
        lines.insert(
            -1,
            f"kafka refused  {sum(counts.kafka_refused.values()):>8} messages ({by_topic}; their rows are in the lake)",
        )
    return "\n".join(lines)
