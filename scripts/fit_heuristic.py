#!/usr/bin/env python3
"""Re-derive the heuristic verifier's labelled-data settings with cross-validation grouped by source document.

    python scripts/fit_heuristic.py --golden FILE [--group-by source|document] [--folds 5] [--floor 0.6]
        [--out cues.json] [--no-search] [--cues-only]

Every setting of `HeuristicConfig` that was chosen by looking at labelled data is searched again here, and every
figure is given twice: cross-validated (the choice made on k-1 folds, applied to the held-out fold, pooled over
the folds) and in-sample (chosen and scored on all records, only for contrast: it is what tuning to the labelled
set promises and unseen data does not keep). Folds come from `transforms.evaluation.fit_calibration`: with
`--group-by document` records whose evidence shares a passage are one group, and a group never spans two folds;
with `--group-by source` each source (sub-dataset where the record names one) is a fold of its own, which is what
predicts a new domain.

Four parts:
1. the config given (`--config`, default: the shipped one) scored on all records; its values were chosen on
   this set by hand, so these figures are in-sample whatever the folds;
2. per contradiction cue, how often a sentence it calls contradicted is labelled contradicted (strict) or may
   be (compatible: `contradicted` in its acceptable labels), per held-out fold, on the sources whose labels
   have a contradicted class (`--all-sources`: on all); a cue under `--floor` in compatible precision is
   switched to `doubt` (it lowers confidence instead of asserting), and the rule is cross-validated: decided on
   each training part, applied to its held-out fold;
3. per setting (the thresholds, a few weights, each cue's mode): its value chosen by a one-dimensional search,
   with the cross-validated figure beside the in-sample one;
4. a coordinate search over all of them at once, nested in the folds (`--no-search` skips it).

The objective is the mean of binary balanced accuracy (fully grounded or not), ROC-AUC of the grounded probability and
compatible accuracy (the 4-way verdict is one of the record's acceptable labels). A value replaces the current
one only when it gains more than `--min-gain` (default 0.005): with a few hundred records smaller gains are noise.
`--out` writes the cue modes the floor rule picks on all records, as a config JSON (`HeuristicConfig`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from transforms.evaluation.fit_calibration import grouped_folds, record_groups  # noqa: E402
from transforms.evaluation.golden import load_golden  # noqa: E402
from transforms.evaluation.metrics import balanced_accuracy, roc_auc  # noqa: E402
from transforms.verify.heuristic.alignment import index_evidence  # noqa: E402
from transforms.verify.heuristic.config import CUES, DEFAULT_CONFIG, HeuristicConfig  # noqa: E402
from transforms.verify.heuristic.verifier import analysed_verdict  # noqa: E402

GRID: dict[str, tuple] = {
    "midpoint": (1.06, 1.16, 1.26, 1.36, 1.46),
    "ungrounded_coverage": (0.2, 0.3, 0.4, 0.5, 0.6),
    "contradicted_cap": (0.3, 0.4, 0.45),
    "w_novel": (1.5, 2.5, 3.5),
    "w_bigram": (0.35, 0.7, 1.0),
    "slope": (3.0, 4.0, 5.0),
    "anchor_alignment": (0.15, 0.25, 0.35, 0.5),
    "quantity_alignment": (0.4, 0.5, 0.6),
    "negation_alignment": (0.5, 0.6, 0.7),
    "antonym_alignment": (0.4, 0.5, 0.6),
    "substitution_alignment": (0.5, 0.6, 0.7),
    "hedge_alignment": (0.3, 0.4, 0.5),
    "slot_alignment": (0.4, 0.5, 0.6),
    "doubt_shrink": (0.25, 0.5, 0.75, 0.9),
    "doubt_penalizes": (True, False),
    **{f"cue:{cue}": ("assert", "doubt") for cue in CUES},
}
"""The settings searched and the values tried. The support threshold itself stays 0.5: the caps sit just under
it, so the logistic's midpoint is what moves the decision."""


@dataclass(frozen=True)
class Outcome:
    """What the heuristic said about one record under one config."""

    label: str
    score: float
    cue: str
    """The cue that made it contradicted ('' when it is not)."""
    fired: tuple[str, ...] = ()
    """Every cue that fired, asserting or doubting."""


class Runner:
    """Scores configs on the records, each config once (the folds and searches reuse the outcomes)."""

    def __init__(self, records):
        self.records = records
        self.indexes = [index_evidence([(p.doc_id, p.content) for p in r.evidence]) for r in records]
        self._cache: dict[str, list[Outcome]] = {}
        self.seconds = 0.0

    def run(self, config: HeuristicConfig) -> list[Outcome]:
        key = config.model_dump_json()
        if key not in self._cache:
            started = time.process_time()
            out = []
            for r, ev in zip(self.records, self.indexes, strict=True):
                verdict, a = analysed_verdict(0, r.answer, ev, config)
                label = verdict.attribution_verdict.value
                cue = a.contradictions[0].cue if label == "contradicted" and a.contradictions else ""
                fired = tuple(dict.fromkeys(x.cue for x in a.contradictions + a.doubts))
                out.append(Outcome(label, verdict.grounded_probability, cue, fired))
            self._cache[key] = out
            self.seconds += time.process_time() - started
        return self._cache[key]

    @property
    def configs(self) -> int:
        return len(self._cache)


def set_value(config: HeuristicConfig, name: str, value) -> HeuristicConfig:
    """A copy of the config with one setting of `GRID` changed."""
    if name.startswith("cue:"):
        return config.with_cue_mode(name[4:], value)
    return config.model_copy(update={name: value})


def get_value(config: HeuristicConfig, name: str):
    return config.cues.of(name[4:]) if name.startswith("cue:") else getattr(config, name)


def figures(records, outcomes: Sequence[Outcome], idx: Sequence[int]) -> dict:
    """Binary balanced accuracy, ROC-AUC, compatible accuracy, share of fully grounded called contradicted,
    recall of contradicted."""
    gold = [records[i].label == "fully_grounded" for i in idx]
    pred = [outcomes[i].label == "fully_grounded" for i in idx]
    grounded = [i for i in idx if records[i].label == "fully_grounded"]
    contradicted = [i for i in idx if records[i].label == "contradicted"]

    def called_contradicted(part):
        return sum(outcomes[i].label == "contradicted" for i in part) / len(part) if part else None

    return {
        "n": len(idx),
        "binBA": balanced_accuracy(gold, pred),
        "AUC": roc_auc(gold, [outcomes[i].score for i in idx]),
        "compat": sum(outcomes[i].label in records[i].acceptable for i in idx) / len(idx) if idx else None,
        "fg_contra": called_contradicted(grounded),
        "c_recall": called_contradicted(contradicted),
    }


def objective(f: dict) -> float:
    parts = [f[k] for k in ("binBA", "AUC", "compat") if f[k] is not None]
    return sum(parts) / len(parts) if parts else 0.0


def labelling_sources(records, idx) -> frozenset[str]:
    """Sources with a record labelled contradicted among `idx`: the others' label schemes cannot say it (WiCE has
    no contradicted class, AttributionBench only attributable or not), so a cue firing there always looks wrong."""
    return frozenset(records[i].source for i in idx if records[i].label == "contradicted")


def cue_precision(records, outcomes, idx, sources=None) -> dict[str, tuple[int, int, int, int]]:
    """Per cue: sentences it made contradicted, of them labelled contradicted, compatible with it, and labelled
    anything but fully grounded; only records of `sources` when given."""
    out: dict[str, list[int]] = {}
    for i in idx:
        if outcomes[i].label == "contradicted" and (sources is None or records[i].source in sources):
            row = out.setdefault(outcomes[i].cue, [0, 0, 0, 0])
            row[0] += 1
            row[1] += records[i].label == "contradicted"
            row[2] += "contradicted" in records[i].acceptable
            row[3] += records[i].label != "fully_grounded"
    return {cue: tuple(row) for cue, row in out.items()}


def cue_firings(records, outcomes, idx) -> dict[str, tuple[int, int, int]]:
    """Per cue, whatever its mode: sentences it fired on, of them not labelled fully grounded, and of them with
    `contradicted` among their acceptable labels. A doubting cue is judged here as if it asserted."""
    out: dict[str, list[int]] = {}
    for i in idx:
        for cue in outcomes[i].fired:
            row = out.setdefault(cue, [0, 0, 0])
            row[0] += 1
            row[1] += records[i].label != "fully_grounded"
            row[2] += "contradicted" in records[i].acceptable
    return {cue: tuple(row) for cue, row in out.items()}


def print_firings(records, outcomes, fold, k: int, config: HeuristicConfig) -> None:
    """Every cue that fired, asserting or doubting, on all records: how often it was right, per held-out fold."""
    every = range(len(records))
    print("\nevery cue that fired (asserting or doubting), all sources: share not fully grounded / compatible")
    print(f"{'cue':20} {'mode':>6} {'n':>4} {'not fg':>7} {'compat':>7}   not fg per held-out fold")
    table = cue_firings(records, outcomes, every)
    for cue in sorted(table, key=lambda c: -table[c][0]):
        n, not_grounded, compatible = table[cue]
        per_fold = []
        for f in range(k):
            row = cue_firings(records, outcomes, [i for i in every if fold[i] == f]).get(cue)
            per_fold.append(f"{row[1] / row[0]:.2f}/{row[0]}" if row else "   -")
        print(
            f"{cue:20} {config.cues.of(cue):>6} {n:>4} {not_grounded / n:>7.3f} {compatible / n:>7.3f}   "
            f"{' '.join(per_fold)}"
        )
    silent = [cue for cue in CUES if cue not in table and config.cues.of(cue) != "off"]
    print(f"never fired: {', '.join(silent) or '-'}")


def floor_rule(runner, config, idx, floor: float, all_sources: bool = False) -> HeuristicConfig:
    """The config with every asserting cue whose compatible precision on `idx` (on the sources that label
    contradiction, unless `all_sources`) is under `floor` set to doubt."""
    outcomes = runner.run(config)
    sources = None if all_sources else labelling_sources(runner.records, idx)
    for cue, (n, _, compatible, _) in cue_precision(runner.records, outcomes, idx, sources).items():
        if cue and config.asserts(cue) and compatible < floor * n:
            config = config.with_cue_mode(cue, "doubt")
    return config


def search(runner, config, idx, names, min_gain: float, passes: int = 2) -> HeuristicConfig:
    """Coordinate search: each setting in turn to its best value on `idx`, kept only for a gain over `min_gain`."""
    best = objective(figures(runner.records, runner.run(config), idx))
    for _ in range(passes):
        moved = False
        for name in names:
            for value in GRID[name]:
                if value == get_value(config, name):
                    continue
                candidate = set_value(config, name, value)
                score = objective(figures(runner.records, runner.run(candidate), idx))
                if score > best + min_gain:
                    config, best, moved = candidate, score, True
        if not moved:
            break
    return config


def cross_validated(runner, fold, choose) -> tuple[list[Outcome], list[HeuristicConfig]]:
    """Outcomes of each record under the config `choose(train indexes)` picked without its fold."""
    n = len(runner.records)
    pooled: list[Outcome | None] = [None] * n
    chosen = []
    for f in sorted(set(fold)):
        config = choose([i for i in range(n) if fold[i] != f])
        chosen.append(config)
        outcomes = runner.run(config)
        for i in range(n):
            if fold[i] == f:
                pooled[i] = outcomes[i]
    return pooled, chosen


def _fmt(x) -> str:
    return "    -" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def print_block(title: str, records, rows: dict[str, list[Outcome]]) -> None:
    """Figures per source, one column group per named outcome list."""
    print(f"\n{title}")
    sources = sorted({r.source for r in records})
    print(f"{'slice':18} {'n':>4}  " + "  ".join(f"{name:>38}" for name in rows))
    print(f"{'':18} {'':>4}  " + "  ".join(f"{'binBA    AUC compat fg->con c-rec':>38}" for _ in rows))
    for source in [None, *sources]:
        idx = [i for i, r in enumerate(records) if source is None or r.source == source]
        cells = []
        for outcomes in rows.values():
            f = figures(records, outcomes, idx)
            cells.append(
                f"{_fmt(f['binBA']):>7} {_fmt(f['AUC']):>6} {_fmt(f['compat']):>6} {_fmt(f['fg_contra']):>7} "
                f"{_fmt(f['c_recall']):>5}"
            )
        print(f"{source or 'overall':18} {len(idx):>4}  " + "  ".join(f"{c:>38}" for c in cells))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--golden", required=True, help="labelled golden JSONL file (format: docs/calibration.md)")
    parser.add_argument("--config", help="a HeuristicConfig JSON to start from (default: the shipped config)")
    parser.add_argument("--folds", type=int, default=5, help="folds with --group-by document (default 5)")
    parser.add_argument(
        "--group-by",
        choices=("source", "document"),
        default="document",
        help="source: one fold per source (leave-one-source-out; meta.sub_dataset is a source of its own); "
        "document: records sharing an evidence passage are one group (default)",
    )
    parser.add_argument("--floor", type=float, default=0.6, help="compatible precision a cue needs to assert")
    parser.add_argument(
        "--all-sources",
        action="store_true",
        help="measure cue precision on every source, also those whose labels have no contradicted class",
    )
    parser.add_argument("--min-gain", type=float, default=0.005, help="objective gain a search step needs")
    parser.add_argument("--no-search", action="store_true", help="skip the nested coordinate search (part 4)")
    parser.add_argument(
        "--cues-only", action="store_true", help="stop after the per-cue table and the floor rule (parts 1-2)"
    )
    parser.add_argument("--out", help="write the config with the floor rule's cue modes (all records) here")
    args = parser.parse_args(argv)

    records, rejected = load_golden(args.golden)
    if not records:
        parser.error(f"{args.golden}: no valid records ({len(rejected)} rejected lines)")
    start = DEFAULT_CONFIG
    if args.config:
        with open(args.config, encoding="utf-8") as handle:
            start = HeuristicConfig.model_validate_json(handle.read())
    groups, implied = record_groups(records, args.group_by)
    k = min(implied or args.folds, len(set(groups)))
    fold = grouped_folds(groups, k)
    if args.group_by == "source":
        held_out = {fold[i]: groups[i] for i in range(len(records))}
        print("held-out folds, in the order of the per-fold columns: " + ", ".join(held_out[f] for f in range(k)))
    runner = Runner(records)
    every = list(range(len(records)))
    print(
        f"{len(records)} records ({len(rejected)} rejected lines), {len(set(groups))} {args.group_by} groups, "
        f"{k} folds of {sorted(fold.count(f) for f in range(k))} records; objective mean(binBA, AUC, compat)"
    )
    base = runner.run(start)
    print_block(
        "1. THE CONFIG GIVEN, scored on all records (its values were chosen on this set: in-sample)",
        records,
        {"given": base},
    )

    print(f"\n2. CUES: sentences each cue makes contradicted, precision per held-out fold (floor {args.floor})")
    print(f"{'cue':20} {'n':>4} {'strict':>7} {'compat':>7} {'not fg':>7}   compat per held-out fold   decision")
    scheme = None if args.all_sources else labelling_sources(records, every)
    print(f"precision on: {'all sources' if scheme is None else ', '.join(sorted(scheme))}")
    overall = cue_precision(records, base, every, scheme)
    for cue in sorted(overall, key=lambda c: -overall[c][0]):
        n, strict, compatible, not_grounded = overall[cue]
        per_fold = []
        for f in range(k):
            row = cue_precision(records, base, [i for i in every if fold[i] == f], scheme).get(cue)
            per_fold.append(f"{row[2] / row[0]:.2f}/{row[0]}" if row else "   -")
        decisions = [
            "doubt"
            if cue
            and start.asserts(cue)
            and (r := cue_precision(records, base, t, scheme).get(cue))
            and r[2] < args.floor * r[0]
            else "assert"
            for t in ([i for i in every if fold[i] != f] for f in range(k))
        ]
        verdict = "doubt" if cue and start.asserts(cue) and compatible < args.floor * n else "assert"
        held = f"{decisions.count('doubt')}/{k} folds"
        print(
            f"{cue or '(none)':20} {n:>4} {strict / n:>7.3f} {compatible / n:>7.3f} {not_grounded / n:>7.3f}   "
            f"{' '.join(per_fold):26} {verdict:>7} ({held} doubt)"
        )
    print_firings(records, base, fold, k, start)
    in_sample_cfg = floor_rule(runner, start, every, args.floor, args.all_sources)
    cv_floor, _ = cross_validated(
        runner, fold, lambda train: floor_rule(runner, start, train, args.floor, args.all_sources)
    )
    print_block(
        "floor rule: cues under the floor lower confidence instead (CV: decided on each training part)",
        records,
        {"given": base, "floor, cross-validated": cv_floor, "floor, in-sample": runner.run(in_sample_cfg)},
    )

    if args.cues_only:
        return _finish(runner, in_sample_cfg, args.out)

    print("\n3. PER SETTING: one-dimensional search from the config given (CV: value chosen on each training part)")
    print(
        f"{'setting':28} {'given':>7} {'in-sample':>9} {'per fold':24} {'obj CV':>7} {'obj in':>7} "
        f"{'binBA CV':>8} {'binBA in':>8} {'AUC CV':>7} {'AUC in':>7}"
    )
    for name in GRID:

        def one(idx, name=name):
            return search(runner, start, idx, [name], args.min_gain, passes=1)

        chosen_all = one(every)
        pooled, chosen = cross_validated(runner, fold, one)
        f_cv, f_in = figures(records, pooled, every), figures(records, runner.run(chosen_all), every)
        per_fold = ",".join(str(get_value(c, name)) for c in chosen)
        print(
            f"{name:28} {get_value(start, name)!s:>7} {get_value(chosen_all, name)!s:>9} {per_fold:24} "
            f"{objective(f_cv):7.3f} {objective(f_in):7.3f} {_fmt(f_cv['binBA']):>8} {_fmt(f_in['binBA']):>8} "
            f"{_fmt(f_cv['AUC']):>7} {_fmt(f_in['AUC']):>7}"
        )

    if not args.no_search:
        names = list(GRID)
        chosen_all = search(runner, start, every, names, args.min_gain)
        pooled, chosen = cross_validated(runner, fold, lambda t: search(runner, start, t, names, args.min_gain))
        print_block(
            "4. COORDINATE SEARCH over every setting, nested in the folds",
            records,
            {"given": base, "search, cross-validated": pooled, "search, in-sample": runner.run(chosen_all)},
        )
        moved = {n: get_value(chosen_all, n) for n in names if get_value(chosen_all, n) != get_value(start, n)}
        print(f"in-sample choice: {moved or 'no change'}")
        for f, c in enumerate(chosen):
            moved = {n: get_value(c, n) for n in names if get_value(c, n) != get_value(start, n)}
            print(f"fold {f} choice: {moved or 'no change'}")

    return _finish(runner, in_sample_cfg, args.out)


def _finish(runner: Runner, floor_config: HeuristicConfig, out: str | None) -> int:
    """Print the cost and write the floor rule's config to `out` when asked."""
    print(f"\n{runner.configs} configs scored, {runner.seconds:.1f} CPU s")
    if out:
        with open(out, "w", encoding="utf-8") as handle:
            json.dump(json.loads(floor_config.model_dump_json()), handle, indent=2)
            handle.write("\n")
        print(f"wrote {out}: cue modes {floor_config.cues.model_dump()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
