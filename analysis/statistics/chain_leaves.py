"""Index digits', index bits' and the threshold CDFs' predicted distributions (no I/O).

Units are grid cells, as for the trees (``predictive``); y's cell is ``[c, c+1)``.

- **Index digits** (the grid index q in decimal, D = len(str(N−1)) digits, each asked given
  the ones before): the chain is a tree of K = 10 over ``[0, 10^D)``, whose step d splits
  its parent into ten children of 10^(D−d) cells, child j holding the indices whose d-th
  digit is j. Resolution as the tree's: the followed path's per-position distributions;
  each digit not followed is a leaf uniform over its span, with mass (the product of the
  followed digits' probabilities above it) × (its own probability); the last digit's
  options are single cells. Indices q ≥ N (a 100-cell grid has none; 1000 on 1001 cells
  does) keep their mass: the decoder reads them out too, above U.
- **Index bits** (B = bit_length(N−1) independent bits of q, all asked at once): the same
  chain, heaviest bit first, K = 2 over ``[0, 2^B)``: the mass of a bit not followed is
  exact under the independence the decoder assumes (the lighter bits' probabilities sum to
  1 over its span), and only its spread within the span is taken as uniform. Codes q ≥ N
  keep their mass, as the decoder keeps them.
- **Threshold CDFs** (``parallel_thresholds``, ``threshold_cdf``: the N − 1 answers
  ``p_i = P(x ≤ L + (i−1)·eps)``, i.e. ``F`` at the cell edges): projected onto a
  nondecreasing sequence in [0, 1] (equal-weight isotonic regression, ``scipy``'s
  ``isotonic_regression``, then clipped, as the harness projects them), with F(0) = 0 and
  F(N) = 1; cell i gets mass ``f_{i+1} − f_i``, uniform over the cell (the same resolution
  as direct choice).

Only whole chains are built: every position answered with probabilities (the rest are n/a).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from analysis.loading.probabilities.chain_units import (
    BITS,
    DIGITS,
    THRESHOLDS,
    ChainLog,
    chain_positions,
)

from .predictive import PathSteps, tree_leaves
from .proper_scores import Leaves

__all__ = ["chain_leaves", "chain_steps", "concat_leaves", "projected_masses", "whole_chains"]


def whole_chains(chains: ChainLog) -> np.ndarray:
    """Per chain unit: True when every position was answered with probabilities."""
    u = chains.units
    expected = chain_positions(u["kind"], u["n_cells"])
    answered = np.bincount(chains.r_unit, minlength=len(chains))
    return (answered == expected) & (expected > 0)


def projected_masses(raw: np.ndarray) -> np.ndarray:
    """The N masses of the N − 1 raw threshold answers (module doc)."""
    f = np.clip(isotonic_regression(raw).x, 0.0, 1.0) if len(raw) else raw
    return np.diff(np.r_[0.0, f, 1.0])


def chain_leaves(chains: ChainLog, units: np.ndarray) -> Leaves:
    """The leaves of chain ``units`` (whole ones: ``whole_chains``), owners 0 .. len−1 in
    the order given, sorted by (owner, lo)."""
    kind = chains.units["kind"][units]
    parts: list[tuple[np.ndarray, Leaves]] = []
    for tree_kind, k in ((DIGITS, 10), (BITS, 2)):
        owners = np.flatnonzero(kind == tree_kind)
        if len(owners):
            parts.append((owners, _tree(chains, units[owners], tree_kind, k)))
    owners = np.flatnonzero(kind == THRESHOLDS)
    if len(owners):
        parts.append((owners, _thresholds(chains, units[owners])))
    return concat_leaves(parts, len(units))


def concat_leaves(parts: list[tuple[np.ndarray, Leaves]], n: int) -> Leaves:
    """One Leaves of ``n`` owners from parts, each (its owners' numbers, its leaves)."""
    if not parts:
        empty = np.zeros(0)
        return Leaves(n, np.zeros(0, np.int64), empty, empty, empty)
    owner = np.concatenate([o[leaves.owner] for o, leaves in parts])
    lo = np.concatenate([leaves.lo for _, leaves in parts])
    # Each part is sorted by (owner, lo) and no owner is in two parts: a stable sort by
    # owner merges them.
    order = np.argsort(owner, kind="stable")
    return Leaves(
        n=n,
        owner=owner[order],
        lo=lo[order],
        hi=np.concatenate([leaves.hi for _, leaves in parts])[order],
        mass=np.concatenate([leaves.mass for _, leaves in parts])[order],
    )


def _rows_of(chains: ChainLog, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The answer rows of ``units`` and each one's owner (its place in ``units``)."""
    rank = np.full(len(chains), -1, np.int64)
    rank[units] = np.arange(len(units))
    rows = np.flatnonzero(rank[chains.r_unit] >= 0)
    return rows, rank[chains.r_unit[rows]]


def _tree(chains: ChainLog, units: np.ndarray, kind: int, k: int) -> Leaves:
    """Digits or bits as a tree of K = k over ``[0, k^positions)`` (module doc)."""
    rows, owner = _rows_of(chains, units)
    position = chains.r_position[rows]
    # Chain order: digits by position (1 = highest), bits by weight, heaviest first.
    order = np.lexsort((position if kind == DIGITS else -position, owner))
    rows, owner = rows[order], owner[order]
    n_cells = chains.units["n_cells"][units]
    count = chain_positions(np.full(len(units), kind), n_cells)
    at = (chains.r_start[rows][:, None] + np.arange(k)[None, :]).ravel()
    return tree_leaves(
        PathSteps(
            n=len(units),
            n_cells=k**count,
            path=owner,
            k=np.full(len(rows), k, np.int64),
            chosen=chains.r_chosen[rows],
            p=chains.p[at],
        )
    )


def _thresholds(chains: ChainLog, units: np.ndarray) -> Leaves:
    """Each unit's projected threshold CDF, one leaf per cell (module doc)."""
    rows, owner = _rows_of(chains, units)
    rows = rows[np.lexsort((chains.r_position[rows], owner))]
    raw = chains.p[chains.r_start[rows]]  # P(yes) = P(x <= z_i), renormalised over yes/no
    n_cells = chains.units["n_cells"][units].astype(np.int64)
    start = np.r_[0, np.cumsum(n_cells - 1)]
    masses = [projected_masses(raw[start[i] : start[i + 1]]) for i in range(len(units))]
    lo = np.concatenate([np.arange(n, dtype=np.float64) for n in n_cells.tolist()])
    return Leaves(
        n=len(units),
        owner=np.repeat(np.arange(len(units)), n_cells),
        lo=lo,
        hi=lo + 1.0,
        mass=np.concatenate(masses) if masses else np.zeros(0),
    )


def chain_steps(
    chains: ChainLog, keep: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits' and bits' questions with an option holding y, as decision steps: per
    row its unit, depth (digits: the position; bits: 1 for the heaviest), the option
    holding y (the digit or bit of y's cell) and its options' start in ``chains.p`` (width
    10 or 2). A digit holds y only while the digits read before it are y's (as a tree's
    option after the path left y's interval: none does); a bit always has one."""
    u = chains.units
    unit, position = chains.r_unit, chains.r_position
    kind = u["kind"][unit]
    y = np.floor(u["target_cells"][unit])
    inside = np.isfinite(y) & (y >= 0) & (y < u["n_cells"][unit])
    if keep is not None:
        inside &= keep[unit]
    cell = np.where(inside, y, 0).astype(np.int64)
    count = chain_positions(u["kind"], u["n_cells"])[unit]
    index = u["index"][unit]
    # Digits: y's digit at the position, while the higher digits read are y's.
    power = np.power(10, np.clip(count - position, 0, 18))
    same_prefix = (index >= 0) & (index // (power * 10) == cell // (power * 10))
    digit = np.where(same_prefix, (cell // power) % 10, -1)
    bit = (cell >> np.clip(position, 0, 62)) & 1
    truth = np.where(kind == DIGITS, digit, np.where(kind == BITS, bit, -1))
    depth = np.where(kind == DIGITS, position, count - position)
    rows = np.flatnonzero(inside & (truth >= 0) & (kind != THRESHOLDS))
    return unit[rows], depth[rows], truth[rows], chains.r_start[rows]
