"""The figure a comparison page opens with: every paired difference with its interval.

One row per suite × decoder × condition × later model (the verdict table's rows, in its
order): the point is Δ = model − baseline over the outputs ok in both runs, the bar its
paired family-bootstrap interval, coloured by the verdict (and labelled, for readers who do
not see the colours).
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from analysis.statistics.comparison import Comparison

from .comparison import METRIC_LABEL, notices, verdict_cells

__all__ = ["VERDICT_COLOURS", "forest_figure"]

# Okabe–Ito: vermilion for worse, bluish green for better, grey for the rest.
VERDICT_COLOURS = {"worse": "#D55E00", "better": "#009E73"}
_OTHER = "#8A939C"


def forest_figure(c: Comparison) -> Figure | None:
    """The paired differences of ``c`` as a forest plot; None when no cell has a Δ."""
    rows = []
    for s in c.suites:
        for cell in verdict_cells(c, s):
            delta, lo, hi = cell.delta(s)
            if math.isfinite(delta):
                label = f"{cell.model} · {cell.decoder} · {cell.condition}"
                if len(c.suites) > 1:
                    label = f"{s.suite} · {label}"
                rows.append((label, delta, lo, hi, cell.said))
    if not rows:
        return None
    fig = Figure(figsize=(8.5, 1.4 + 0.3 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    for y, (_, delta, lo, hi, judged) in enumerate(reversed(rows)):
        colour = VERDICT_COLOURS.get(judged, _OTHER)
        if math.isfinite(lo) and math.isfinite(hi):
            ax.plot([lo, hi], [y, y], color=colour, linewidth=2.2, solid_capstyle="butt")
        ax.plot([delta], [y], "o", color=colour, markersize=5)
        ax.annotate(judged, (1.0, y), xycoords=("axes fraction", "data"), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=8, color=colour)  # fmt: skip
    ax.axvline(0.0, color="#1D2733", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [row[0] for row in reversed(rows)], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    metric = METRIC_LABEL[c.metric]
    better = "lower" if c.lower_is_better else "higher"
    ax.set_xlabel(f"Δ {metric} (model − {c.models[0]}), {better} is better")
    title = f"Paired differences against {c.models[0]}, {c.level:.0%} intervals"
    marked = notices(c)
    ax.set_title(title + ("\n" + "; ".join(marked) if marked else ""), fontsize=10)
    ax.grid(axis="x", color="#D5DBE1", linewidth=0.6)
    return fig
