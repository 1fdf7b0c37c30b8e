"""A sequential comparison's looks (``compare --sequential``): the rule replayed on the
families the looks asked, whether every cell has stopped, and what the stop saved.

The plan (``options.sequential`` in ``compare.json``: looks, seed, margin, each suite's
family order) fixes which families each look asked, so the state after any look is
recomputed from the run folders alone: the harness asks ``sequential_settled`` after each
look, and the summary adds ``sequential_lines``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from analysis.loading.comparison import load_comparison_runs
from analysis.loading.outputs import family_sort_key
from analysis.statistics.comparison import compare_runs
from analysis.statistics.family_test import DEFAULT_METHOD, as_method
from analysis.statistics.metrics import SCORED
from analysis.statistics.sequential import SequentialPath, sequential_replay
from runfolder import load_comparison, look_sizes, read_totals

__all__ = [
    "sequential_figure",
    "sequential_lines",
    "sequential_path",
    "sequential_record",
    "sequential_settled",
]


def sequential_path(folder: Path, look: int | None = None) -> tuple[SequentialPath, dict[str, Any]]:
    """The rule over the looks taken (``look``; None: as many as the folders hold), and
    the facts the summary quotes (families, requests and cost asked, projected in full)."""
    record = load_comparison(folder)
    plan = record["options"]["sequential"]
    summary = record["options"].get("summary") or {}
    metric = summary.get("metric", "mape")
    method = as_method(summary.get("test", DEFAULT_METHOD))
    runs = load_comparison_runs(folder, probabilities=metric in SCORED)
    c = compare_runs(runs, metric=metric, n_boot=0)
    s = c.suites[0]
    axis = sorted({f for r in s.runs for f in r.outputs.family_names}, key=family_sort_key)
    order = [str(f) for f in plan["order"][s.suite]]
    sizes = look_sizes(len(order), int(plan["looks"]))
    taken = look or max(
        (i + 1 for i, n in enumerate(sizes) if set(order[:n]) <= set(axis)), default=1
    )
    rows = [axis.index(f) for f in order[: sizes[taken - 1]]]
    diffs = np.concatenate([d[rows].reshape(len(rows), -1) for d in s.family_diffs], axis=1)
    counts = np.concatenate([n[rows].reshape(len(rows), -1) for n in s.family_counts], axis=1)
    # Families never asked are padded with zeros: the replay reads only the looks taken.
    pad = len(order) - len(rows)
    diffs = np.vstack([diffs, np.zeros((pad, diffs.shape[1]))])
    counts = np.vstack([counts, np.zeros((pad, counts.shape[1]))])
    path = sequential_replay(
        diffs,
        counts,
        n_looks=int(plan["looks"]),
        margin=float(plan["margin"]),
        upto=taken,
        method=method,
    )
    cells = [
        f"{model} · {dec} · {cond}"
        for model in s.models[1:]
        for dec in s.design.decoders
        for cond in s.design.conditions
    ]
    requests, cost = 0, 0.0
    for cell in record["cells"]:
        totals = read_totals(folder / cell["folder"])
        requests += totals["requests"] if totals else 0
        cost += totals["cost_usd"] if totals else 0.0
    facts = {
        "taken": taken,
        "families": len(order),
        "asked": sizes[taken - 1],
        "cells": cells,
        "requests": requests,
        "cost_usd": cost,
        "simulated": any(f.simulated for f in s.facts),
        "lower_is_better": c.lower_is_better,
    }
    return path, facts


def sequential_settled(folder: Path, look: int) -> bool:
    """Whether every cell has stopped after ``look`` (the harness's question)."""
    return sequential_path(folder, look)[0].settled


def sequential_lines(folder: Path) -> list[str]:
    """The summary's lines: each cell's look and reason, and the requests and cost asked
    against the full suite (projected at the same requests and cost per family)."""
    path, facts = sequential_path(folder)
    share = facts["asked"] / facts["families"]
    requests, cost, cells = facts["requests"], facts["cost_usd"], facts["cells"]
    lines = [
        f"Sequential: {facts['taken']} of {len(path.sizes)} looks, {facts['asked']} of "
        f"{facts['families']} families asked ({100 * share:.0f}%); requests {requests:,} "
        f"against about {requests / share:,.0f} for the full suite (saved about "
        f"{requests / share - requests:,.0f}), cost USD {cost:.4f} (saved about "
        f"USD {cost / share - cost:.4f})."
    ]
    for name, look, why, sign in zip(cells, path.stopped_at, path.reason, path.sign, strict=True):
        worse = float(sign) * (1 if facts["lower_is_better"] else -1)
        verdict = {1.0: ": worse", -1.0: ": better"}.get(worse, "")
        lines.append(f"- {name}: {why} at look {look}{verdict}")
    lines.append(
        "The verdicts of a sequential comparison are these (alpha spent over the looks, Holm "
        "at each); the table above tests the families asked at the fixed level."
    )
    return lines


def sequential_record(folder: Path) -> dict[str, Any]:
    """summary.json's ``sequential``: the looks taken, each cell's stop and its path."""
    path, facts = sequential_path(folder)
    share = facts["asked"] / facts["families"]

    def listed(a: np.ndarray | None) -> list[list[float | None]]:
        return [] if a is None else [[None if np.isnan(v) else float(v) for v in r] for r in a]

    return {
        "looks_taken": facts["taken"],
        "looks": len(path.sizes),
        "families_per_look": list(path.sizes),
        "families_asked": facts["asked"],
        "families": facts["families"],
        "requests": facts["requests"],
        "requests_full_projected": round(facts["requests"] / share),
        "cost_usd": facts["cost_usd"],
        "cost_usd_full_projected": facts["cost_usd"] / share,
        "cells": [
            {"cell": name, "stopped_at_look": int(look), "reason": str(why), "sign": int(sign)}
            for name, look, why, sign in zip(
                facts["cells"], path.stopped_at, path.reason, path.sign, strict=True
            )
        ],
        "path": {"delta": listed(path.delta), "lo": listed(path.lo), "hi": listed(path.hi)},
    }


def sequential_figure(folder: Path) -> Figure:
    """Each cell's sequential path, one small panel per cell: the difference and its 95%
    interval at each look taken (SIMULATED when the runs are), the stopping look marked."""
    path, facts = sequential_path(folder)
    cells = facts["cells"]
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
    mark = " — SIMULATED MODEL" if facts["simulated"] else ""
    fig.suptitle(
        f"Sequential path: Δ and its 95% interval per look (families asked){mark}", fontsize=8
    )
    return fig
