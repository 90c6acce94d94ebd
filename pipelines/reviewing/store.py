"""Reviews are data: reviewer labels appended to the lake's `reviews` table, and the latest label per sentence.

    con = connect_lake(lake)
    rows = review_rows(con, [Label("r-1", 2, "contradicted", "ana")], source="cli")   # ReviewInputError if bad
    append_reviews(lake, rows)              # one file, whole; their windows' agreement metrics computed again
    con.sql(LATEST_REVIEWS_SQL)                                                          # one row per sentence

Every label is checked against the lake before anything is written: the response must exist, the sentence
must be one of its sentences, the label one of the four verdicts, the reviewer named. A submission (one
sentence from `review label`, a whole file from `review import`, a page from the app) is one Parquet file
published whole (`transforms.io.lake.writer.write_table`), so it is never half-written. Nothing is overwritten:
a later label of the same sentence supersedes the earlier one in `LATEST_REVIEWS_SQL` (the `reviews_latest`
view), and both rows stay. Each row keeps the verifier's verdict, confidence, version and calibration as they
stood when the label was given, so agreement can be measured against the verifier the reviewer saw.
Once the file is published, the window metrics of the labelled responses' windows are computed again
(`pipelines.runner.window_metrics.recompute_windows_of`), so a correction counts in `review_agreement` and in
the next drift check at once, not after the next `groundwatch metrics`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from pipelines.runner.window_metrics import recompute_windows_of
from schemas import AttributionVerdict, ReviewRow
from transforms.io.lake.reader import in_hours_sql
from transforms.io.lake.writer import write_table

__all__ = [
    "LABELS",
    "LATEST_REVIEWS_SQL",
    "Label",
    "ReviewInputError",
    "append_reviews",
    "create_latest_view",
    "review_rows",
]

LABELS: tuple[str, ...] = tuple(v.value for v in AttributionVerdict)
"""The four labels a reviewer can give: the verifier's own verdicts."""

LATEST_REVIEWS_SQL = """
SELECT * FROM reviews
QUALIFY row_number() OVER (PARTITION BY response_id, sentence_index ORDER BY reviewed_at DESC, review_id DESC) = 1
"""
"""The latest label of each reviewed sentence; earlier ones stay in `reviews`."""

_SENTENCES_OF = """
SELECT s.response_id, s.sentence_index, s.attribution_verdict, s.confidence,
       r.verifier_version, r.calibration_sha256, r.tenant, r.risk_level, r.event_time
FROM sentences s JOIN responses r USING (response_id)
WHERE s.response_id IN (SELECT unnest(?)){in_hours}
"""


class ReviewInputError(ValueError):
    """A label that cannot be recorded: an unknown response or sentence, an unknown label, no reviewer."""


@dataclass(frozen=True)
class Label:
    """One reviewer's label for one sentence, as given (checked by `review_rows`)."""

    response_id: str
    sentence_index: int
    label: str
    reviewer: str
    note: str = ""


def create_latest_view(con: duckdb.DuckDBPyConnection) -> None:
    """Add the `reviews_latest` view (needs the lake's `reviews` view on `con`)."""
    con.execute(f"CREATE OR REPLACE VIEW reviews_latest AS {LATEST_REVIEWS_SQL}")


def _check(label: Label) -> None:
    if label.label not in LABELS:
        raise ReviewInputError(f"unknown label {label.label!r}; choose one of: {', '.join(LABELS)}")
    if not label.reviewer.strip():
        raise ReviewInputError("no reviewer: give --reviewer NAME")
    if not label.response_id:
        raise ReviewInputError("no response id")


def review_rows(
    con: duckdb.DuckDBPyConnection,
    labels: Sequence[Label],
    *,
    source: str,
    now: datetime | None = None,
    where: Sequence[str] | None = None,
    near: datetime | None = None,
) -> list[ReviewRow]:
    """The `reviews` rows of `labels`, each with the verifier's verdict as the lake holds it now. `near`, the
    responses' event time when known (the app's page carries it), reads that hour's files first.

    Raises `ReviewInputError` on the first bad label, prefixed with `where[i]` (e.g. "line 3") when given."""
    now = now or datetime.now(UTC)
    for i, label in enumerate(labels):
        try:
            _check(label)
        except ReviewInputError as e:
            raise ReviewInputError(f"{where[i]}: {e}" if where else str(e)) from None
    ids = sorted({label.response_id for label in labels})
    found = _sentences_of(con, ids, near) if near is not None else {}
    if {response_id for response_id, _ in found} != set(ids):  # no hint, or a wrong one: read every hour
        found = _sentences_of(con, ids, None)
    counts: dict[str, int] = {}
    for response_id, index in found:
        counts[response_id] = max(counts.get(response_id, 0), index + 1)
    rows = []
    for i, label in enumerate(labels):
        prefix = f"{where[i]}: " if where else ""
        row = found.get((label.response_id, label.sentence_index))
        if label.response_id not in counts:
            raise ReviewInputError(f"{prefix}unknown response {label.response_id!r}: not in the lake's responses")
        if row is None:
            raise ReviewInputError(
                f"{prefix}response {label.response_id!r} has no sentence {label.sentence_index} "
                f"(its sentences are 0..{counts[label.response_id] - 1})"
            )
        rows.append(_row(label, row, source=source, now=now))
    return rows


def _sentences_of(con: duckdb.DuckDBPyConnection, ids: list[str], near: datetime | None) -> dict[tuple, tuple]:
    """The sentences of the responses `ids` with what a review row keeps, by (response id, sentence index);
    with `near`, from the files of its hour only."""
    in_hours, params = "", []
    if near is not None:
        in_sentences, hour = in_hours_sql([near], "s")
        in_responses, _ = in_hours_sql([near], "r")
        in_hours, params = f" AND {in_sentences} AND {in_responses}", [*hour, *hour]
    rows = con.execute(_SENTENCES_OF.format(in_hours=in_hours), [ids, *params]).fetchall()
    return {(row[0], row[1]): row for row in rows}


def _row(label: Label, found: tuple, *, source: str, now: datetime) -> ReviewRow:
    _, _, verdict, confidence, version, calibration, tenant, risk, event_time = found
    return ReviewRow(
        review_id=uuid.uuid4().hex,
        response_id=label.response_id,
        sentence_index=label.sentence_index,
        label=AttributionVerdict(label.label),
        verifier_verdict=AttributionVerdict(verdict),
        verifier_confidence=confidence,
        verifier_version=version,
        calibration_sha256=calibration,
        reviewer=label.reviewer.strip(),
        note=label.note,
        reviewed_at=now,
        tenant=tenant,
        risk_level=risk,
        event_time=event_time,
        source=source,
    )


def append_reviews(lake: str, rows: Iterable[ReviewRow]) -> list[str]:
    """Append rows to `reviews` (one file per partition, published whole, named after the first review id),
    then compute again the window metrics of the windows the reviewed responses lie in."""
    rows = list(rows)
    if not rows:
        return []
    written = write_table(lake, "reviews", rows, name=f"reviews-{rows[0].review_id}")
    recompute_windows_of(lake, {row.response_id: row.event_time for row in rows})
    return written
