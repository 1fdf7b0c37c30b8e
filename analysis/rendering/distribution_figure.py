"""The Distributions section's figures (ours, not in the paper): a PIT histogram per decoder
and the coverage of the central intervals against nominal (matplotlib object API, Agg).

Both draw whatever decoders ``DistributionStats`` holds, in its row order: a decoder added
to the section appears here without further code. A cell with outputs but none scored is
drawn as "n/a", never as an empty histogram or a coverage of 0.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.distributions import PIT_BINS, DistributionRow, DistributionStats
from analysis.statistics.proper_scores import CENTRAL_LEVELS
from analysis.statistics.summary import Analysis

from .figures import figure_subtitle

__all__ = ["OURS", "coverage_figure", "distribution_figures", "pit_figure"]

OURS = "ours, not in the paper"
# Okabe–Ito, as the report's other figures: distinguishable with colour-vision deficiencies.
_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_HATCHES = ("", "//", "..", "xx")
_PANELS_PER_ROW = 4


def _ordered(rows: tuple[DistributionRow, ...], key: str) -> list[str]:
    return list(dict.fromkeys(getattr(r, key) for r in rows))


def pit_figure(d: DistributionStats, model: str, suite: str, notice: str | None) -> Figure:
    """One panel per decoder: the PIT histogram of each condition as a density (a calibrated
    forecast's is flat at 1, drawn dashed); "n/a" where no output of the decoder was scored."""
    decoders, conditions = _ordered(d.rows, "decoder"), _ordered(d.rows, "condition")
    columns = min(len(decoders), _PANELS_PER_ROW)
    lines = math.ceil(len(decoders) / columns)
    fig = Figure(figsize=(2.9 * columns + 2.2, 2.5 * lines + 1.3), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False, sharey=True)
    edges = np.linspace(0.0, 1.0, PIT_BINS + 1)
    width = 1.0 / PIT_BINS / max(len(conditions), 1)
    top = 1.0
    labelled: set[str] = set()  # each condition named once in the legend
    for i, decoder in enumerate(decoders):
        ax = axes[i // columns, i % columns]
        scored = []
        for c, condition in enumerate(conditions):
            row = next(
                (r for r in d.rows if (r.decoder, r.condition) == (decoder, condition)), None
            )
            if row is None or not row.scored:
                continue
            density = np.array(row.pit_counts, dtype=float) / row.scored * PIT_BINS
            top = max(top, float(density.max()))
            ax.bar(
                edges[:-1] + c * width,
                density,
                width,
                align="edge",
                color=_COLOURS[c % len(_COLOURS)],
                hatch=_HATCHES[c % len(_HATCHES)],
                edgecolor="white",
                linewidth=0.4,
                label=None if condition in labelled else condition_label(condition),
            )
            labelled.add(condition)
            scored.append(row.scored)
        ax.axhline(1.0, color="#555555", linestyle="--", linewidth=1)
        if not scored:
            ax.text(0.5, 0.5, "n/a: no output\nwith probabilities", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="#555555")  # fmt: skip
        n = f"n = {sum(scored):,}" if scored else "n/a"
        ax.set_title(f"{decoder_label(decoder, suite)} · {n}", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.5, 1])
        ax.spines[["top", "right"]].set_visible(False)
        if i % columns == 0:
            ax.set_ylabel("Density of F(y)", fontsize=8)
        if i // columns == lines - 1:
            ax.set_xlabel("PIT = F(y)", fontsize=8)
    for j in range(len(decoders), lines * columns):  # the row's unused panels
        axes[j // columns, j % columns].set_visible(False)
    axes[0, 0].set_ylim(0, top * 1.08)
    if labelled:
        fig.legend(title="Condition", loc="outside right upper", fontsize=8, title_fontsize=8)
    fig.suptitle(
        f"PIT histograms of the predicted distributions ({OURS}; {PIT_BINS} bins; dashed: "
        "calibrated)\n" + figure_subtitle(model, suite, notice),
        fontsize=10,
    )
    return fig


def coverage_figure(d: DistributionStats, model: str, suite: str, notice: str | None) -> Figure:
    """One panel per condition: each decoder's observed coverage of the central 50/80/90%
    intervals against nominal, with 95% family-bootstrap intervals; the diagonal is nominal."""
    decoders, conditions = _ordered(d.rows, "decoder"), _ordered(d.rows, "condition")
    columns = max(len(conditions), 1)
    fig = Figure(figsize=(4.2 * columns + 2.6, 4.6), layout="constrained")
    axes = fig.subplots(1, columns, squeeze=False, sharey=True)[0]
    nominal = 100.0 * np.array(CENTRAL_LEVELS)
    dodge = 1.2  # points of one level side by side, in percentage points of the x axis
    for c, condition in enumerate(conditions):
        ax = axes[c]
        ax.plot([40, 100], [40, 100], color="#999999", linestyle="--", linewidth=1,
                label="nominal" if c == 0 else None)  # fmt: skip
        missing = []
        for i, decoder in enumerate(decoders):
            row = next(
                (r for r in d.rows if (r.decoder, r.condition) == (decoder, condition)), None
            )
            label = decoder_label(decoder, suite)
            if row is None:
                continue
            if not row.scored:
                missing.append(label)
                continue
            names = [f"cover{int(100 * a)}" for a in CENTRAL_LEVELS]
            point = np.array([100.0 * row.mean[s] for s in names])
            lo = np.array([100.0 * row.interval[s][0] for s in names])
            hi = np.array([100.0 * row.interval[s][1] for s in names])
            err = None if np.isnan(lo).all() else np.nan_to_num(np.vstack([point - lo, hi - point]))
            ax.errorbar(
                nominal + (i - (len(decoders) - 1) / 2) * dodge,
                point,
                yerr=err,
                fmt=_MARKERS[i % len(_MARKERS)],
                color=_COLOURS[i % len(_COLOURS)],
                capsize=2,
                markersize=5,
                linewidth=1.2,
                label=label if c == 0 else None,
            )
        if missing:
            ax.text(0.98, 0.03, "n/a (no probabilities):\n" + "\n".join(missing),
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7)  # fmt: skip
        ax.set_title(condition_label(condition), fontsize=9)
        ax.set_xlim(40, 100)
        ax.set_ylim(0, 102)
        ax.set_xticks(nominal)
        ax.set_xlabel("Nominal coverage of the central interval (%)", fontsize=8)
        if c == 0:
            ax.set_ylabel("Outputs whose interval held y (%)", fontsize=8)
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
    fig.legend(title="Decoder", loc="outside right upper", fontsize=8, title_fontsize=8)
    fig.suptitle(
        f"Coverage of the central intervals against nominal ({OURS}; bars: 95% family-bootstrap "
        "intervals)\n" + figure_subtitle(model, suite, notice),
        fontsize=10,
    )
    return fig


def distribution_figures(a: Analysis) -> list[tuple[str, str, Figure]]:
    """The report's PIT histograms and coverage plot as (stem, caption, figure) when the
    Distributions section scored any output; else nothing (no probabilities: no figure)."""
    p, f = a.probabilities, a.facts
    d = None if p is None else p.distributions
    if d is None or not any(r.scored for r in d.rows):
        return []
    mark = f" — {f.notice}" if f.notice else ""
    return [
        (
            "pit",
            f"PIT histogram of each decoder's predicted distribution ({OURS}){mark}",
            pit_figure(d, f.model, f.suite, f.notice),
        ),
        (
            "coverage",
            "Coverage of the central 50/80/90% intervals against nominal, with 95% "
            f"family-bootstrap intervals ({OURS}){mark}",
            coverage_figure(d, f.model, f.suite, f.notice),
        ),
    ]
