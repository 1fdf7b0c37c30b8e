"""Many paired differences judged at once: the Holm correction, and the old bootstrap p (no I/O).

A comparison judges every suite × decoder × condition × later model at once. At 95% each,
one in twenty true "no difference" cells would be called better or worse by chance, and a
comparison has dozens. So each cell's verdict uses a p-value corrected for the number m of
cells compared, by Holm's step-down method (Holm 1979): sort the m p-values, p(1) <= ... <=
p(m); the adjusted value of p(i) is max over j <= i of min(1, (m - j + 1) * p(j)), and a cell
is called a difference when its adjusted value is below alpha. The chance of calling any
cell wrongly stays at or below alpha whatever the dependence between cells (they share
families), and Holm rejects everything Bonferroni (m * p) does, and sometimes more.

Each cell's p-value is the verdict test's (``family_test.paired_family_test``: a
cluster-robust t over families, chosen by calibration, whose interval excludes 0 exactly
when p < alpha). ``bootstrap_p_values`` is the percentile bootstrap's p (Davison & Hinkley
1997, §4.4), ``p = min(1, 2 * (min(#{d* <= 0}, #{d* >= 0}) + 1) / (B + 1))``: compare's p
before the calibration study, kept as that study's baseline (it called a difference in
13-38% of same-model comparisons after Holm; docs/comparing.md).
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
