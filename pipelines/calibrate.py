"""`groundwatch calibrate`: how often a verifier agrees with human labels, and which threshold to run it at.

Runs a verifier over a labeled golden file (format: `docs/calibration.md`;
your own labeled traffic works the same way) and prints, overall and per
source: strict 4-way accuracy and macro-F1, compatible accuracy (prediction in
`acceptable_labels`), binary balanced accuracy (fully grounded vs the rest),
Cohen's kappa, ROC-AUC of the grounded probability, unsupported-span token F1, the
same for citation labels, and a recommended confidence threshold::

    groundwatch calibrate --golden labeled.jsonl --verifier heuristic \\
        --report /tmp/calibration --target-recall 0.8
    groundwatch calibrate --golden labeled.jsonl --verifier cascade \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model my-model   # key from GROUNDWATCH_JUDGE_API_KEY
    groundwatch calibrate --golden labeled.jsonl --verifier cascade --model-path ./nli-onnx --fit cal.json \\
        --judge-base-url http://127.0.0.1:8000/v1 --judge-model my-model   # fits the heuristic's and the model's bands

It also calibrates: a map (`--map`: by default a small logistic model of the verdict's grounded probability and class;
or isotonic on the score) to P(fully grounded) and the band of
calibrated probability to escalate so the sentences left reach `--target-accuracy`, cross-validated with folds
grouped by source document (`--group-by document`, the default) or one fold per source (`--group-by source`,
leave-one-source-out); it prints ECE before and after, the risk-coverage table and the share escalated,
overall and per source (`transforms.evaluation.fit_calibration`). `--fit OUT.json` writes the calibration file
that `audit` and `monitor` take with `--calibration`::

    groundwatch calibrate --golden labeled.jsonl --fit cal.json --target-accuracy 0.9

With `--report DIR` it also writes `report.md`, `reliability.png`, `roc.png`
and `metrics.json` there; `--baseline OLD/metrics.json` prints each figure's change since
that run, per source (before/after a verifier change). Exit codes: 0 done, 2 bad usage or no valid record,
1 when `--min-balanced-accuracy` is given and the overall figure is under it, or when the verifier fails on a
record (a model that cannot score it; the line names the record).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipelines.options.model import add_stage_arguments, stage_verifier_config
from pipelines.reporting.calibration_report import write_report
from pipelines.reporting.calibration_tables import baseline_lines, confusion_lines, interval_line, metrics_table
from pipelines.reporting.confidence_tables import calibration_text
from pipelines.reporting.gate_report import decided_by_line
from transforms.evaluation.fit_calibration import STAGES_OF, fit_calibration, record_groups
from transforms.evaluation.golden import load_golden, score_golden, summarize
from transforms.evaluation.metrics import recommend_threshold, threshold_sweep
from transforms.verify.registry import make_verifier

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--golden", help="labeled golden JSONL file (format: docs/calibration.md)")
    parser.add_argument(
        "--from-lake", metavar="LAKE", help="instead of --golden: the reviewers' labels in this lake's reviews table"
    )
    parser.add_argument("--tenant", help="with --from-lake: only this tenant's reviews")
    parser.add_argument(
        "--verifier", default="heuristic", help="verifier name: heuristic, model, openai, cascade (default heuristic)"
    )
    parser.add_argument(
        "--verifier-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="configuration passed to the verifier factory; repeatable (values parsed as JSON when they can be)",
    )
    add_stage_arguments(parser)
    parser.add_argument("--report", metavar="DIR", help="write report.md, reliability.png, roc.png, metrics.json here")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--target-precision", type=float, help="recommend the threshold with most recall at this flag precision"
    )
    target.add_argument(
        "--target-recall",
        type=float,
        help="recommend the threshold with fewest flags at this flag recall (default 0.8)",
    )
    parser.add_argument(
        "--threshold", type=float, default=0.7, help="the confidence threshold in use, to evaluate (default 0.7)"
    )
    parser.add_argument("--source", action="append", default=[], help="only records of this source_dataset; repeatable")
    parser.add_argument("--limit", type=int, help="only the first N valid records")
    parser.add_argument("--no-citations", action="store_true", help="skip the per-citation labels")
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=200,
        help="bootstrap resamples for the overall intervals (0: none; default 200)",
    )
    parser.add_argument("--baseline", metavar="METRICS_JSON", help="an earlier run's metrics.json: print the changes")
    parser.add_argument(
        "--min-balanced-accuracy", type=float, help="exit 1 when overall binary balanced accuracy is lower"
    )
    parser.add_argument(
        "--fit", metavar="OUT_JSON", help="write the calibration file here (for audit/monitor --calibration)"
    )
    parser.add_argument(
        "--target-accuracy",
        type=float,
        default=0.9,
        help="binary accuracy the sentences outside the escalation band must reach, in (0, 1] (default 0.9)",
    )
    parser.add_argument(
        "--folds", type=int, default=5, help="cross-validation folds with --group-by document (default 5)"
    )
    parser.add_argument(
        "--group-by",
        choices=("source", "document"),
        default="document",
        help="cross-validation groups: source (leave-one-source-out; a record's meta.sub_dataset is a source of "
        "its own) or document (records sharing an evidence passage; default document)",
    )
    parser.add_argument(
        "--map",
        choices=("logistic", "isotonic"),
        default="logistic",
        help="calibration map: logistic (the verdict's score and class) or isotonic (the score; default logistic)",
    )


def _verifier_config(pairs: list[str]) -> dict:
    config = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--verifier-option expects KEY=VALUE, got {pair!r}")
        try:
            config[key] = json.loads(value)
        except json.JSONDecodeError:
            config[key] = value
    return config


_GRANULARITY_ADVICE = {"binary": "read binBA", "derived": "read compat"}


def granularity_note(records) -> str:
    """Which sources carry coarse labels, and which score means something for them (docs/calibration.md)."""
    kinds: dict[str, set[str]] = {}
    for r in records:
        kinds.setdefault(r.source, set()).add(r.granularity)
    parts = [
        f"{source} {kind} ({_GRANULARITY_ADVICE[kind]})"
        for source, found in sorted(kinds.items())
        for kind in sorted(found)
        if kind in _GRANULARITY_ADVICE
    ]
    return "label granularity: " + "; ".join(parts) if parts else ""


def _recommend(items, args):
    points = threshold_sweep(items)
    if args.target_precision is not None:
        return (
            points,
            ("precision", args.target_precision),
            recommend_threshold(points, target_precision=args.target_precision),
        )
    target = ("recall", args.target_recall if args.target_recall is not None else 0.8)
    return points, target, recommend_threshold(points, target_recall=target[1])


def _describe(p, n: int) -> str:
    prec = "-" if p.precision is None else f"{p.precision:.3f}"
    rec = "-" if p.recall is None else f"{p.recall:.3f}"
    return f"threshold {p.threshold:.2f}: flags {p.flagged}/{n}, precision {prec}, recall {rec}"


def _threshold_lines(run, args) -> tuple[list[str], dict]:
    points, target, best = _recommend(run.sentences, args)
    current = threshold_sweep(run.sentences, thresholds=[args.threshold])[0]
    n = len(run.sentences)
    lines = [f"in use  {_describe(current, n)}"]
    if best is None:
        lines.append(f"no threshold in 0.00..1.00 reaches flag {target[0]} {target[1]:.2f}")
    else:
        lines.append(f"for flag {target[0]} >= {target[1]:.2f}: {_describe(best, n)}")
    per_source = {}  # report and metrics.json only: a tenant may want a threshold of its own
    for source in sorted({it.source for it in run.sentences}):
        items = [it for it in run.sentences if it.source == source]
        _, _, best_here = _recommend(items, args)
        per_source[source] = None if best_here is None else best_here.__dict__
    info = {
        "in_use": current.__dict__,
        "target": {"metric": target[0], "value": target[1]},
        "recommended": None if best is None else best.__dict__,
        "recommended_per_source": per_source,
        "sweep": [p.__dict__ for p in points],
    }
    return lines, info


def calibrate_stages(records, run, args, config: dict, version: str):
    """The calibration file (fitted on all records) and, per verifier or stage, its band and cross-validated
    figures: the verifier run, then (with --fit) each stage of the file it is not (`STAGES_OF`)."""
    groups, folds = record_groups(records, args.group_by)
    if len(set(groups)) < 2:
        raise ValueError(f"cross-validation needs records of at least two groups (--group-by {args.group_by})")
    scores = {args.verifier: [it.score for it in run.sentences]}
    verdicts = {args.verifier: [it.predicted for it in run.sentences]}
    for stage in STAGES_OF.get(args.verifier, ()) if args.fit else ():
        if stage not in scores:
            stage_run = score_golden(records, make_verifier(stage, **config), with_citations=False)
            scores[stage] = [it.score for it in stage_run.sentences]
            verdicts[stage] = [it.predicted for it in stage_run.sentences]
    return fit_calibration(
        scores,
        [it.gold == "fully_grounded" for it in run.sentences],
        [it.source for it in run.sentences],
        groups,
        stages=STAGES_OF.get(args.verifier, ()),
        target=args.target_accuracy,
        folds=folds or args.folds,
        verdicts=verdicts,
        map_kind=args.map,
        grouping=args.group_by,
        fitted_on={"golden": Path(args.golden).name, "verifier": args.verifier, "verifier_version": str(version)},
    )


def _verifier_failed(args: argparse.Namespace, exc: Exception) -> int:
    """Exit 1 with one line: the verifier failed on a record (which one, from the note `score_golden` adds)."""
    where = "; ".join(getattr(exc, "__notes__", ()))
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:400]
    what = f"--verifier {args.verifier} failed on {where or 'a record'}"
    print(f"groundwatch calibrate: {what}: {reason}", file=sys.stderr)
    return 1


def main(args: argparse.Namespace) -> int:
    if bool(args.golden) == bool(args.from_lake):
        print("groundwatch calibrate: give one of --golden FILE or --from-lake LAKE", file=sys.stderr)
        return 2
    if args.from_lake:
        from pipelines.reviewing.from_lake import calibrate_from_lake  # kept lazy: start-up (only --from-lake)

        return calibrate_from_lake(args)
    try:
        config = {**stage_verifier_config(args), **_verifier_config(args.verifier_option)}
    except ValueError as exc:
        print(f"groundwatch calibrate: {exc}", file=sys.stderr)
        return 2
    for name in ("target_precision", "target_recall"):
        value = getattr(args, name)
        if value is not None and not 0.0 < value <= 1.0:
            print(f"groundwatch calibrate: --{name.replace('_', '-')} must be in (0, 1], got {value}", file=sys.stderr)
            return 2
    if not 0.0 < args.target_accuracy <= 1.0 or args.folds < 2:
        print("groundwatch calibrate: --target-accuracy must be in (0, 1] and --folds >= 2", file=sys.stderr)
        return 2

    if args.fit and args.verifier not in STAGES_OF:
        known = ", ".join(sorted(STAGES_OF))
        print(f"groundwatch calibrate: --fit: {args.verifier} has no stage to calibrate ({known})", file=sys.stderr)
        return 2
    if args.bootstrap < 0:
        print(f"groundwatch calibrate: --bootstrap must be >= 0, got {args.bootstrap}", file=sys.stderr)
        return 2
    baseline = None
    if args.baseline:
        try:
            baseline = json.loads(Path(args.baseline).read_text(encoding="utf-8"))
            baseline["summary"]["sentences"]["overall"]  # noqa: B018 - the shape a calibrate run writes
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(
                f"groundwatch calibrate: --baseline {args.baseline} is not a calibrate metrics.json: {exc}",
                file=sys.stderr,
            )
            return 2
    try:
        records, rejected = load_golden(args.golden)
    except OSError as exc:
        print(f"groundwatch calibrate: cannot read --golden {args.golden}: {exc}", file=sys.stderr)
        return 2
    for line_no, reason in rejected:
        print(f"groundwatch calibrate: {args.golden}:{line_no} skipped: {reason}", file=sys.stderr)
    if args.source:
        records = [r for r in records if r.source in set(args.source)]
    if args.limit is not None:
        records = records[: args.limit]
    if not records:
        print(f"groundwatch calibrate: no valid record in {args.golden}", file=sys.stderr)
        return 2

    try:
        verifier = make_verifier(args.verifier, **config)
    except (KeyError, ValueError, TypeError) as exc:
        print(f"groundwatch calibrate: --verifier {args.verifier}: {exc}", file=sys.stderr)
        return 2

    try:
        run = score_golden(records, verifier, with_citations=not args.no_citations)
    except RuntimeError as exc:  # e.g. ModelRunError: the model fails on a record
        return _verifier_failed(args, exc)
    summary = summarize(run, resamples=args.bootstrap)
    threshold_text, threshold_info = _threshold_lines(run, args)
    version = getattr(verifier, "version", "?")
    speed = summary["sentences_per_second"]
    speed_text = f", {speed:.1f} sentences/s" if speed else ""
    print(
        f"verifier {args.verifier} {version} on {args.golden}: "
        f"{len(records)} records ({len(rejected)} rejected lines){speed_text}"
    )
    if run.decided_by:
        print(decided_by_line(run.decided_by))
    granularity = granularity_note(records)
    if granularity:
        print(granularity)
    print("\nSENTENCES (positive = fully_grounded)")
    print("\n".join(metrics_table(summary["sentences"])))
    if summary["intervals"]:
        print(interval_line(summary["intervals"], args.bootstrap))
    print()
    print("\n".join(confusion_lines(summary["sentences"]["overall"])))
    print()
    print("\n".join(threshold_text))
    if baseline is not None:
        print()
        print("\n".join(baseline_lines(summary["sentences"], baseline)))
    try:
        calibration, stage_report = calibrate_stages(records, run, args, config, version)
    except RuntimeError as exc:
        return _verifier_failed(args, exc)
    except ValueError as exc:
        if args.fit:
            print(f"groundwatch calibrate: --fit: {exc}", file=sys.stderr)
            return 2
        calibration, stage_report = None, None  # too few records to calibrate: the rest of the report stands
        print(f"\nno calibration figures: {exc}")
    if stage_report:
        print("\n".join(calibration_text(stage_report, args.target_accuracy)))
    if args.fit:
        digest = calibration.save(args.fit)
        print(f"calibration file written to {args.fit} (sha256 {digest})")
    if summary["citations"]:
        print("\nCITATIONS (positive = SUPPORTS)")
        print("\n".join(metrics_table(summary["citations"])))
        print()
        print("\n".join(confusion_lines(summary["citations"]["overall"])))

    if args.report:
        path = write_report(
            Path(args.report),
            run=run,
            summary=summary,
            threshold_text=threshold_text,
            threshold_info=threshold_info,
            rejected=rejected,
            baseline_text=baseline_lines(summary["sentences"], baseline, markdown=True) if baseline else None,
            calibration=stage_report,
            header={
                "verifier": args.verifier,
                "verifier_version": version,
                "golden": str(args.golden),
                "records": len(records),
                "config": config,
                "granularity": granularity,
                "bootstrap": args.bootstrap,
                "target_accuracy": args.target_accuracy,
            },
        )
        print(f"\nreport written to {path}")

    overall_ba = summary["sentences"]["overall"]["binary_balanced_accuracy"]
    if args.min_balanced_accuracy is not None and (overall_ba is None or overall_ba < args.min_balanced_accuracy):
        print(f"binary balanced accuracy {overall_ba} is under --min-balanced-accuracy {args.min_balanced_accuracy}")
        return 1
    return 0
