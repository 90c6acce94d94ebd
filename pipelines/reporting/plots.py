"""The one line plot every figure of `groundwatch calibrate` is: series on fixed axes, labels, legend, PNG.

matplotlib's object API on an Agg canvas (no pyplot, no display, no global figure state), so the command runs
headless and in tests::

    line_plot(path, [Series([0, 1], [0, 1], None, {"linestyle": ":"})], (0, 1), (0, 1), Labels("x", "y", "title"))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Labels", "Series", "line_plot"]


@dataclass(frozen=True)
class Series:
    """One curve: its points, its legend entry (None: not in the legend) and matplotlib line style."""

    xs: Sequence[float]
    ys: Sequence[float]
    label: str | None = None
    style: dict[str, Any] = field(default_factory=dict)
    sizes: Sequence[float] | None = None
    """Marker areas: the points are also drawn as dots of these sizes (a count per point, say)."""


@dataclass(frozen=True)
class Labels:
    """Axis labels, title and where the legend goes."""

    x: str
    y: str
    title: str
    legend: Literal["upper left", "lower left", "lower right"] = "upper left"
    fontsize: int = 8


def line_plot(
    path: Path, series: Sequence[Series], xlim: tuple[float, float], ylim: tuple[float, float], labels: Labels
) -> Path:
    """Draw the series on one set of axes and save the PNG at `path`; returns it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 5.2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for s in series:
        ax.plot(list(s.xs), list(s.ys), label=s.label, **s.style)
        if s.sizes is not None:
            ax.scatter(list(s.xs), list(s.ys), s=list(s.sizes), color=s.style.get("color"), zorder=3)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(labels.x)
    ax.set_ylabel(labels.y)
    ax.set_title(labels.title)
    ax.legend(loc=labels.legend, fontsize=labels.fontsize)
    fig.savefig(path)
    return path
