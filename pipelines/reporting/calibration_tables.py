"""The figures of `groundwatch calibrate` as lines of text: plain for the console, Markdown for the report.

`metrics_table` (one row per slice), `confusion_lines` (the confusion matrix with per-class recall),
`interval_line` (the bootstrap intervals) and `baseline_lines` (the change since an earlier run's
metrics.json). Both `pipelines.calibrate` and `pipelines.reporting.calibration_report` print them.
"""

from __future__ import annotations

__all__ = ["baseline_lines", "confusion_lines", "interval_line", "metrics_table"]

_COLUMNS = (
    ("n", "n", "{:>5}"),
    ("accuracy", "strict", "{:>6.3f}"),
    ("macro_f1", "macroF1", "{:>7.3f}"),
    ("compatible_accuracy", "compat", "{:>6.3f}"),
    ("binary_balanced_accuracy", "binBA", "{:>6.3f}"),
    ("cohen_kappa", "kappa", "{:>6.3f}"),
    ("roc_auc", "AUC", "{:>6.3f}"),
)


_CORNER = "human \\ verifier"


def metrics_table(block: dict, *, markdown: bool = False) -> list[str]:
    """One row per slice (overall first, then each source) of the headline metrics."""
    rows = [("overall", block["overall"])] + list(block["per_source"].items())
    has_spans = any((m.get("spans") or None) for _, m in rows)
    heads = ["slice"] + [h for _, h, _ in _COLUMNS] + (["spanF1"] if has_spans else [])
    lines = []
    if markdown:
        lines += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    else:
        lines.append(f"{'slice':<18}" + " ".join(f"{h:>7}" for h in heads[1:]))
    for name, m in rows:
        cells = [
            ("-" if m.get(key) is None else (str(m[key]) if key == "n" else f"{m[key]:.3f}")) for key, _, _ in _COLUMNS
        ]
        if has_spans:
            cells.append(f"{m['spans']['token_f1']:.3f} (n={m['spans']['n']})" if m.get("spans") else "-")
        lines.append(
            "| " + " | ".join([name] + cells) + " |" if markdown else f"{name:<18}" + " ".join(f"{c:>7}" for c in cells)
        )
    return lines


def confusion_lines(m: dict, *, markdown: bool = False) -> list[str]:
    """The confusion matrix, rows = human label, columns = verifier label, with per-class recall (strict, and
    compatible: the prediction is one the annotation allows)."""
    labels = m["labels"]
    short = [lab[:12] for lab in labels]
    if markdown:
        lines = [f"| {_CORNER} | " + " | ".join(short) + " | recall | compat |", "|" + "---|" * (len(labels) + 3)]
    else:
        lines = [f"{_CORNER:<20}" + " ".join(f"{s:>12}" for s in short) + f"{'recall':>8}{'compat':>8}"]
    compatible = m.get("compatible_recall", {})
    for label, row in zip(labels, m["confusion_matrix"], strict=True):
        recall = m["per_class"][label]["recall"] if m["per_class"][label]["support"] else None
        rtxt = "-" if recall is None else f"{recall:.2f}"
        ctxt = "-" if compatible.get(label) is None else f"{compatible[label]:.2f}"
        if markdown:
            lines.append(f"| {label} | " + " | ".join(str(c) for c in row) + f" | {rtxt} | {ctxt} |")
        else:
            lines.append(f"{label:<20}" + " ".join(f"{c:>12}" for c in row) + f"{rtxt:>8}{ctxt:>8}")
    return lines


def interval_line(intervals: dict, resamples: int) -> str:
    """The overall bootstrap intervals as one line."""
    names = {"accuracy": "strict", "binary_balanced_accuracy": "binBA", "roc_auc": "AUC"}
    parts = [f"{names[k]} [{v[0]:.3f}, {v[1]:.3f}]" for k, v in intervals.items() if v is not None]
    return f"95% bootstrap intervals, overall ({resamples} resamples): " + ", ".join(parts)


_DELTA_KEYS = (
    ("accuracy", "strict"),
    ("compatible_accuracy", "compat"),
    ("binary_balanced_accuracy", "binBA"),
    ("roc_auc", "AUC"),
)


def baseline_lines(current: dict, baseline: dict, *, markdown: bool = False) -> list[str]:
    """Sentence metrics now and their change since a baseline metrics.json, overall and per source."""
    base = baseline["summary"]["sentences"]
    header = baseline.get("header", {})
    title = f"vs baseline {header.get('verifier', '?')} {header.get('verifier_version', '?')}"
    rows = [("overall", current["overall"], base["overall"])]
    rows += [(s, m, base["per_source"].get(s)) for s, m in current["per_source"].items()]

    def cell(now, before, key):
        value = now.get(key)
        if value is None:
            return "-"
        if not before or before.get(key) is None:
            return f"{value:.3f}"
        return f"{value:.3f} ({value - before[key]:+.3f})"

    heads = ["slice"] + [h for _, h in _DELTA_KEYS]
    if markdown:
        lines = [f"{title}:", "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        lines += ["| " + " | ".join([n] + [cell(m, b, k) for k, _ in _DELTA_KEYS]) + " |" for n, m, b in rows]
        return lines
    lines = [title, f"{'slice':<18}" + "".join(f"{h:>17}" for h in heads[1:])]
    lines += [f"{n:<18}" + "".join(f"{cell(m, b, k):>17}" for k, _ in _DELTA_KEYS) for n, m, b in rows]
    return lines
