"""A predicted distribution moved to log10|x|, for the CRPS on a log scale (no I/O).

For suites whose targets span orders of magnitude (the affine suite's ×0.01 to ×10⁴
domains), an error of one cell means a different thing on each grid; the CRPS of log10|y|
is in decades whatever the grid, and reduces for a point mass to |log10 ŷ − log10 y|, the
LAR's |ln(ŷ/y)| over ln 10. What is done, exactly:

- each leaf ``[lo, hi)`` in cells becomes the values ``[L + ε·lo, L + ε·hi)``;
- **sign**: values are folded, x -> |x|; a leaf straddling 0 is cut at 0 and its mass
  shared between the two parts by their widths. The log score of magnitude cannot see a
  sign error (a mass at −5 scores as one at +5): the CRPS on y still does;
- **near 0**: a part's ends |x| are floored at ε/2, half a cell, the nearest a cell centre
  comes to 0 on a grid whose edges include 0 (the affine suite's): a part reaching below
  ε/2 starts at log10(ε/2), and a part wholly below it is a point mass there;
- each part's mass is spread uniformly over ``[log10 max(|a|, ε/2), log10 max(|b|, ε/2))``
  (uniform in log10|x|, not in x: the same resolution statement as the trees', on this
  scale); parts that now overlap (a fold puts −5 and +5 together) are added as densities,
  so the result is again piecewise uniform with disjoint leaves;
- y, scored at its cell's centre as on the linear scale, becomes log10 max(|y|, ε/2).
"""

from __future__ import annotations

import numpy as np

from .proper_scores import Leaves

__all__ = ["log_leaves", "log_target"]


def log_target(y_cells: np.ndarray, lower: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log10 max(|y|, ε/2) of y in cells (module doc)."""
    return np.log10(np.maximum(np.abs(lower + eps * y_cells), eps / 2.0))


def log_leaves(leaves: Leaves, lower: np.ndarray, eps: np.ndarray) -> Leaves:
    """The owners' distributions on log10|x| (module doc); ``lower``, ``eps`` per owner."""
    owner = leaves.owner
    base, step = lower[owner], eps[owner]
    a, b = base + step * leaves.lo, base + step * leaves.hi
    # An owner whose values keep one sign maps monotonically: its leaves stay disjoint and
    # only need their order (reversed where negative). Only owners with values on both
    # sides of 0 fold parts onto each other and need the densities added (``_added``).
    positive = np.bincount(owner, b > 0.0, leaves.n) > 0
    mixed = (np.bincount(owner, a < 0.0, leaves.n) > 0) & positive
    one_sign = ~mixed[owner] & (leaves.mass > 0)
    folded = _added_parts(leaves.n, owner[~one_sign], a[~one_sign], b[~one_sign],
                          leaves.mass[~one_sign], step[~one_sign])  # fmt: skip
    o, lo_v, hi_v, m = owner[one_sign], a[one_sign], b[one_sign], leaves.mass[one_sign]
    floor = step[one_sign] / 2.0
    lo = np.log10(np.maximum(np.minimum(np.abs(lo_v), np.abs(hi_v)), floor))
    hi = np.log10(np.maximum(np.maximum(np.abs(lo_v), np.abs(hi_v)), floor))
    # Within a negative owner the leaves come in decreasing |x|: reverse them there.
    negative = np.flatnonzero(~positive[o])
    if len(negative):
        on = o[negative]
        first = np.searchsorted(o, on)
        last = np.searchsorted(o, on, side="right") - 1
        order = np.arange(len(o))
        order[first + last - negative] = negative
        o, lo, hi, m = o[order], lo[order], hi[order], m[order]
    if not len(folded.owner):
        return Leaves(leaves.n, o, lo, hi, m)
    # Owners are in one part or the other: a stable sort by owner merges the two runs.
    owners = np.r_[o, folded.owner]
    merged = np.argsort(owners, kind="stable")
    return Leaves(
        n=leaves.n,
        owner=owners[merged],
        lo=np.r_[lo, folded.lo][merged],
        hi=np.r_[hi, folded.hi][merged],
        mass=np.r_[m, folded.mass][merged],
    )


def _added_parts(
    n: int, owner: np.ndarray, a: np.ndarray, b: np.ndarray, mass: np.ndarray, step: np.ndarray
) -> Leaves:
    """Values ``[a, b)`` folded to log10|x| (module doc) and their densities added."""
    # Cut a leaf straddling 0: the negative part first, its share of the mass by width.
    cut = (a < 0.0) & (b > 0.0)
    width = b - a
    share = np.where(cut, -a / np.where(cut, width, 1.0), 1.0)
    owner = np.r_[owner, owner[cut]]
    lo_v, hi_v = np.r_[a, np.zeros(int(cut.sum()))], np.r_[np.where(cut, 0.0, b), b[cut]]
    mass = np.r_[mass * share, mass[cut] * (1.0 - share[cut])]
    floor = np.r_[step, step[cut]] / 2.0
    small = np.minimum(np.abs(lo_v), np.abs(hi_v))
    large = np.maximum(np.abs(lo_v), np.abs(hi_v))
    lo = np.log10(np.maximum(small, floor))
    hi = np.log10(np.maximum(large, floor))
    return _added(n, owner, lo, hi, mass)


def _added(n: int, owner: np.ndarray, lo: np.ndarray, hi: np.ndarray, mass: np.ndarray) -> Leaves:
    """Possibly overlapping uniform parts (and point masses, lo == hi) as disjoint leaves:
    densities added between consecutive breakpoints of each owner."""
    spread = (hi > lo) & (mass > 0)
    density = np.where(spread, mass / np.where(spread, hi - lo, 1.0), 0.0)
    # +density where a part starts, −density where it ends, per owner in order of x.
    at = np.r_[lo[spread], hi[spread]]
    who = np.r_[owner[spread], owner[spread]]
    change = np.r_[density[spread], -density[spread]]
    order = np.lexsort((at, who))
    at, who, change = at[order], who[order], change[order]
    level = np.cumsum(change)
    if len(who):
        first = np.searchsorted(who, who)  # each event's owner's first event
        level -= (level - change)[first]
    same = np.r_[who[1:] == who[:-1], False] if len(who) else np.zeros(0, bool)
    seg = np.flatnonzero(same & (np.r_[at[1:], 0.0] > at) & (level > 0))
    seg_lo, seg_hi = at[seg], at[seg + 1]
    seg_mass = level[seg] * (seg_hi - seg_lo)
    points = (hi <= lo) & (mass > 0)
    all_owner = np.r_[who[seg], owner[points]]
    all_lo, all_hi = np.r_[seg_lo, lo[points]], np.r_[seg_hi, lo[points]]
    all_mass = np.r_[seg_mass, mass[points]]
    keep = np.lexsort((all_hi, all_lo, all_owner))
    # The segments' masses, summed from densities, may miss the total by rounding: rescale.
    total = np.bincount(all_owner, all_mass, minlength=n)
    scale = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
    return Leaves(
        n=n,
        owner=all_owner[keep],
        lo=all_lo[keep],
        hi=all_hi[keep],
        mass=(all_mass * scale[all_owner])[keep],
    )
