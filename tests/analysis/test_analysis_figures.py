"""Figures: no text overlaps another or falls outside the figure, at the size written."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest
from analysis_runs import RunFactory, grid_line
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from analysis import analysis_markdown, analyze_run, load_run, select_path
from analysis.rendering.figure_list import report_figures


def _drawn_texts(fig: Figure) -> list[Text]:
    """The texts a reader sees: figure texts, and per axes its texts, title, legend, and
    (when its axis is on) the labels of ticks inside the view limits."""
    found = list(fig.texts)
    for name in ("_suptitle", "_supxlabel", "_supylabel"):
        if getattr(fig, name, None) is not None:
            found.append(getattr(fig, name))
    for ax in fig.axes:
        found += [*ax.texts, ax.title, ax._left_title, ax._right_title]  # type: ignore[attr-defined]
        legend = ax.get_legend()
        if legend is not None:
            found += [*legend.get_texts(), legend.get_title()]
        if not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            found.append(axis.label)
            lo, hi = sorted(axis.get_view_interval())
            slack = (hi - lo) * 1e-9
            found += [
                tick.label1
                for tick in axis.get_major_ticks()
                if lo - slack <= tick.get_loc() <= hi + slack and tick.label1.get_visible()
            ]
    unique = {id(t): t for t in found}.values()
    return [t for t in unique if t.get_visible() and t.get_text().strip()]


def _boxes(fig: Figure) -> list[tuple[str, Bbox]]:
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in _drawn_texts(fig)]


def _check(fig: Figure, name: str) -> None:
    boxes = _boxes(fig)
    frame = fig.bbox
    for text, box in boxes:  # nothing cut off at the figure's edges (1 px of slack)
        assert box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1, f"{name}: {text!r} cut off"
        assert box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1, f"{name}: {text!r} cut off"
    for (ta, a), (tb, b) in combinations(boxes, 2):
        overlap = min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)
        assert min(overlap) <= 1, f"{name}: {ta!r} overlaps {tb!r}"


# The exploratory suite's seven decoders, whose long labels sat side by side on one axis.
EXPLORATORY = (
    "direct",
    "tree4",
    "sets",
    "actual_digits",
    "adaptive_thresholds",
    "parallel_thresholds",
    "bits4",
)


def _exploratory(runs: RunFactory) -> Path:
    lines = [
        grid_line(
            "exploratory", family, "int", "arithmetic", order, 0, decoder, "2", value, eps="1"
        )
        for family in range(6)
        for order in ("ascending", "reversed")
        for decoder, value in zip(EXPLORATORY, ("2", "2", "3", "2", "2", "4", "2"), strict=True)
    ]
    return runs.write(
        "e", lines, suite="exploratory", decoders=list(EXPLORATORY), conditions=["arithmetic"]
    )


@pytest.mark.parametrize("suite", ["affine", "exploratory"])
def test_report_figures_have_no_overlapping_or_clipped_text(runs: RunFactory, suite: str) -> None:
    folder: Path = runs.affine(families=range(4)) if suite == "affine" else _exploratory(runs)
    run = load_run(folder)
    figures = report_figures(analyze_run(run, 200), select_path(run, None))
    assert len(figures) >= 3
    for stem, _, fig in figures:
        _check(fig, f"{suite}/{stem}")


def test_footnotes_name_only_what_the_suite_has(runs: RunFactory) -> None:
    affine = analysis_markdown(analyze_run(load_run(runs.affine(families=range(6))), 200))
    assert "resampled with their transforms, option orders and both conditions" in affine
    exploratory = analysis_markdown(analyze_run(load_run(_exploratory(runs)), 200))
    assert "resampled with their option orders)" in exploratory
    assert "transforms" not in exploratory and "both conditions" not in exploratory
