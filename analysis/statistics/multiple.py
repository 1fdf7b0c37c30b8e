"""Many paired differences judged at once: bootstrap p-values and the Holm correction (no I/O).

A comparison judges every suite × decoder × condition × later model at once. At 95% each,
one in twenty true "no difference" cells would be called better or worse by chance, and a
comparison has dozens. So each cell's verdict uses a p-value corrected for the number m of
cells compared, by Holm's step-down method (Holm 1979): sort the m p-values, p(1) <= ... <=
p(m); the adjusted value of p(i) is max over j <= i of min(1, (m - j + 1) * p(j)), and a cell
is called a difference when its adjusted value is below alpha. The chance of calling any
cell wrongly stays at or below alpha whatever the dependence between cells (they share
families), and Holm rejects everything Bonferroni (m * p) does, and sometimes more.

Why not Bonferroni-widened intervals (each at 1 - alpha/m)? Their percentile ends lie
alpha/(2m) into each tail: at m = 50 that is 5 of 10,000 replicates, too few to place an
interval end. A p-value needs only the count of replicates on each side of 0.

The p-value of a cell is the percentile bootstrap's own (Davison & Hinkley 1997, §4.4):
twice the smaller share of replicates on either side of 0, with one added to each count so
that it is never 0, ``p = min(1, 2 * (min(#{d* <= 0}, #{d* >= 0}) + 1) / (B + 1))``. It is
below alpha about exactly when the (1 - alpha) percentile interval excludes 0: the 95%
brackets printed beside it agree with the uncorrected p.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bootstrap_p_values", "holm"]


def bootstrap_p_values(replicates: np.ndarray) -> np.ndarray:
    """Two-sided p-values of "difference 0" for each column of (B, K) replicates.

    NaN replicates (a resample with no common unit) are dropped; a column with none left
    gets NaN.
    """
    finite = np.isfinite(replicates)
    n = finite.sum(axis=0)
    below = ((replicates <= 0) & finite).sum(axis=0)
    above = ((replicates >= 0) & finite).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2.0 * (np.minimum(below, above) + 1) / (n + 1))
    return np.where(n > 0, p, np.nan)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values, same shape as ``p``; NaN entries are not hypotheses (they stay
    NaN and do not count in m)."""
    flat = np.asarray(p, dtype=np.float64).ravel()
    adjusted = np.full(flat.shape, np.nan)
    where = np.flatnonzero(np.isfinite(flat))
    m = len(where)
    if m:
        order = where[np.argsort(flat[where], kind="stable")]
        steps = (m - np.arange(m)) * flat[order]
        adjusted[order] = np.minimum(1.0, np.maximum.accumulate(steps))
    return adjusted.reshape(np.shape(p))
