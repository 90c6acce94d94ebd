"""`groundwatch calibrate --from-lake L [--tenant T] [--fit OUT]`: agreement figures from the reviews, and a
calibration file fitted on them.

Prints one table: reviewed sentences, Cohen's kappa and binary balanced accuracy, for all reviews, per verifier
version and per tenant. With `--fit`, fits a calibration (cross-validated, grouped by response), prints its
cross-validated figures and writes it into OUT: with `--tenant T` as T's section of the existing file OUT (its
other sections kept), without as the default section (a new file, or OUT's default replaced, its tenants
kept). Exit 2 with one line, before anything is written, when the lake has no reviews or cannot carry a fit,
or when `--tenant` names a file that does not exist yet (fit its default first) or is no calibration file.
"""

from __future__ import annotations

import argparse
import os
import sys

from dashboards.views import connect_lake
from pipelines.reviewing.actions import check_lake
from pipelines.reviewing.agreement import agreement_rows, fit_from_reviews, reviewed_sentences
from pipelines.reviewing.store import ReviewInputError
from transforms.verify.calibration import Calibration

__all__ = ["calibrate_from_lake", "format_agreement"]


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_agreement(rows: list) -> str:
    """The agreement table as text."""
    lines = [f"{'slice':<32} {'reviewed':>8} {'kappa':>7} {'bal.acc':>7} {'agree':>7}"]
    for dimension, value, f in rows:
        name = "all reviews" if dimension == "all" else f"{dimension}={value}"
        lines.append(
            f"{name:<32} {f['n']:>8} {_figure(f['kappa']):>7} {_figure(f['balanced_accuracy']):>7}"
            f" {_figure(f['agreement']):>7}"
        )
    return "\n".join(lines)


def calibrate_from_lake(args: argparse.Namespace) -> int:
    """Run `calibrate --from-lake`: print agreement, and fit when `--fit` asks."""
    try:
        check_lake(args.from_lake)
    except ReviewInputError as e:
        print(f"groundwatch calibrate: --from-lake: {str(e).removeprefix('--lake: ')}", file=sys.stderr)
        return 2
    try:
        existing = _existing_file(args.fit, args.tenant) if args.fit else None
    except ValueError as e:
        print(f"groundwatch calibrate: --fit: {e}", file=sys.stderr)
        return 2
    rows = reviewed_sentences(connect_lake(args.from_lake), tenant=args.tenant)
    if not rows:
        where = f" of tenant {args.tenant!r}" if args.tenant else ""
        print(f"groundwatch calibrate: --from-lake: no reviews{where} in {args.from_lake}", file=sys.stderr)
        return 2
    print(f"agreement between the verifier and reviewers ({len(rows)} reviewed sentences, latest label each):")
    print(format_agreement(agreement_rows(rows)))
    if not args.fit:
        return 0
    fitted_on = {"lake": args.from_lake, "tenant": args.tenant or "all", "reviews": len(rows)}
    try:
        calibration, report = fit_from_reviews(
            rows, target=args.target_accuracy, folds=args.folds, map_kind=args.map, fitted_on=fitted_on
        )
    except ValueError as e:
        print(f"groundwatch calibrate: --fit: {e}", file=sys.stderr)
        return 2
    for stage, entry in report.items():
        overall = entry["figures"]["overall"]
        decided = overall.get("decided_balanced_accuracy")
        band = "no escalation band" if entry["band"] is None else f"escalation band {entry['band']}"
        raw, calibrated = overall.get("ece_raw"), overall.get("ece_calibrated")
        print(
            f"{stage}: {band}, cross-validated (grouped by response): "
            f"ECE {_figure(raw)} -> {_figure(calibrated)}, "
            f"escalated {_figure(overall.get('escalated_share'))}, decided balanced accuracy {_figure(decided)}"
        )
        if raw is not None and calibrated is not None and calibrated > raw:
            print(
                f"groundwatch calibrate: warning: on responses it was not fitted on, this calibration leaves "
                f"{stage}'s confidence further from the reviewers' labels than none (ECE {raw:.3f} -> "
                f"{calibrated:.3f}, {len(rows)} reviewed sentences); the file is written, but review more "
                "sentences and fit again before auditing with it",
                file=sys.stderr,
            )
    try:
        if existing is not None:
            calibration = existing.with_section(args.tenant, calibration)
    except ValueError as e:
        print(f"groundwatch calibrate: --tenant: {e}", file=sys.stderr)
        return 2
    digest = calibration.save(args.fit)
    section = f"tenant {args.tenant!r}'s section" if args.tenant else "default section"
    print(f"calibration file written to {args.fit}, {section} (sha256 {digest})")
    return 0


def _existing_file(path: str, tenant: str | None) -> Calibration | None:
    """The calibration file the fit goes into, when there is one; ValueError when a tenant's fit has none."""
    if not os.path.exists(path):
        if tenant is not None:
            raise ValueError(
                f"{path} does not exist: a tenant's section goes into a file with a default section "
                "(fit it first, without --tenant)"
            )
        return None
    return Calibration.load(path)
