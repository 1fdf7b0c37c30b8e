"""A sequential comparison's outcome shown (``compare --sequential``): the line that opens
the summary (families, requests and cost saved), each cell's stop, summary.json's
``sequential`` and the figure of each cell's path. The outcome is decided in
``analysis.statistics`` (``Comparison.sequential``); nothing here judges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from analysis.statistics.looks import SequentialOutcome

from .json_numbers import number

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "saved_line",
    "sequential_figure",
    "sequential_lines",
    "sequential_record",
]


def saved_line(o: SequentialOutcome) -> str:
    """The summary's first line: where the rule stopped, and the families, requests and cost
    it saved against the full suite (projected at the same requests and cost per family)."""
    asked = (
        f"{o.asked} of {o.families} families asked ({100 * o.share:.0f}%); requests "
        f"{o.requests:,} against about {o.requests_full:,.0f} for the full suite (saved about "
        f"{o.requests_full - o.requests:,.0f}), cost USD {o.cost_usd:.4f} (saved about "
        f"USD {o.cost_full - o.cost_usd:.4f})"
    )
    if o.stopped_early:
        return (
            f"Sequential: finished early — every cell stopped by look {o.taken} of {o.looks}: "
            f"{asked}. The {o.families - o.asked} families not asked were left on purpose."
        )
    if o.settled:
        return f"Sequential: ran to its last look ({o.looks} of {o.looks}): {asked}."
    return (
        f"Sequential: still asking, {o.taken} of {o.looks} looks taken: {asked}; "
        "`numericjev resume` continues it."
    )


def sequential_lines(o: SequentialOutcome) -> list[str]:
    """Each cell's look and reason, and how to read them against the table."""
    lines = []
    for i, (name, look, why) in enumerate(
        zip(o.cells, o.path.stopped_at, o.path.reason, strict=True)
    ):
        called = o.called(i)
        lines.append(f"- {name}: {why} at look {look}" + (f": {called}" if called else ""))
    lines.append(
        "The verdicts of a sequential comparison are these (alpha spent over the looks, Holm "
        "at each); the table above tests the families asked at the fixed level."
    )
    return lines


def sequential_record(o: SequentialOutcome) -> dict[str, Any]:
    """summary.json's ``sequential``: the looks taken, what was saved, each cell's stop and
    its path."""

    def listed(a: np.ndarray | None) -> list[list[float | None]]:
        return [] if a is None else [[number(v) for v in r] for r in a]

    return {
        "stopped_early": o.stopped_early,
        "looks_taken": o.taken,
        "looks": o.looks,
        "families_per_look": list(o.path.sizes),
        "families_asked": o.asked,
        "families": o.families,
        "families_saved": o.families - o.asked,
        "requests": o.requests,
        "requests_full_projected": round(o.requests_full),
        "requests_saved_projected": round(o.requests_full - o.requests),
        "cost_usd": o.cost_usd,
        "cost_usd_full_projected": o.cost_full,
        "cost_usd_saved_projected": o.cost_full - o.cost_usd,
        "cells": [
            {"cell": name, "stopped_at_look": int(look), "reason": why, "sign": int(sign)}
            for name, look, why, sign in zip(
                o.cells, o.path.stopped_at, o.path.reason, o.path.sign, strict=True
            )
        ],
        "path": {
            "delta": listed(o.path.delta),
            "lo": listed(o.path.lo),
            "hi": listed(o.path.hi),
        },
    }


def sequential_figure(o: SequentialOutcome, simulated: bool) -> Figure:
    """Each cell's sequential path, one small panel per cell: the difference and its 95%
    interval at each look taken (SIMULATED when the runs are), the stopping look marked."""
    from matplotlib.figure import Figure

    path, cells = o.path, o.cells
    delta, lo, hi = path.delta, path.lo, path.hi
    assert delta is not None and lo is not None and hi is not None
    cols = min(len(cells), 4)
    rows = -(-len(cells) // cols)
    fig = Figure(figsize=(2.2 * cols, 1.5 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    x = np.array(path.sizes[: len(delta)])
    for i, name in enumerate(cells):
        ax = axes[i // cols][i % cols]
        ax.axhline(0, color="0.6", linewidth=0.8)
        shown = x <= path.sizes[int(path.stopped_at[i]) - 1]
        err = np.vstack([delta[shown, i] - lo[shown, i], hi[shown, i] - delta[shown, i]])
        # An unbounded interval (the bootstrap-t at few families) has no bar to draw.
        bars = np.where(np.isfinite(err), err, 0.0)
        ax.errorbar(x[shown], delta[shown, i], yerr=bars, fmt="o-", markersize=3)
        why = str(path.reason[i])
        ax.set_title(f"{name.split(' · ', 1)[1]}\n{why} at look {path.stopped_at[i]}", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.set_xticks(x)
    for j in range(len(cells), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    mark = " — SIMULATED MODEL" if simulated else ""
    fig.suptitle(
        f"Sequential path: Δ and its 95% interval per look (families asked){mark}", fontsize=8
    )
    return fig
