"""The reliability diagram of the Probabilities section (matplotlib object API, Agg)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from analysis.loading.names import condition_label, decoder_label
from analysis.statistics.calibration import N_BINS, CalibrationRow
from analysis.statistics.probabilities import ProbabilityStats
from analysis.statistics.summary import Analysis

from .figures import figure_subtitle

__all__ = ["reliability_figure", "reliability_figures"]

_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _curve(row: CalibrationRow) -> tuple[np.ndarray, np.ndarray]:
    rel = row.reliability
    confidence, accuracy = np.array(rel.confidence), np.array(rel.accuracy)
    filled = np.array(rel.count) > 0
    return confidence[filled], accuracy[filled]


def reliability_figure(p: ProbabilityStats, model: str, suite: str, notice: str | None) -> Figure:
    """One panel per condition: accuracy against mean p(selected) per bin and decoder, the
    diagonal of perfect calibration, and below it the share of questions per bin."""
    decoders = list(dict.fromkeys(r.decoder for r in p.calibration))
    columns = max(len(p.pooled), 1)
    fig = Figure(figsize=(4.6 * columns + 2.4, 6.0), layout="constrained")
    grid = fig.add_gridspec(2, columns, height_ratios=(3, 1))
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    for c, pooled in enumerate(p.pooled):
        ax = fig.add_subplot(grid[0, c])
        ax.plot(
            [0, 1],
            [0, 1],
            color="#999999",
            linestyle="--",
            linewidth=1,
            label="calibrated" if c == 0 else None,
        )
        eces = []
        for i, decoder in enumerate(decoders):
            row = next(
                (
                    r
                    for r in p.calibration
                    if (r.decoder, r.condition) == (decoder, pooled.condition)
                ),
                None,
            )
            if row is None or row.n == 0:
                continue
            x, y = _curve(row)
            label = decoder_label(decoder, suite)
            ax.plot(
                x,
                y,
                marker=_MARKERS[i % len(_MARKERS)],
                color=_COLOURS[i % len(_COLOURS)],
                linewidth=1.2,
                markersize=5,
                label=label if c == 0 else None,
            )
            eces.append(f"{label}: {100 * row.reliability.ece:.1f}")
        ax.text(
            0.98,
            0.03,
            "ECE (pp)\n" + "\n".join(eces),
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            bbox={"facecolor": "white", "edgecolor": "#CCCCCC", "alpha": 0.9},
        )
        ax.set_xlim(0, 1.02)  # a probability of 1 sits on the edge
        ax.set_ylim(0, 1.02)
        ax.set_title(
            f"{condition_label(pooled.condition)} · all decoders: ECE "
            f"{100 * pooled.reliability.ece:.1f} pp, n = {pooled.reliability.n:,}",
            fontsize=9,
        )
        if c == 0:
            ax.set_ylabel("Share whose selected\ninterval held y")
        ax.grid(alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        hist = fig.add_subplot(grid[1, c], sharex=ax)
        counts = np.array(pooled.reliability.count, dtype=float)
        share = counts / counts.sum() if counts.sum() else counts
        hist.bar(edges[:-1], share, 1.0 / N_BINS, align="edge", color="#BBBBBB", edgecolor="white")
        hist.set_ylim(0, 1)
        if c == 0:
            hist.set_ylabel("Share of\nquestions", fontsize=8)
        hist.set_xlabel(f"p(selected option), renormalised; {N_BINS} equal bins", fontsize=9)
        hist.spines[["top", "right"]].set_visible(False)
    fig.legend(title="Decoder", loc="outside right upper", fontsize=8, title_fontsize=8)
    fig.suptitle(
        "Reliability of the returned probabilities (interval questions with an option "
        "holding y)\n" + figure_subtitle(model, suite, notice),
        fontsize=11,
    )
    return fig


def reliability_figures(a: Analysis) -> list[tuple[str, str, Figure]]:
    """The report's reliability diagram as (stem, caption, figure), when ``a`` has the
    Probabilities section and its answers carry probabilities; else nothing."""
    p, f = a.probabilities, a.facts
    if p is None or not p.available or not p.pooled:
        return []
    caption = "Reliability of the returned probability of the selected option"
    return [("reliability", caption, reliability_figure(p, f.model, f.suite, f.notice))]
