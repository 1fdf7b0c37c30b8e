"""Figures for ``numericjev report`` (matplotlib, object API with the Agg canvas).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so no global
backend or figure registry is touched (safe in tests and when called from the harness).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.loading.names import condition_label, decoder_label
from analysis.loading.paths import DecisionPath
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.summary import Analysis

from .markdown import fmt

__all__ = [
    "decision_path_figure",
    "figure_subtitle",
    "nmae_figure",
    "save_figure",
    "within5_figure",
]

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")  # the paper hatches the provided condition
_CHOSEN = "#0B3C5D"


def figure_subtitle(model: str, suite: str, simulated: bool) -> str:
    """Second title line: model, suite and, when it applies, the simulated warning."""
    text = f"model {model} · suite {suite}"
    return text + (" · SIMULATED model, not a measurement of any real model" if simulated else "")


def _subtitle(a: Analysis) -> str:
    return figure_subtitle(a.facts.model, a.facts.suite, a.facts.simulated)


def _interval_note(a: Analysis, what: str) -> str:
    b = a.bootstrap
    n = a.metrics.n_ok
    counts = f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}"
    if b.n_boot <= 0:
        return f"no bootstrap intervals (--bootstrap 0) · {counts} ok outputs each"
    if b.refusal is not None:
        return f"no intervals: only {b.n_families} families · {counts} ok outputs each"
    return (
        f"{what}: {b.level:.0%} family-bootstrap intervals ({b.n_boot:,} replicates over "
        f"{b.n_families} families) · {counts} ok outputs each"
    )


def _errors(point: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
    if np.isnan(lo).all():
        return None
    # matplotlib wants distances below/above the point; missing intervals draw no bar.
    return np.nan_to_num(np.vstack([point - lo, hi - point]), nan=0.0)


def within5_figure(a: Analysis) -> Figure:
    """Paper Figure 1 layout: one bar per decoder × condition, share with APE <= 5%."""
    s = STATISTICS.index("within5")
    decoders, conditions = a.design.decoders, a.design.conditions
    fig = Figure(figsize=(max(7.0, 1.3 * len(decoders) + 2), 4.8), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(decoders))
    width = 0.8 / max(len(conditions), 1)
    for c, condition in enumerate(conditions):
        point = a.metrics.point[s, :, c]
        pos = x + (c - (len(conditions) - 1) / 2) * width
        ax.bar(
            pos,
            np.nan_to_num(point),
            width * 0.95,
            label=condition_label(condition),
            color=_COLOURS[c % 6],
            hatch=_HATCHES[c % 6],
            edgecolor="white",
            linewidth=0.5,
        )
        err = _errors(point, a.bootstrap.lo[s, :, c], a.bootstrap.hi[s, :, c])
        if err is not None:
            ax.errorbar(pos, point, yerr=err, fmt="none", ecolor="black", capsize=3, linewidth=1)
        top = np.where(np.isnan(a.bootstrap.hi[s, :, c]), point, a.bootstrap.hi[s, :, c])
        for px, value, y in zip(pos, point, top, strict=True):
            label = fmt(value, 1) if not np.isnan(value) else "no data"
            ax.text(px, np.nan_to_num(y) + 1.5, label, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [decoder_label(d, a.facts.suite) for d in decoders])
    ax.set_ylim(0, 112)  # bars start at zero; headroom for the value labels
    ax.set_yticks(np.arange(0, 101, 20))
    ax.set_ylabel("Outputs with APE ≤ 5% (%)")
    ax.set_xlabel(f"Decoder\n{_interval_note(a, 'error bars')}")
    ax.set_title(f"Share of outputs within 5% relative error\n{_subtitle(a)}", fontsize=11)
    ax.legend(
        title="Input condition",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
        title_fontsize=8,
    )
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def nmae_figure(a: Analysis) -> Figure:
    """Paper's affine figure: NMAE dot per decoder × condition with interval bars."""
    s = STATISTICS.index("nmae")
    decoders, conditions = a.design.decoders, a.design.conditions
    fig = Figure(
        figsize=(8.5, 1.8 + 0.32 * len(decoders) * max(len(conditions), 1)), layout="constrained"
    )
    ax = fig.add_subplot()
    y = np.arange(len(decoders))[::-1].astype(float)  # first decoder on top
    step = 0.6 / max(len(conditions), 1)
    markers = ("o", "s", "^", "D", "v", "P")
    for c, condition in enumerate(conditions):
        point = a.metrics.point[s, :, c]
        pos = y + ((len(conditions) - 1) / 2 - c) * step
        err = _errors(point, a.bootstrap.lo[s, :, c], a.bootstrap.hi[s, :, c])
        ax.errorbar(
            point,
            pos,
            xerr=err,
            fmt=markers[c % 6],
            color=_COLOURS[c % 6],
            capsize=3,
            markersize=6,
            linewidth=1.5,
            label=condition_label(condition),
        )
        right = np.where(np.isnan(a.bootstrap.hi[s, :, c]), point, a.bootstrap.hi[s, :, c])
        for value, px, py in zip(point, right, pos, strict=True):
            if not np.isnan(value):
                ax.annotate(
                    fmt(value),
                    (px, py),
                    xytext=(5, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=8,
                )
    ax.set_yticks(y, [decoder_label(d, a.facts.suite) for d in decoders])
    ax.set_xlim(left=0)  # an error measure: the axis starts at zero, never truncated
    ax.margins(x=0.12)
    ax.set_xlabel(f"NMAE (% of range U−L)\nmarkers: means · {_interval_note(a, 'bars')}")
    ax.set_title(f"Range-normalised absolute error\n{_subtitle(a)}", fontsize=11)
    ax.legend(
        title="Input condition",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
        title_fontsize=8,
    )
    ax.set_ylim(y.min() - 0.6, y.max() + 0.6)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return fig


def _node(ax: Axes, x: float, y: float, text: str, chosen: bool) -> None:
    ax.text(
        x,
        y,
        text,
        ha="center",
        va="center",
        fontsize=9,
        fontweight="bold" if chosen else "normal",
        color=_CHOSEN if chosen else "#444444",
        bbox={
            "boxstyle": "round,pad=0.35",
            "facecolor": "#DCEBF7" if chosen else "white",
            "edgecolor": _CHOSEN if chosen else "#999999",
            "linewidth": 2.0 if chosen else 0.8,
        },
    )


def decision_path_figure(path: DecisionPath, model: str, suite: str, simulated: bool) -> Figure:
    """Paper Figure 2 layout: each level partitions the chosen parent; the selected path
    is drawn with thick edges, up to three siblings around it, the rest elided as "…"."""
    depth = len(path.levels)
    fig = Figure(figsize=(10.0, 1.6 + 0.95 * (depth + 1)), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-(depth + 0.9), 0.6)
    parent_x, parent_y = 0.58, 0.0
    _node(ax, parent_x, parent_y, f"[{path.root[0]}, {path.root[1]})", chosen=True)
    ax.text(0.0, 0.0, "range", ha="left", va="center", fontsize=9, color="#444444")
    for depth_i, level in enumerate(path.levels, start=1):
        y = -float(depth_i)
        ax.text(
            0.0,
            y,
            f"round {level.round}\n{level.k}-way",
            ha="left",
            va="center",
            fontsize=9,
            color="#444444",
        )
        slots = len(level.shown)
        xs = [0.22 + 0.72 * (i + 0.5) / slots for i in range(slots)]
        for x, j, (lo, hi) in zip(xs, level.shown, level.intervals, strict=True):
            chosen = j == level.chosen
            ax.plot(
                [parent_x, x],
                [parent_y - 0.2, y + 0.2],
                color=_CHOSEN if chosen else "#BBBBBB",
                linewidth=3.0 if chosen else 0.9,
                solid_capstyle="round",
                zorder=0,
            )
            _node(ax, x, y, f"[{lo}, {hi})", chosen)
            if chosen:
                next_x = x
        if level.elided_before:
            ax.text(0.15, y, f"… ({level.elided_before})", ha="center", va="center", fontsize=9)
        if level.elided_after:
            ax.text(0.985, y, f"… ({level.elided_after})", ha="center", va="center", fontsize=9)
        parent_x, parent_y = next_x, y
    value = "no value (failed)" if path.value is None else f"ŷ = {path.value}"
    cell = "" if path.cell is None else f", cell [{path.cell[0]}, {path.cell[1]})"
    ax.text(
        0.5,
        -(depth + 0.6),
        f"{value}{cell}   ·   target y = {path.target}",
        ha="center",
        va="center",
        fontsize=10,
        fontweight="bold",
    )
    ax.set_title(
        f"Decision path of {decoder_label(path.decoder, suite)} for job {path.job}\n"
        f"{figure_subtitle(model, suite, simulated)}\n"
        "thick edges: selected path · … (n): n further alternatives not drawn",
        fontsize=10,
    )
    return fig


def save_figure(fig: Figure, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """Write ``stem.svg`` and ``stem.png`` into ``out_dir`` and return their paths."""
    svg, png = out_dir / f"{stem}.svg", out_dir / f"{stem}.png"
    title = " / ".join(t.get_text() for ax in fig.axes for t in [ax.title] if t.get_text())
    # Text stays text in the SVG (searchable, accessible); fixed hash salt and no date
    # make the SVG byte-for-byte reproducible.
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": "numericjev"}):
        fig.savefig(svg, format="svg", metadata={"Date": None, "Title": title})
    fig.savefig(png, format="png", dpi=150, metadata={"Title": title})
    return svg, png
