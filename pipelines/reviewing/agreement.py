"""Labels come back: agreement between the verifier and its reviewers, and a calibration fitted on the reviews.

    rows = reviewed_sentences(con, tenant="acme")       # the latest label of each reviewed claim sentence
    agreement_rows(rows)                                 # per verifier version and per tenant: n, kappa, bal. acc.
    fit_from_reviews(rows, target=0.9, folds=5)          # (Calibration, report), folds grouped by response

Agreement is reported for all reviews, per verifier version, per tenant, and apart for the random review sample
(`route=sample`: responses nothing but `--review-sample` sent, the one unbiased estimate; reviewers otherwise
see only the cases routing thought hard) and for the routed rest (`route=routed`).
Agreement is Cohen's kappa over the four verdicts (the reviewer's label against the verifier's verdict at the
time) and binary balanced accuracy of `fully_grounded` against the rest. The fit maps the verifier's grounded
probability (`schemas.grounded_probability` of the verdict and confidence the review row stored) to the
probability that a reviewer labels the sentence fully grounded, cross-validated with every response's sentences
in one fold, through the same fitting code as `calibrate --golden --fit`. The scores are the confidences the
lake holds: calibrated ones when the audit ran with `--calibration`, so fit on reviews of uncalibrated audits
(or read the new file as a correction of the old).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import duckdb

from pipelines.reviewing.store import LATEST_REVIEWS_SQL
from schemas import grounded_probability
from transforms.evaluation.fit_calibration import STAGES_OF, fit_calibration
from transforms.evaluation.metrics import balanced_accuracy, cohen_kappa
from transforms.verify.calibration import Calibration

__all__ = ["SAMPLED_SQL", "agreement", "agreement_rows", "fit_from_reviews", "has_column", "reviewed_sentences"]

_REVIEWED_SQL = """
WITH latest AS ({latest})
SELECT l.response_id, l.sentence_index, l.tenant, l.verifier_version, l.verifier_verdict, l.verifier_confidence,
       l.label, l.source, coalesce(r.verifier, '') AS verifier, {sampled} AS sampled
FROM latest l LEFT JOIN responses r USING (response_id)
WHERE $tenant IS NULL OR l.tenant = $tenant
ORDER BY l.response_id, l.sentence_index
"""
SAMPLED_SQL = "coalesce(list_contains(r.review_routes, 'sample'), false)"
"""Whether the response `r` is in the random review sample (lakes written before the column have none)."""


def has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether a lake view has a column (lakes written before it was added do not)."""
    return any(row[0] == column for row in con.execute(f"DESCRIBE {table}").fetchall())


def reviewed_sentences(con: duckdb.DuckDBPyConnection, *, tenant: str | None = None) -> list[dict[str, Any]]:
    """The latest label of each reviewed sentence with the verifier's verdict at the time (one tenant's, or all),
    and whether its response is in the random review sample."""
    sampled = SAMPLED_SQL if has_column(con, "responses", "review_routes") else "false"
    cursor = con.execute(_REVIEWED_SQL.format(latest=LATEST_REVIEWS_SQL, sampled=sampled), {"tenant": tenant})
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]


def agreement(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """n, Cohen's kappa (four verdicts) and binary balanced accuracy (fully_grounded or not) of some rows."""
    labels = [r["label"] for r in rows]
    verdicts = [r["verifier_verdict"] for r in rows]
    return {
        "n": len(rows),
        "kappa": cohen_kappa(labels, verdicts),
        "balanced_accuracy": balanced_accuracy(
            [label == "fully_grounded" for label in labels], [v == "fully_grounded" for v in verdicts]
        ),
        "agreement": sum(a == b for a, b in zip(labels, verdicts, strict=True)) / len(rows) if rows else None,
    }


def agreement_rows(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """`(dimension, value, figures)`: all rows, then per verifier version, per tenant, and per route (`sample`:
    the random review sample, `routed`: the rest; only when the sample has reviews)."""
    out: list[tuple[str, str, dict[str, Any]]] = [("all", "", agreement(rows))]
    for dimension, column in (("verifier_version", "verifier_version"), ("tenant", "tenant")):
        groups: dict[str, list] = defaultdict(list)
        for r in rows:
            groups[str(r[column])].append(r)
        out.extend((dimension, value, agreement(members)) for value, members in sorted(groups.items()))
    sample = [r for r in rows if r.get("sampled")]
    if sample:
        out.append(("route", "sample", agreement(sample)))
        out.append(("route", "routed", agreement([r for r in rows if not r.get("sampled")])))
    return out


def fit_from_reviews(
    rows: Sequence[dict[str, Any]], *, target: float, folds: int, map_kind: str, fitted_on: dict
) -> tuple[Calibration, dict]:
    """The calibration file of the reviewed verifier, fitted on the reviews; ValueError when they cannot carry
    one (one verifier only; at least two responses, and a label of each class)."""
    verifiers = {r["verifier"] for r in rows}
    if len(verifiers) != 1:
        raise ValueError(
            f"the reviews span verifiers {sorted(verifiers)}: fit one at a time (--tenant, or a lake each)"
        )
    (verifier,) = verifiers
    if verifier not in STAGES_OF:
        raise ValueError(f"verifier {verifier!r} has no stage to calibrate ({', '.join(sorted(STAGES_OF))})")
    positive = [r["label"] == "fully_grounded" for r in rows]
    groups = [r["response_id"] for r in rows]
    if len(set(groups)) < 2 or len(set(positive)) < 2:
        raise ValueError("fitting needs reviews of at least two responses, with labels on both sides of fully_grounded")
    scores = [grounded_probability(r["verifier_verdict"], r["verifier_confidence"]) for r in rows]
    stage = STAGES_OF[verifier][0]
    return fit_calibration(
        {stage: scores},
        positive,
        [r["tenant"] for r in rows],
        groups,
        stages=(stage,),
        target=target,
        folds=min(folds, len(set(groups))),
        verdicts={stage: [r["verifier_verdict"] for r in rows]},
        map_kind=map_kind,
        fitted_on={**fitted_on, "verifier": verifier},
    )
