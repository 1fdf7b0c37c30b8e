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
    """Every path's leaves (module doc), sorted by (path, lo)."""
    path, k, chosen = (np.asarray(c, np.int64) for c in (steps.path, steps.k, steps.chosen))
    n = steps.n
    start = np.cumsum(k) - k
    depth = np.arange(len(path)) - np.searchsorted(path, path)
    last = np.r_[path[1:] != path[:-1], True] if len(path) else np.zeros(0, bool)
    a = np.zeros(n, np.int64)
    b = np.asarray(steps.n_cells, np.int64).copy()
    carried = np.ones(n)  # mass of the selected path so far
    parts: list[tuple[np.ndarray, ...]] = []
    for d in range(int(depth.max(initial=-1)) + 1):
        rows = np.flatnonzero(depth == d)
        owner = path[rows]
        kk = k[rows]
        flat = np.repeat(np.arange(len(rows)), kk)
        j = np.arange(len(flat)) - np.repeat(np.cumsum(kk) - kk, kk)
        pa, pb, pk = a[owner][flat], b[owner][flat], kk[flat]
        lo = pa + (pb - pa) * j // pk
        hi = pa + (pb - pa) * (j + 1) // pk
        mass = carried[owner][flat] * steps.p[start[rows][flat] + j]
        keep = (j != chosen[rows][flat]) | last[rows][flat]
        parts.append((owner[flat][keep], lo[keep], hi[keep], mass[keep]))
        pick = chosen[rows]
        span = b[owner] - a[owner]
        new_a = a[owner] + span * pick // kk
        new_b = a[owner] + span * (pick + 1) // kk
        carried[owner] *= steps.p[start[rows] + pick]
        a[owner], b[owner] = new_a, new_b
    owner = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
    lo = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
    order = np.lexsort((lo, owner))
    hi = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.int64)
    mass = np.concatenate([p[3] for p in parts]) if parts else np.zeros(0)
    return Leaves(
        n=n,
        owner=owner[order],
        lo=lo[order].astype(np.float64),
        hi=hi[order].astype(np.float64),
        mass=mass[order],
    )
