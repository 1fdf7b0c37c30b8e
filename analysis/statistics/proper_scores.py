"""Proper scores of piecewise-uniform predictive distributions, vectorised over many (no I/O).

A distribution is a set of leaves ``[lo, hi)`` with masses ``m`` (summing to 1) owned by one
output; its CDF ``F`` is linear across each leaf, flat across any gap, 0 below the first leaf
and 1 above the last; a leaf of width 0 is a point mass. ``Leaves`` holds the leaves of many
outputs flat, sorted by (owner, lo). Every function returns one value per owner.

- CRPS, exactly: ``∫ (F(x) − 1{x ≥ y})² dx`` summed piece by piece (each piece of F is
  linear, so each integral is closed form); Gneiting & Raftery (2007) show it equals
  ``E|X − y| − ½ E|X − X'|`` (the tests check both, and numerical integration).
- Log score of the leaf holding y: ``−ln m`` and the density form ``−ln(m / w)``; a true
  leaf of mass 0 gives +inf, and callers count those apart (never floored).
- PIT ``F(y)``, the quantile function, central intervals and their interval score
  (Gneiting & Raftery 2007, eq. 43; Bracher et al. 2021).
- Per decision step: the ranked probability score and the log loss of one question.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = [
    "CENTRAL_LEVELS",
    "Leaves",
    "central_intervals",
    "crps",
    "interval_score",
    "log_scores",
    "massive",
    "pit",
    "quantiles",
    "step_log_loss",
    "step_rps",
    "step_rps_at",
]

CENTRAL_LEVELS = (0.5, 0.8, 0.9)  # the central intervals whose coverage is reported
# F within this of a quantile's level reaches it (``quantiles``): far above the float error
# of cumulative sums over ~10^5 owners (4·owner shifts: ~4·10^5 · 2^−52 ≈ 10^−10), far
# below the 0.01 steps of rounded probabilities.
TIE = 1e-9


@dataclass(frozen=True, eq=False)
class Leaves:
    """Leaves of ``n`` distributions, flat: sorted by owner, then ``lo``; not overlapping."""

    n: int  # owners 0 .. n−1 (each with at least one leaf)
    owner: np.ndarray  # int64
    lo: np.ndarray  # float64
    hi: np.ndarray
    mass: np.ndarray

    # Cached: every score reads them, and the leaves are not changed once made.
    @cached_property
    def ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Per owner, the index of its first leaf and of its last."""
        start = np.searchsorted(self.owner, np.arange(self.n))
        return start, np.r_[start[1:], len(self.owner)][: self.n] - 1

    @cached_property
    def cum_before(self) -> np.ndarray:
        """Per leaf: the mass of its owner's leaves to its left, ``F(lo)``."""
        cum = np.cumsum(self.mass)
        start = self.ends[0]
        base = (cum[start] - self.mass[start])[self.owner]
        return cum - self.mass - base

    @cached_property
    def _search_key(self) -> np.ndarray:
        # Owner k's cumulative masses shifted by 4k: one sorted array for all owners.
        return self.cum_before + self.mass + 4.0 * self.owner


def massive(leaves: Leaves) -> Leaves:
    """The same distributions without their inner leaves of mass 0 (each score reads those
    as a gap: F flat, no leaf holding y); each owner keeps its first and last leaf, the
    support's ends."""
    start, end = leaves.ends
    keep = leaves.mass > 0
    keep[start] = True
    keep[end] = True
    if keep.all():
        return leaves
    return Leaves(leaves.n, leaves.owner[keep], leaves.lo[keep], leaves.hi[keep], leaves.mass[keep])


def _segment(length: np.ndarray, start: np.ndarray, change: np.ndarray) -> np.ndarray:
    """∫₀ˡ (A + d·t/l)² dt = l·(A² + A·d + d²/3) for a linear piece from A to A + d."""
    return length * (start * start + start * change + change * change / 3.0)


def _pieces(
    lo: np.ndarray, hi: np.ndarray, f_lo: np.ndarray, f_hi: np.ndarray, y: np.ndarray
) -> np.ndarray:
    """∫ over [lo, hi) of (F − 1{x ≥ y})², F linear from f_lo to f_hi, split at y."""
    cut = np.clip(y, lo, hi)
    width = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        f_cut = np.where(width > 0, f_lo + (f_hi - f_lo) * (cut - lo) / width, f_lo)
    below = _segment(cut - lo, f_lo, f_cut - f_lo)
    above = _segment(hi - cut, 1.0 - f_cut, f_cut - f_hi)
    return below + above


def crps(leaves: Leaves, y: np.ndarray) -> np.ndarray:
    """The exact CRPS of each owner's distribution at its outcome ``y`` (same unit as y)."""
    owner, n = leaves.owner, leaves.n
    f_lo = leaves.cum_before
    f_hi = f_lo + leaves.mass
    yl = y[owner]
    total = np.zeros(n)  # (a bincount of nothing is int)
    total += np.bincount(owner, _pieces(leaves.lo, leaves.hi, f_lo, f_hi, yl), minlength=n)
    # Gaps between consecutive leaves of one owner: F flat at the mass to their left.
    # (A tree's leaves tile its range: most distributions have no gap at all.)
    gap = np.flatnonzero((owner[1:] == owner[:-1]) & (leaves.lo[1:] > leaves.hi[:-1]))
    g_lo, g_hi, g_f = leaves.hi[gap], leaves.lo[gap + 1], f_hi[gap]
    total += np.bincount(owner[gap], _pieces(g_lo, g_hi, g_f, g_f, yl[gap]), minlength=n)
    # Outside the support: F = 0 below the first leaf, 1 above the last.
    start, end = leaves.ends
    total += np.maximum(leaves.lo[start] - y, 0.0) + np.maximum(y - leaves.hi[end], 0.0)
    return total


def _true_leaf(leaves: Leaves, y: np.ndarray) -> np.ndarray:
    """Per owner, the index of the leaf holding y (lo ≤ y < hi; y = hi of the last), or -1."""
    owner = leaves.owner
    inside = (leaves.lo <= y[owner]) & (y[owner] < leaves.hi)  # a point mass holds nothing
    _, end = leaves.ends
    found = np.full(leaves.n, -1, np.int64)
    at = np.flatnonzero(inside)
    found[owner[at]] = at
    closed = (found < 0) & (y == leaves.hi[end]) & (leaves.hi[end] > leaves.lo[end])
    found[closed] = end[closed]
    return found


def log_scores(leaves: Leaves, y: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(−ln m, −ln(m / (w / scale))) of the leaf holding y; +inf where it has no mass or y
    is in no leaf. ``scale`` per owner divides the widths (the range, so densities compare
    across grids)."""
    leaf = _true_leaf(leaves, y)
    mass = np.where(leaf >= 0, leaves.mass[leaf], 0.0)
    width = np.where(leaf >= 0, (leaves.hi - leaves.lo)[leaf], 0.0) / scale
    with np.errstate(divide="ignore", invalid="ignore"):
        plain = -np.log(mass)
        density = np.where(mass > 0, -np.log(mass) + np.log(width), np.inf)
    return plain, density


def pit(leaves: Leaves, y: np.ndarray) -> np.ndarray:
    """F(y) per owner (right-continuous: a point mass at y counts)."""
    width = leaves.hi - leaves.lo
    yl = y[leaves.owner]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(width > 0, (yl - leaves.lo) / width, (yl >= leaves.lo) * 1.0)
    share = np.clip(share, 0.0, 1.0)
    return np.bincount(leaves.owner, leaves.mass * share, minlength=leaves.n).astype(float)


def quantiles(leaves: Leaves, q: float) -> np.ndarray:
    """F⁻¹(q) = inf{x : F(x) ≥ q} per owner, for 0 < q < 1; F within ``TIE`` of q counts
    as reaching it (masses come rounded to 2 decimals, so F often meets q exactly at a
    leaf's edge, and the float sums that give F miss it by a few ulps either way)."""
    before = leaves.cum_before
    _, end = leaves.ends
    at = np.searchsorted(leaves._search_key, (q - TIE) + 4.0 * np.arange(leaves.n), side="left")
    at = np.minimum(at, end)  # q above a total short of 1 by rounding: the last leaf
    mass = leaves.mass[at]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(mass > 0, (q - before[at]) / mass, 1.0)
    share = np.clip(share, 0.0, 1.0)
    return leaves.lo[at] + share * (leaves.hi[at] - leaves.lo[at])


def central_intervals(leaves: Leaves, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The central ``level`` interval [F⁻¹((1−level)/2), F⁻¹((1+level)/2)] per owner."""
    return quantiles(leaves, (1.0 - level) / 2.0), quantiles(leaves, (1.0 + level) / 2.0)


def interval_score(lower: np.ndarray, upper: np.ndarray, y: np.ndarray, level: float) -> np.ndarray:
    """The interval score of a central ``level`` interval: its width plus 2/α times the
    distance by which y falls outside it, α = 1 − level."""
    alpha = 1.0 - level
    below = np.maximum(lower - y, 0.0)
    above = np.maximum(y - upper, 0.0)
    return (upper - lower) + (2.0 / alpha) * (below + above)


def step_rps(p: np.ndarray, width: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Ranked probability score of each question: flat probabilities ``p`` (options in
    interval order, ``width`` per question), the true option's index; Σ_j (P_j − 1{j ≥ t})²
    over the k−1 inner cumulative sums, divided by k−1."""
    return step_rps_at(p, np.cumsum(width) - width, width, true)


# Options read at once by ``step_rps_at``: its temporaries stay a few MB at any run size.
RPS_BLOCK = 1 << 17


def step_rps_at(
    values: np.ndarray, start: np.ndarray, width: np.ndarray, true: np.ndarray
) -> np.ndarray:
    """``step_rps`` of questions whose probabilities are ``values[start : start + width]``:
    questions of one width at a time, as a (questions, width) block."""
    found = np.zeros(len(width))
    for k in np.unique(width).tolist():
        if k < 2:
            continue  # one option: no inner cumulative sum, RPS 0
        sel = np.flatnonzero(width == k)
        step = np.arange(k - 1)
        for at in range(0, len(sel), max(RPS_BLOCK // k, 1)):
            rows = sel[at : at + max(RPS_BLOCK // k, 1)]
            cum = np.cumsum(values[start[rows][:, None] + step[None, :]], axis=1)
            gap = cum - (step[None, :] >= true[rows][:, None])
            found[rows] = np.einsum("ij,ij->i", gap, gap) / (k - 1)
    return found


def step_log_loss(p_true: np.ndarray) -> np.ndarray:
    """−ln of the probability on the true option (+inf at 0)."""
    with np.errstate(divide="ignore"):
        return -np.log(p_true)
