"""A tree decoder's predicted distribution, rebuilt from its path's step distributions (no I/O).

Resolution: the leaves of the partition that was asked. Each step partitions its parent
``[a, b)`` into k children by Algorithm 1 (``t_j = a + floor((b−a)·j/k)``; direct choice
is one step over the N cells). The followed path's child carries on; every other child is
an unexpanded leaf, uniform over its interval, with mass (product of the selected options'
probabilities above it) × (its own probability). The last step's selected child is a leaf
too. Units are in grid cells. Only whole paths count: every step answered with
probabilities, options in interval order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .proper_scores import Leaves

__all__ = ["PathSteps", "tree_leaves"]


@dataclass(frozen=True, eq=False)
class PathSteps:
    """The steps of ``n`` paths, one row per step, sorted by (path, depth 1, 2, ...)."""

    n: int
    n_cells: np.ndarray  # per path: the grid's N (the root is [0, N))
    path: np.ndarray  # per step: its path 0 .. n−1
    k: np.ndarray  # per step: options
    chosen: np.ndarray  # per step: the selected option's index (interval order)
    p: np.ndarray  # flat: each step's k renormalised probabilities, in interval order


def tree_leaves(steps: PathSteps) -> Leaves:
    """Every path's leaves (module doc) but the inner ones of mass 0, sorted by (path, lo)."""
    path, k, chosen = (np.asarray(c, np.int64) for c in (steps.path, steps.k, steps.chosen))
    n, n_steps = steps.n, len(path)
    first = np.searchsorted(path, path)  # each step's path's first step
    depth = np.arange(n_steps) - first
    last = np.r_[path[1:] != path[:-1], True] if n_steps else np.zeros(0, bool)
    # Per step: its parent interval [a, b) and the mass carried down to it, depth by depth.
    a = np.zeros(n_steps, np.int64)
    b = np.zeros(n_steps, np.int64)
    carried = np.ones(n_steps)
    start = np.cumsum(k) - k
    picked = steps.p[start + chosen] if n_steps else np.zeros(0)
    root = depth == 0
    b[root] = np.asarray(steps.n_cells, np.int64)[path[root]]
    for d in range(1, int(depth.max(initial=0)) + 1):
        at = np.flatnonzero(depth == d)
        up = at - 1  # the step above, on the same path
        span = b[up] - a[up]
        a[at] = a[up] + span * chosen[up] // k[up]
        b[at] = a[up] + span * (chosen[up] + 1) // k[up]
        carried[at] = carried[up] * picked[up]
    # Every child of every step; the followed child of a step that is not the last is no
    # leaf, and a leaf of mass 0 is left out (``proper_scores.massive``: every score reads
    # it as a gap; 9 in 10 of a sim run's) unless it is its step's first or last child, so
    # each path keeps its support's ends. Sorted by lo without a sort: left of the path
    # come each depth's left siblings (shallow first), then the last step's children, then
    # the right siblings (deep first).
    kept = np.where(last, k, k - 1)
    total = np.bincount(path, kept, minlength=n).astype(np.int64)
    base = np.cumsum(total) - total
    left = np.where(last, 0, chosen)
    right = np.where(last, 0, k - 1 - chosen)
    left_before = np.cumsum(left) - left
    left_before -= left_before[first]
    right_before = np.cumsum(right) - right
    right_before -= right_before[first]
    step_of = np.repeat(np.arange(n_steps), k)
    j = np.arange(len(step_of)) - start[step_of]
    mass = carried[step_of] * steps.p
    leaf = j != np.where(last, -1, chosen)[step_of]
    held = np.flatnonzero(leaf & ((mass > 0) | (j == 0) | (j == k[step_of] - 1)))
    s, j, mass = step_of[held], j[held], mass[held]
    k_of, home = k[s], base[path[s]]
    on_left = j < np.where(last, k, chosen)[s]
    place = np.where(
        on_left, home + left_before[s] + j, home + total[path[s]] - right_before[s] - k_of + j
    )
    # Each held leaf's place among the held: its place among all leaves, ranked.
    present = np.zeros(int(total.sum()), bool)
    present[place] = True
    order = np.empty(len(j), np.int64)
    order[np.cumsum(present)[place] - 1] = np.arange(len(j))
    # Algorithm 1's bounds a + floor((b − a)·j/k) in float64: exact while (b − a)·j < 2^52.
    a_of, span = a[s].astype(np.float64), (b - a)[s].astype(np.float64)
    lo = a_of + np.floor(span * j / k_of)
    hi = a_of + np.floor(span * (j + 1) / k_of)
    return Leaves(
        n=n,
        owner=np.repeat(np.arange(n), np.bincount(path[s], minlength=n)),
        lo=lo[order],
        hi=hi[order],
        mass=mass[order],
    )
