"""Fit a calibration file from labelled data, and measure it honestly with grouped cross-validation.

    groups = document_groups(records)                      # no evidence passage in two groups
    fit = MAPS["logistic"]                                 # or "isotonic"
    stage, oof = fit_stage(scores, positive, groups, target=0.9, folds=5, verdicts=verdicts, fit=fit)
    cv = cross_validate(scores, positive, groups, target=0.9, folds=5, verdicts=verdicts, fit=fit)
    figures = stage_figures(scores, positive, sources, cv)  # ECE, reliability, risk-coverage, per source

Two map families (`MAPS`, in `transforms.evaluation.maps`), each fitted on the training part only:

- `isotonic`: pool-adjacent-violators from a stage's raw grounded probability to the observed rate of "fully
  grounded". It follows any monotone reliability curve, but its flat steps give many sentences the same
  probability, and a ranking cannot order a tie: a 30% cut inside one is arbitrary.
- `logistic` (the default of `groundwatch calibrate`): a `VerdictModel` (`transforms.evaluation.logistic`),
  a smooth curve of the logit of the score with a slope for "fully grounded" verdicts and one for the rest and
  an offset per verdict class, all read from the verdict. It keeps the isotonic knots for callers that have
  only a score. Held out, it ranks the heuristic's sentences better (risk-coverage) and is as well calibrated.

The risk-coverage curve ranks sentences by max(p, 1 - p) of the held-out calibrated probability: the
probability that the binary call (p >= 0.5) is right, if p is calibrated.

The escalation band is chosen on out-of-fold probabilities (each record's probability from a map fitted without
its fold), not on the map's in-sample output, which is fitted to those very labels and looks surer than it is.
The figures `cross_validate` gives are those of the whole procedure (map and band) fitted on k-1 folds and
applied to the held-out fold, pooled over the folds; the band inside each outer fold comes from an inner
grouped cross-validation of its training part.

Folds are grouped by source document: records whose evidence shares a passage (same text up to whitespace)
are one group, transitively, so no passage is seen in training and in the held-out fold (FaithBench and
SummEdits have several sentences per source document; Factcheck-GPT claims of one response share passages).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from transforms.evaluation.maps import MAP_NAMES, MAPS, MapFit, fit_isotonic, fit_logistic_map, isotonic_fit
from transforms.evaluation.metrics import (
    balanced_accuracy,
    expected_calibration_error,
    reliability_bins,
    risk_coverage,
)
from transforms.verify.calibration import Calibration, StageCalibration

STAGES_OF = {"heuristic": ("heuristic",), "model": ("model",), "cascade": ("heuristic", "model")}
"""The stages a calibration file fitted for a verifier holds, each scored by the verifier of the same name on
every record. The extension point for a new stage: add it here and register a verifier of that name. The last
stage of a cascade (the judge) decides whatever reaches it, so it needs no band and has no entry."""

__all__ = [
    "MAPS",
    "STAGES_OF",
    "CrossValidation",
    "choose_band",
    "cross_validate",
    "GROUPINGS",
    "document_groups",
    "record_groups",
    "source_groups",
    "fit_calibration",
    "fit_isotonic",
    "fit_logistic_map",
    "fit_stage",
    "grouped_folds",
    "isotonic_fit",
    "out_of_fold",
    "stage_figures",
]


def _apply(stage: StageCalibration, scores, verdicts, indexes) -> dict[int, float]:
    return {i: stage.probability_of(scores[i], verdicts[i] if verdicts else "") for i in indexes}


def _normalized(text: str) -> str:
    return " ".join(text.split())


def document_groups(records: Sequence) -> list[str]:
    """A group key per record (the id of its group's first record): records sharing an evidence passage,
    directly or through others, share a group. Records are anything with `.id` and `.evidence` passages."""
    parent = list(range(len(records)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, rec in enumerate(records):
        for passage in rec.evidence:
            key = hashlib.sha256(_normalized(passage.content).encode("utf-8")).hexdigest()
            if key in owner:
                a, b = root(i), root(owner[key])
                parent[max(a, b)] = min(a, b)  # the earlier record stays the root: keys follow file order
            else:
                owner[key] = i
    return [str(records[root(i)].id) for i in range(len(records))]


def source_groups(records: Sequence) -> list[str]:
    """A group key per record: its source (`.source`), and its sub-dataset when it has one
    (`AttributionBench/LFQA`), so each fold of a cross-validation over these groups holds out one source."""
    return [f"{r.source}/{r.sub_dataset}" if getattr(r, "sub_dataset", "") else str(r.source) for r in records]


GROUPINGS = {"document": document_groups, "source": source_groups}
"""How cross-validation groups records: by shared evidence passage, or by source (leave-one-source-out)."""


_GROUPING_NOTES = {
    "document": "records sharing an evidence passage (whitespace-normalized) are one group, transitively",
    "source": "one group per source (sub-dataset where given): leave-one-source-out",
}


def record_groups(records: Sequence, group_by: str) -> tuple[list[str], int | None]:
    """The group keys of `records` under `group_by` (a key of `GROUPINGS`), and the number of folds that
    grouping implies (one per source for `source`; None: the caller's choice for `document`)."""
    if group_by not in GROUPINGS:
        raise ValueError(f"unknown grouping {group_by!r} (known: {', '.join(sorted(GROUPINGS))})")
    groups = GROUPINGS[group_by](records)
    return groups, len(set(groups)) if group_by == "source" else None


def grouped_folds(groups: Sequence[str], folds: int) -> list[int]:
    """A fold index per record, every group in one fold: the largest groups first, each to the fold with the
    fewest records so far (ties by a hash of the group key), so folds are even and the split is deterministic."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    sizes: dict[str, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    if len(sizes) < folds:
        raise ValueError(f"{len(sizes)} document groups cannot fill {folds} folds")
    load = [0] * folds
    fold_of: dict[str, int] = {}
    for g in sorted(sizes, key=lambda g: (-sizes[g], hashlib.sha256(g.encode("utf-8")).hexdigest())):
        fold = min(range(folds), key=lambda f: (load[f], f))
        fold_of[g] = fold
        load[fold] += sizes[g]
    return [fold_of[g] for g in groups]


def choose_band(probabilities: Sequence[float], positive: Sequence[bool], target: float) -> tuple[float, float] | None:
    """The band [low, high] of calibrated probability to escalate so that the sentences outside it reach
    `target` binary accuracy (call: p >= 0.5), escalating as few as possible (then the narrowest band).

    None when every sentence already reaches the target; (0, 1) when no band does (escalate everything).
    Band edges lie midway between the probabilities seen, so an unseen probability goes where its neighbours do.
    """
    correct = [(p >= 0.5) == y for p, y in zip(probabilities, positive, strict=True)]
    if not correct or sum(correct) >= target * len(correct):
        return None
    values = sorted(set(probabilities))
    n_at = {v: 0 for v in values}
    ok_at = {v: 0 for v in values}
    for p, c in zip(probabilities, correct, strict=True):
        n_at[p] += 1
        ok_at[p] += c
    below_n, below_ok = [0], [0]  # counts strictly below values[i]
    for v in values:
        below_n.append(below_n[-1] + n_at[v])
        below_ok.append(below_ok[-1] + ok_at[v])
    total_n, total_ok = below_n[-1], below_ok[-1]
    best: tuple[int, float, int, int] | None = None
    for i in range(len(values)):
        for j in range(i, len(values)):
            decided = below_n[i] + total_n - below_n[j + 1]
            right = below_ok[i] + total_ok - below_ok[j + 1]
            if decided and right >= target * decided:
                key = (decided, -(values[j] - values[i]), i, j)
                if best is None or key[:2] > best[:2]:
                    best = key
    if best is None:
        return (0.0, 1.0)
    _, _, i, j = best
    low = 0.0 if i == 0 else round((values[i - 1] + values[i]) / 2, 6)
    high = 1.0 if j == len(values) - 1 else round((values[j] + values[j + 1]) / 2, 6)
    return (low, high)


def _subset(values: Sequence, indexes: Sequence[int]) -> list:
    return [values[i] for i in indexes]


def _fit_on(fit: MapFit, scores, verdicts, positive, train: Sequence[int]) -> StageCalibration:
    return fit(_subset(scores, train), None if verdicts is None else _subset(verdicts, train), _subset(positive, train))


def out_of_fold(
    scores: Sequence[float],
    positive: Sequence[bool],
    groups: Sequence[str],
    folds: int,
    *,
    verdicts: Sequence[str] | None = None,
    fit: MapFit = fit_isotonic,
) -> tuple[list[float], list[int]]:
    """Each record's calibrated probability from a map fitted on the other folds, and its fold.
    Uses min(folds, number of groups) folds."""
    k = min(folds, len(set(groups)))
    fold = grouped_folds(groups, k)
    probabilities = [0.0] * len(scores)
    for f in range(k):
        train = [i for i in range(len(scores)) if fold[i] != f]
        stage = _fit_on(fit, scores, verdicts, positive, train)
        for i, p in _apply(stage, scores, verdicts, [i for i in range(len(scores)) if fold[i] == f]).items():
            probabilities[i] = p
    return probabilities, fold


def fit_stage(
    scores: Sequence[float],
    positive: Sequence[bool],
    groups: Sequence[str],
    *,
    target: float,
    folds: int,
    verdicts: Sequence[str] | None = None,
    fit: MapFit = fit_isotonic,
) -> tuple[StageCalibration, list[float]]:
    """A stage's calibration fitted on all the records given: the map, and the band chosen on their
    out-of-fold probabilities (in-sample ones when there are fewer than two groups). Returns it with them."""
    every = range(len(scores))
    stage = _fit_on(fit, scores, verdicts, positive, every)
    if len(set(groups)) >= 2:
        probabilities, _ = out_of_fold(scores, positive, groups, folds, verdicts=verdicts, fit=fit)
    else:
        probabilities = list(_apply(stage, scores, verdicts, every).values())
    return replace(stage, escalate=choose_band(probabilities, positive, target)), probabilities


@dataclass(frozen=True)
class CrossValidation:
    """Held-out results of the whole fitting procedure, one entry per record, pooled over the folds."""

    folds: int
    fold: tuple[int, ...]
    probability: tuple[float, ...]
    """The record's calibrated probability from the map fitted without its fold."""
    escalated: tuple[bool, ...]
    """Whether the band fitted without its fold sends the record to the next stage."""
    bands: tuple[tuple[float, float] | None, ...]
    """The band each fold's training part chose."""


def cross_validate(
    scores: Sequence[float],
    positive: Sequence[bool],
    groups: Sequence[str],
    *,
    target: float,
    folds: int,
    verdicts: Sequence[str] | None = None,
    fit: MapFit = fit_isotonic,
) -> CrossValidation:
    """Fit map and band on k-1 folds (`fit_stage`, its band from an inner grouped CV), apply to the held-out
    fold; k = min(folds, number of groups), at least 2."""
    k = min(folds, len(set(groups)))
    fold = grouped_folds(groups, k)
    probability, escalated, bands = [0.0] * len(scores), [False] * len(scores), []
    for f in range(k):
        train = [i for i in range(len(scores)) if fold[i] != f]
        stage, _ = fit_stage(
            _subset(scores, train),
            _subset(positive, train),
            _subset(groups, train),
            target=target,
            folds=folds,
            verdicts=None if verdicts is None else _subset(verdicts, train),
            fit=fit,
        )
        bands.append(stage.escalate)
        for i, p in _apply(stage, scores, verdicts, [i for i in range(len(scores)) if fold[i] == f]).items():
            probability[i] = p
            escalated[i] = stage.escalates(p)
    return CrossValidation(k, tuple(fold), tuple(probability), tuple(escalated), tuple(bands))


def _slice_figures(scores, positive, probability, escalated) -> dict:
    raw_bins = reliability_bins(positive, scores)
    cal_bins = reliability_bins(positive, probability)
    # Equal calibrated probabilities are ordered by the raw score in the direction of the call.
    tiebreak = [s if p >= 0.5 else 1.0 - s for s, p in zip(scores, probability, strict=True)]
    decided = [i for i, e in enumerate(escalated) if not e]
    gold = [positive[i] for i in decided]
    called = [probability[i] >= 0.5 for i in decided]
    return {
        "n": len(scores),
        "ece_raw": expected_calibration_error(raw_bins),
        "ece_calibrated": expected_calibration_error(cal_bins),
        "reliability_raw": raw_bins,
        "reliability_calibrated": cal_bins,
        "risk_coverage_raw": risk_coverage(positive, scores),
        "risk_coverage_calibrated": risk_coverage(positive, probability, tiebreak=tiebreak),
        "decided": len(decided),
        "escalated_share": (len(scores) - len(decided)) / len(scores) if scores else None,
        "decided_accuracy": sum(g == c for g, c in zip(gold, called, strict=True)) / len(gold) if gold else None,
        "decided_balanced_accuracy": balanced_accuracy(gold, called) if gold else None,
    }


def stage_figures(
    scores: Sequence[float], positive: Sequence[bool], sources: Sequence[str], cv: CrossValidation
) -> dict:
    """ECE before and after (held-out), the reliability and risk-coverage tables, the share escalated and the
    accuracy of the decided part, overall and per source (one map for all sources, sliced afterwards)."""

    def block(indexes: list[int]) -> dict:
        return _slice_figures(
            _subset(scores, indexes),
            _subset(positive, indexes),
            _subset(cv.probability, indexes),
            _subset(cv.escalated, indexes),
        )

    every = list(range(len(scores)))
    per_source = {s: [i for i in every if sources[i] == s] for s in sorted(set(sources))}
    return {
        "folds": cv.folds,
        "fold_bands": [list(b) if b else None for b in cv.bands],
        "overall": block(every),
        "per_source": {s: block(idx) for s, idx in per_source.items()},
    }


def fit_calibration(
    scores: Mapping[str, Sequence[float]],
    positive: Sequence[bool],
    sources: Sequence[str],
    groups: Sequence[str],
    *,
    stages: Sequence[str],
    target: float,
    folds: int,
    fitted_on: dict,
    verdicts: Mapping[str, Sequence[str]] | None = None,
    map_kind: str = "isotonic",
    grouping: str = "document",
) -> tuple[Calibration, dict]:
    """Per named score (a verifier's, a stage's; `verdicts` gives each one's verdict classes): its map and band
    fitted on all records and its cross-validated figures; and the calibration file of the `stages` among them,
    its `fitted_on` saying on what. `map_kind`: a key of `MAPS`."""
    if map_kind not in MAPS:
        raise ValueError(f"unknown calibration map {map_kind!r} (known: {', '.join(sorted(MAPS))})")
    fit = MAPS[map_kind]
    report: dict[str, dict[str, Any]] = {}
    fitted: dict[str, StageCalibration] = {}
    for name, values in scores.items():
        classes = None if verdicts is None else verdicts.get(name)
        stage, _ = fit_stage(values, positive, groups, target=target, folds=folds, verdicts=classes, fit=fit)
        cv = cross_validate(values, positive, groups, target=target, folds=folds, verdicts=classes, fit=fit)
        figures = stage_figures(values, positive, sources, cv)
        report[name] = {"band": stage.escalate, "map": map_kind, "grouping": grouping, "figures": figures}
        if name in stages:
            fitted[name] = stage
    keys = ("ece_raw", "ece_calibrated", "escalated_share", "decided_accuracy", "decided_balanced_accuracy")
    top = {"accuracy_top_30": 2, "accuracy_top_50": 4}  # rows of the risk-coverage table (COVERAGES)

    def at(name: str, row: int):
        return report[name]["figures"]["overall"]["risk_coverage_calibrated"][row]["binary_accuracy"]

    info = {
        **fitted_on,
        "records": len(positive),
        "sources": {s: list(sources).count(s) for s in sorted(set(sources))},
        "document_groups": len(set(groups)),
        "folds": min(folds, len(set(groups))),
        "grouping": _GROUPING_NOTES[grouping],
        "map": MAP_NAMES[map_kind],
        "cross_validated": {
            name: {
                "band": report[name]["band"],
                **{k: report[name]["figures"]["overall"][k] for k in keys},
                **{k: at(name, row) for k, row in top.items()},
            }
            for name in fitted
        },
    }
    return Calibration(fitted, target, info), report
