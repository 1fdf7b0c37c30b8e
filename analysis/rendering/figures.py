"""Figures for ``numericjev report`` (matplotlib, object API with the Agg canvas).

Figures are built with ``matplotlib.figure.Figure`` rather than pyplot, so no global
backend or figure registry is touched (safe in tests and when called from the harness).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from analysis.loading.names import condition_label, decoder_label, domain_label
from analysis.loading.viewer.paths import DecisionPath, PathLevel
from analysis.statistics.metrics import STATISTICS
from analysis.statistics.summary import Analysis

from .markdown import fmt

__all__ = [
    "decision_path_figure",
    "domain_figure",
    "figure_subtitle",
    "nmae_figure",
    "save_figure",
    "within5_figure",
]

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")  # the paper hatches the provided condition
_CHOSEN = "#0B3C5D"


def figure_subtitle(model: str, suite: str, notice: str | None) -> str:
    """Second title line: model, suite and, when it applies, the run's notice (simulated,
    oracle)."""
    text = f"model {model} · suite {suite}"
    return text + (f" · {notice}" if notice else "")


def _subtitle(a: Analysis) -> str:
    return figure_subtitle(a.facts.model, a.facts.suite, a.facts.notice)


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
    ax.set_xticks(x, _wrapped(a))
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


def _wrapped(a: Analysis, width: int = 11) -> list[str]:
    """Decoder labels broken onto lines of about ``width`` characters, so that neighbouring
    tick labels never overlap ("Adaptive thresholds" beside "Parallel thresholds")."""
    return [textwrap.fill(decoder_label(d, a.facts.suite), width) for d in a.design.decoders]


def domain_figure(a: Analysis) -> Figure | None:
    """MAPE by domain: one panel per condition, one bar per decoder × domain (the paper's
    "MAPE by affine domain" table as a figure); None when the run has a single domain."""
    domains = a.design.domains
    if len(domains) < 2:
        return None
    decoders, conditions = a.design.decoders, a.design.conditions
    n_c = max(len(conditions), 1)
    # One row per condition: the panels stay as wide as the other figures.
    fig = Figure(
        figsize=(max(8.0, 0.3 * len(domains) * len(decoders) + 3.0), 1.4 + 2.8 * n_c),
        layout="constrained",
    )
    axes = fig.subplots(n_c, 1, sharex=True, squeeze=False)[:, 0]
    x = np.arange(len(decoders))
    width = 0.8 / len(domains)
    for c, (ax, condition) in enumerate(zip(axes, conditions, strict=False)):
        for m, domain in enumerate(domains):
            ax.bar(
                x + (m - (len(domains) - 1) / 2) * width,
                np.nan_to_num(a.metrics.mape_by_domain[:, c, m]),
                width * 0.95,
                color=_COLOURS[m % 6],
                hatch=_HATCHES[m % 6],
                edgecolor="white",
                linewidth=0.5,
                label=domain_label(domain),
            )
        ax.set_xticks(x, _wrapped(a), fontsize=9)
        ax.set_title(condition_label(condition), fontsize=10, loc="left")
        ax.set_ylabel("MAPE (%)")
        # At least 0–1%: a run without errors gets readable ticks, not 0.00, 0.01, ...
        ax.set_ylim(0, max(1.0, float(np.nanmax(a.metrics.mape_by_domain, initial=0.0)) * 1.08))
        ax.spines[["top", "right"]].set_visible(False)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(
        title="Domain", loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title_fontsize=8
    )
    fig.suptitle(f"MAPE by domain\n{_subtitle(a)}", fontsize=11)
    fig.supxlabel("Decoder · bars: means over ok outputs (no intervals)", fontsize=9)
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


_TARGET = "#D55E00"


def _node(ax: Axes, x: float, y: float, text: str, chosen: bool, target: bool = False) -> None:
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
            "edgecolor": _TARGET if target else (_CHOSEN if chosen else "#999999"),
            "linewidth": 2.4 if target or chosen else 0.8,
            "linestyle": "--" if target and not chosen else "-",
        },
    )


def _level_items(level: PathLevel) -> list[tuple[str, int]]:
    """The row of one level, left to right: ("child", j) or ("gap", hidden count)."""
    items: list[tuple[str, int]] = []
    if level.elided_before:
        items.append(("gap", level.elided_before))
    for i, j in enumerate(level.shown):
        if i and j != level.shown[i - 1] + 1:
            items.append(("gap", j - level.shown[i - 1] - 1))
        items.append(("child", j))
    if level.elided_after:
        items.append(("gap", level.elided_after))
    return items


def _node_text(lo: str, hi: str, probability: float | None) -> str:
    return f"[{lo}, {hi})" + ("" if probability is None else f"\np = {probability:.2f}")


def decision_path_figure(path: DecisionPath, model: str, suite: str, notice: str | None) -> Figure:
    """Paper Figure 2 layout: each level partitions the chosen parent; the selected path
    is drawn with thick edges, the returned probability under each interval, the target's
    interval outlined in orange (shown even when far from the chosen one), and the
    siblings not drawn counted as "… (n)"."""
    depth = len(path.levels)
    rows = [_level_items(level) for level in path.levels]
    widest = max([len(r) for r in rows] + [1])
    longest = max(
        [len(f"[{lo}, {hi})") for lv in path.levels for lo, hi in lv.intervals]
        + [len(f"[{path.root[0]}, {path.root[1]})")]
    )
    # Inches: a label column, then equal slots wide enough for the longest interval text
    # at 9 pt (about 0.075 in per character), so neighbouring boxes never touch.
    label_w, slot_w = 1.2, max(1.15, 0.08 * longest + 0.45)
    width = max(8.0, label_w + slot_w * widest + 0.3)
    fig = Figure(figsize=(width, 2.0 + 1.05 * (depth + 1)), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_xlim(0, width)
    ax.set_ylim(-(depth + 0.9), 0.6)

    def slot_x(i: int, n: int) -> float:
        span = slot_w * widest
        return label_w + (span - slot_w * n) / 2 + slot_w * (i + 0.5)

    parent_x, parent_y = label_w + slot_w * widest / 2, 0.0
    _node(ax, parent_x, parent_y, f"[{path.root[0]}, {path.root[1]})", chosen=True)
    ax.text(0.05, 0.0, "range", ha="left", va="center", fontsize=9, color="#444444")
    for depth_i, (level, items) in enumerate(zip(path.levels, rows, strict=True), start=1):
        y = -float(depth_i)
        ax.text(
            0.05,
            y,
            f"round {level.round}\n{level.k}-way",
            ha="left",
            va="center",
            fontsize=9,
            color="#444444",
        )
        next_x = parent_x
        for i, (kind, j) in enumerate(items):
            x = slot_x(i, len(items))
            if kind == "gap":
                ax.text(x, y, f"… ({j})", ha="center", va="center", fontsize=9, color="#444444")
                continue
            at = level.shown.index(j)
            lo, hi = level.intervals[at]
            chosen = j == level.chosen
            probability = level.probabilities[at] if level.probabilities else None
            ax.plot(
                [parent_x, x],
                [parent_y - 0.22, y + 0.26],
                color=_CHOSEN if chosen else "#BBBBBB",
                linewidth=3.0 if chosen else 0.9,
                solid_capstyle="round",
                zorder=0,
            )
            _node(ax, x, y, _node_text(lo, hi, probability), chosen, j == level.target)
            if chosen:
                next_x = x
        parent_x, parent_y = next_x, y
    value = "no value (failed)" if path.value is None else f"ŷ = {path.value}"
    cell = "" if path.cell is None else f", cell [{path.cell[0]}, {path.cell[1]})"
    ax.text(
        label_w + slot_w * widest / 2,
        -(depth + 0.62),
        f"{value}{cell}   ·   target y = {path.target}",
        ha="center",
        va="center",
        fontsize=10,
        fontweight="bold",
    )
    probabilities = any(p is not None for lv in path.levels for p in lv.probabilities)
    ax.set_title(
        f"Decision path of {decoder_label(path.decoder, suite)} for job {path.job}\n"
        f"{figure_subtitle(model, suite, notice)}\n"
        "thick edges: selected path · orange outline: the target's interval"
        + (" · p: probability returned" if probabilities else "")
        + " · … (n): n alternatives not drawn",
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
