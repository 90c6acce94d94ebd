"""Tables and plots of calibrated confidence for `groundwatch calibrate`: ECE, reliability, risk-coverage.

The figures come from `transforms.evaluation.fit_calibration.stage_figures` (cross-validated). Each table
function returns lines, plain text for the terminal or Markdown for the report:

    print("\\n".join(summary_lines(figures, band=(0.15, 0.95))))
    plot_risk_coverage(figures, path, title="...")
"""

from __future__ import annotations

from pathlib import Path

from pipelines.reporting.plots import Labels, Series, line_plot
from transforms.evaluation.metrics import COVERAGES

__all__ = [
    "calibration_section",
    "calibration_text",
    "plot_calibrated_reliability",
    "plot_risk_coverage",
    "reliability_lines",
    "risk_coverage_lines",
    "summary_lines",
]


def _f(value, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _table(heads: list[str], rows: list[list[str]], *, markdown: bool, first: int = 18, width: int = 8) -> list[str]:
    if markdown:
        return ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)] + [
            "| " + " | ".join(r) + " |" for r in rows
        ]
    fmt = lambda r: f"{r[0]:<{first}}" + "".join(f"{c:>{width}}" for c in r[1:])  # noqa: E731
    return [fmt(heads)] + [fmt(r) for r in rows]


def _slices(figures: dict) -> list[tuple[str, dict]]:
    return [("overall", figures["overall"]), *figures["per_source"].items()]


def summary_lines(figures: dict, *, markdown: bool = False) -> list[str]:
    """Per slice: ECE of the raw and of the calibrated score (held out), the share the band escalates and the
    binary accuracy and balanced accuracy of the sentences it lets the stage decide."""
    heads = ["slice", "n", "ECEraw", "ECEcal", "escal", "decAcc", "decBA"]
    rows = [
        [
            name,
            str(m["n"]),
            _f(m["ece_raw"]),
            _f(m["ece_calibrated"]),
            _f(m["escalated_share"], ".2f"),
            _f(m["decided_accuracy"]),
            _f(m["decided_balanced_accuracy"]),
        ]
        for name, m in _slices(figures)
    ]
    return _table(heads, rows, markdown=markdown)


def risk_coverage_lines(figures: dict, *, score: str = "calibrated", metric: str = "binary_accuracy", markdown=False):
    """Rows = slices, columns = the most confident 10%, 20%, ... 100%: `metric` of that share."""
    heads = ["slice"] + [f"{round(100 * c)}%" for c in COVERAGES]
    rows = [[name] + [_f(r[metric]) for r in m[f"risk_coverage_{score}"]] for name, m in _slices(figures)]
    return _table(heads, rows, markdown=markdown, width=7)


def reliability_lines(block: dict, *, markdown: bool = False) -> list[str]:
    """The reliability table of one slice: per 0.1-wide bin, count, mean score and observed rate of fully
    grounded, for the raw score and for the calibrated (held-out) probability."""
    raw = {round(b["lo"], 1): b for b in block["reliability_raw"]}
    cal = {round(b["lo"], 1): b for b in block["reliability_calibrated"]}
    heads = ["bin", "raw n", "raw mean", "raw obs", "cal n", "cal mean", "cal obs"]
    rows = []
    for lo in sorted(set(raw) | set(cal)):
        r, c = raw.get(lo, {}), cal.get(lo, {})
        rows.append(
            [
                f"[{lo:.1f}, {lo + 0.1:.1f})",
                str(r.get("count", 0)),
                _f(r.get("mean_score")),
                _f(r.get("positive_rate")),
                str(c.get("count", 0)),
                _f(c.get("mean_score")),
                _f(c.get("positive_rate")),
            ]
        )
    return _table(heads, rows, markdown=markdown, first=12, width=9)


def _band_text(band) -> str:
    return "none (the stage decides everything)" if band is None else f"[{band[0]:.3f}, {band[1]:.3f}]"


_MAP_TEXT = {
    "isotonic": "Isotonic map of the raw score",
    "logistic": "Logistic map of the verdict (logit of the raw score, a slope for fully grounded verdicts and one "
    "for the rest, an offset per verdict class; ridge-regularised)",
}


def calibration_section(
    name: str, figures: dict, *, band, target: float, images: dict[str, str], map_kind: str = "isotonic"
) -> list[str]:
    """The Markdown section of one verifier or stage: the figures, every table, per source, and the plots."""
    lines = [
        f"### `{name}`",
        "",
        f"{_MAP_TEXT[map_kind]}, {figures['folds']}-fold cross-validation grouped by source document; every figure is "
        f"held out (map and band fitted without the record's fold). Band fitted on all records at target "
        f"accuracy {target:.2f}: {_band_text(band)}; per fold: "
        + ", ".join(_band_text(b) for b in figures["fold_bands"])
        + ".",
        "",
        *summary_lines(figures, markdown=True),
        "",
        "Risk-coverage, binary accuracy of the most confident share (ranked by max(p, 1 - p) of the calibrated "
        "probability p, held out):",
        "",
        *risk_coverage_lines(figures, markdown=True),
        "",
        "The same, balanced accuracy:",
        "",
        *risk_coverage_lines(figures, metric="balanced_accuracy", markdown=True),
        "",
        "The same, ranked by the raw score (before calibration), binary accuracy:",
        "",
        *risk_coverage_lines(figures, score="raw", markdown=True),
        "",
    ]
    for label, image in images.items():
        lines += [f"![{label}]({image})", ""]
    for slice_name, block in _slices(figures):
        lines += [f"Reliability, {slice_name}:", "", *reliability_lines(block, markdown=True), ""]
    return lines


_GROUPED = {"document": "grouped by document", "source": "leave-one-source-out"}


def calibration_text(report: dict, target: float) -> list[str]:
    """The terminal lines of each verifier's or stage's calibration figures, held out, overall and per source."""
    lines = []
    for name, r in report.items():
        figures = r["figures"]
        lines += [
            "",
            f"CALIBRATION {name}: {r.get('map', 'isotonic')} map, {figures['folds']}-fold CV "
            f"{_GROUPED[r.get('grouping', 'document')]}, "
            "all figures held out; "
            f"band at target accuracy {target:.2f}: {_band_text(r['band'])}",
            *summary_lines(figures),
            "",
            "risk-coverage, binary accuracy of the most confident share, by max(p, 1 - p) (calibrated):",
            *risk_coverage_lines(figures),
            "risk-coverage, balanced accuracy (calibrated):",
            *risk_coverage_lines(figures, metric="balanced_accuracy"),
            "risk-coverage, binary accuracy, raw score:",
            *risk_coverage_lines(figures, score="raw"),
            "",
            "reliability, overall (per source: --report):",
            *reliability_lines(figures["overall"]),
        ]
    return lines


def plot_calibrated_reliability(figures: dict, path: Path, *, title: str) -> Path:
    """Observed rate of fully grounded against the mean score per bin: raw and calibrated (held out)."""
    series = [Series([0, 1], [0, 1], "perfectly calibrated", {"linestyle": ":", "color": "grey"})]
    for name, block in _slices(figures):
        for key, dashed in (("raw", True), ("calibrated", False)):
            bins = block[f"reliability_{key}"]
            if not bins or (name != "overall" and key == "raw"):
                continue
            xs, ys = [b["mean_score"] for b in bins], [b["positive_rate"] for b in bins]
            ece = block[f"ece_{key}"]
            if name == "overall":
                style = {"color": "black", "linewidth": 2, "marker": "o", **({"linestyle": "--"} if dashed else {})}
                series.append(Series(xs, ys, f"overall {key} (ECE {ece:.3f})", style))
            else:
                style = {"marker": "o", "markersize": 3, "linewidth": 1, "alpha": 0.6}
                series.append(Series(xs, ys, f"{name} (ECE {ece:.3f})", style))
    labels = Labels(
        "score: raw grounded probability, or calibrated P(fully grounded)",
        "fraction labeled fully grounded by humans",
        title,
        fontsize=7,
    )
    return line_plot(path, series, (0, 1), (0, 1), labels)


def plot_risk_coverage(figures: dict, path: Path, *, title: str) -> Path:
    """Binary accuracy of the most confident share against the share, per slice (calibrated, held out), and
    the overall curve of the raw score for contrast."""
    series = []
    for name, block in _slices(figures):
        xs = [r["coverage"] for r in block["risk_coverage_calibrated"]]
        ys = [r["binary_accuracy"] for r in block["risk_coverage_calibrated"]]
        if name == "overall":
            raw = [r["binary_accuracy"] for r in block["risk_coverage_raw"]]
            series.append(Series(xs, ys, "overall, calibrated", {"color": "black", "linewidth": 2, "marker": "o"}))
            series.append(Series(xs, raw, "overall, raw", {"color": "black", "linestyle": "--"}))
        else:
            style = {"marker": "o", "markersize": 3, "linewidth": 1, "alpha": 0.7}
            series.append(Series(xs, ys, name, style))
    labels = Labels(
        "coverage: share of sentences decided, most confident first",
        "binary accuracy (fully grounded or not)",
        title,
        legend="lower left",
        fontsize=7,
    )
    return line_plot(path, series, (0, 1.02), (0.4, 1.02), labels)
