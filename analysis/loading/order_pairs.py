"""Which questions the two option orders of one case asked alike (paper: order control).

The ascending and reversed runs of one case, condition and repeat ask the same first
question; their paths may part later. A step is shared when both paths reached it with the
same form, parent interval and options (and, for bisection, the same cuts): only there can
their two returned distributions be averaged label by label. No I/O.
"""

from __future__ import annotations

import numpy as np

from .interval_steps import CUTS, FORMS

__all__ = ["pair_steps"]


def pair_steps(
    unit: dict[str, np.ndarray],
    step: dict[str, np.ndarray],
    cuts: dict[int, tuple[int, ...]],
    order_names: tuple[str, ...],
    orders: tuple[str, str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first-order unit, second-order unit, depth) of every shared step, as arrays.

    Writes ``step["pair"]``: ``2·pair id + side`` (side 0: the first of ``orders``) at each
    shared step, leaving -1 elsewhere. ``unit`` and ``step`` are ``PathTable`` columns.
    """
    codes = [order_names.index(o) if o in order_names else -2 for o in orders]
    keys = np.stack([unit["case"], unit["condition"], unit["repeat"], unit["decoder"]], axis=1)
    if len(keys):
        group = np.unique(keys, axis=0, return_inverse=True)[1].reshape(-1)
    else:
        group = np.empty(0, np.int64)
    ends = []
    for code in codes:
        side = np.full(int(group.max(initial=-1)) + 1, -1, np.int64)
        rows = np.flatnonzero(unit["order"] == code)
        side[group[rows]] = rows
        ends.append(side)
    both = (ends[0] >= 0) & (ends[1] >= 0)
    a, b = ends[0][both], ends[1][both]
    # Every depth both paths reached, then the steps whose question is the same.
    reach = np.minimum(unit["step_count"][a], unit["step_count"][b])
    owner = np.repeat(np.arange(len(a)), reach)
    depth = np.arange(len(owner)) - np.repeat(np.cumsum(reach) - reach, reach)
    ia = unit["step_start"][a][owner] + depth
    ib = unit["step_start"][b][owner] + depth
    same = np.ones(len(owner), bool)
    for name in ("form", "a", "b", "k"):
        same &= step[name][ia] == step[name][ib]
    bisection = same & (step["form"][ia] == FORMS.index(CUTS))
    for i in np.flatnonzero(bisection):  # only probabilistic-bisection steps carry cuts
        if cuts.get(int(ia[i])) != cuts.get(int(ib[i])):
            same[i] = False
    ia, ib, owner, depth = ia[same], ib[same], owner[same], depth[same]
    pair = np.arange(len(ia))
    step["pair"][ia], step["pair"][ib] = 2 * pair, 2 * pair + 1
    return a[owner], b[owner], depth + 1
