"""The Markdown report of `groundwatch calibrate`, with its reliability and ROC plots (PNG) and metrics.json.

Plots are drawn by `pipelines.reporting.plots.line_plot` (headless, no global figure state).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pipelines.reporting.calibration_tables import confusion_lines, interval_line, metrics_table
from pipelines.reporting.confidence_tables import (
    calibration_section,
    plot_calibrated_reliability,
    plot_risk_coverage,
)
from pipelines.reporting.plots import Labels, Series, line_plot
from transforms.evaluation.golden import GoldenRun
from transforms.evaluation.metrics import Scored, roc_auc, roc_curve

__all__ = ["plot_reliability", "plot_roc", "write_report"]


def _figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 5.2), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def _groups(items: Sequence[Scored]) -> dict[str, list[Scored]]:
    groups: dict[str, list[Scored]] = {"overall": list(items)}
    for it in items:
        groups.setdefault(it.source, []).append(it)
    return groups


def plot_reliability(bins_by_slice: dict[str, list[dict]], path: Path, *, title: str) -> Path:
    """Observed rate of fully grounded sentences against the mean grounded probability, per 0.1-wide bin."""
    series = [Series([0, 1], [0, 1], "perfectly calibrated", {"linestyle": ":", "color": "grey"})]
    for name, bins in bins_by_slice.items():
        if not bins:
            continue
        xs, ys = [b["mean_score"] for b in bins], [b["positive_rate"] for b in bins]
        if name == "overall":
            sizes = [20 + 200 * b["count"] / max(c["count"] for c in bins) for b in bins]
            series.append(Series(xs, ys, "overall", {"color": "black", "linewidth": 2}, sizes))
        else:
            series.append(Series(xs, ys, name, {"marker": "o", "markersize": 3, "linewidth": 1, "alpha": 0.7}))
    labels = Labels(
        "verifier's grounded probability (P(fully grounded) it gives)",
        "fraction labeled fully grounded by humans",
        title,
    )
    return line_plot(path, series, (0, 1), (0, 1), labels)


def plot_roc(curves: dict[str, tuple[list[bool], list[float]]], path: Path, *, title: str) -> Path:
    """ROC curves of the grounded probability (of SUPPORTS, for citations), one per slice, with the AUC in the
    legend."""
    series = [Series([0, 1], [0, 1], None, {"linestyle": ":", "color": "grey"})]
    for name, (positive, scores) in curves.items():
        auc = roc_auc(positive, scores)
        if auc is None:
            continue
        points = roc_curve(positive, scores)
        style = {"color": "black", "linewidth": 2} if name == "overall" else {"linewidth": 1, "alpha": 0.8}
        if name.startswith("citations"):
            style = {"color": "black", "linewidth": 1.5, "linestyle": "--"}
        series.append(Series([p[0] for p in points], [p[1] for p in points], f"{name} (AUC {auc:.3f})", style))
    labels = Labels("false positive rate", "true positive rate", title, legend="lower right")
    return line_plot(path, series, (0, 1), (0, 1), labels)


def _per_source_thresholds(info: dict) -> list[str]:
    rows = info.get("recommended_per_source") or {}
    if not rows:
        return []
    target = info["target"]
    lines = [f"Per source, for flag {target['metric']} >= {target['value']:.2f}:", ""]
    for source, p in rows.items():
        if p is None:
            lines.append(f"- {source}: no threshold reaches it")
        else:
            prec = "-" if p["precision"] is None else f"{p['precision']:.3f}"
            rec = "-" if p["recall"] is None else f"{p['recall']:.3f}"
            lines.append(f"- {source}: threshold {p['threshold']:.2f} (precision {prec}, recall {rec})")
    return [*lines, ""]


def _calibration_lines(directory: Path, calibration: dict, target: float) -> list[str]:
    """The calibrated-confidence section: per verifier or stage, its tables and its two plots."""
    lines = ["## Calibrated confidence", ""]
    for name, r in calibration.items():
        images = {
            "reliability diagram": f"calibrated_reliability_{name}.png",
            "risk-coverage curve": f"risk_coverage_{name}.png",
        }
        title = f"{name}: held out, {r['figures']['folds']} grouped folds"
        plot_calibrated_reliability(r["figures"], directory / images["reliability diagram"], title=title)
        plot_risk_coverage(r["figures"], directory / images["risk-coverage curve"], title=title)
        lines += calibration_section(
            name, r["figures"], band=r["band"], target=target, images=images, map_kind=r.get("map", "isotonic")
        )
    return lines


def write_report(
    directory: Path,
    *,
    run: GoldenRun,
    summary: dict,
    threshold_text: list[str],
    threshold_info: dict,
    rejected: list[tuple[int, str]],
    header: dict,
    baseline_text: list[str] | None = None,
    calibration: dict | None = None,
) -> Path:
    """Write report.md, reliability.png, roc.png and metrics.json into `directory`; returns report.md's path."""
    directory.mkdir(parents=True, exist_ok=True)
    sentence_groups = _groups(run.sentences)
    bins = {name: m["reliability"] for name, m in [("overall", summary["sentences"]["overall"])]}
    bins.update({name: m["reliability"] for name, m in summary["sentences"]["per_source"].items()})
    plot_reliability(bins, directory / "reliability.png", title="Reliability of the grounded probability (sentences)")
    curves = {
        name: ([it.gold == "fully_grounded" for it in items], [it.score for it in items])
        for name, items in sentence_groups.items()
    }
    if run.citations:
        curves["citations (SUPPORTS)"] = (
            [it.gold == "SUPPORTS" for it in run.citations],
            [it.score for it in run.citations],
        )
    plot_roc(curves, directory / "roc.png", title="ROC: fully grounded vs not")

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    overall = summary["sentences"]["overall"]
    speed = summary["sentences_per_second"]
    lines = [
        f"# Calibration of the `{header['verifier']}` verifier",
        "",
        f"Golden file `{header['golden']}`, {header['records']} records ({len(rejected)} rejected lines), "
        f"verifier version {header['verifier_version']}, {stamp}."
        + (f" Speed: {speed:.1f} sentences/s." if speed else ""),
        "",
        "Strict = 4-way accuracy against `label`; compat = the prediction is one of `acceptable_labels`; "
        "binBA = balanced accuracy of fully grounded vs the rest; AUC = ROC-AUC of the grounded probability; "
        "spanF1 = token F1 of unsupported spans on the records that carry human spans.",
        "",
        *([f"{header['granularity']}.", ""] if header.get("granularity") else []),
        "## Sentences",
        "",
        *metrics_table(summary["sentences"], markdown=True),
        "",
        *([interval_line(summary["intervals"], header.get("bootstrap", 0)) + ".", ""] if summary["intervals"] else []),
        *([*baseline_text, ""] if baseline_text else []),
        "Confusion matrix (all sources):",
        "",
        *confusion_lines(overall, markdown=True),
        "",
        "## Confidence threshold",
        "",
        "A sentence is flagged when its verdict is ungrounded or contradicted or its confidence is under the "
        "threshold; precision and recall are those of catching sentences that humans did not label fully grounded.",
        "",
        *[f"- {t}" for t in threshold_text],
        "",
        *_per_source_thresholds(threshold_info),
        "![reliability](reliability.png)",
        "",
        "![roc](roc.png)",
        "",
    ]
    if calibration:
        lines += _calibration_lines(directory, calibration, header.get("target_accuracy", 0.9))
    if summary["citations"]:
        lines += [
            "## Citations",
            "",
            "Each labeled citation judged against its one cited passage.",
            "",
            *metrics_table(summary["citations"], markdown=True),
            "",
            *confusion_lines(summary["citations"]["overall"], markdown=True),
            "",
        ]
    if run.mistakes:
        lines += [
            "## Most confident disagreements",
            "",
            "| id | source | human | verifier | confidence |",
            "|---|---|---|---|---|",
        ]
        for m in sorted(run.mistakes, key=lambda m: -m["confidence"])[:25]:
            lines.append(f"| {m['id']} | {m['source']} | {m['gold']} | {m['predicted']} | {m['confidence']:.3f} |")
        lines.append("")
    if rejected:
        lines += ["## Rejected lines", ""] + [f"- line {n}: {reason}" for n, reason in rejected] + [""]
    report = directory / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    payload = {
        "header": header,
        "summary": summary,
        "threshold": threshold_info,
        "rejected": [{"line": n, "reason": r} for n, r in rejected],
        "calibration": calibration,
    }
    (directory / "metrics.json").write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    return report
