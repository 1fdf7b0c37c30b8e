"""Compare's paired test, for the side protocols and the sim's seed sweep (no I/O).

``compare`` judges a difference of two sides over their common units by the family
bootstrap: the difference's percentile interval and its two-sided bootstrap p-value, on
one resample of the families for both sides. This module is the one place where the
bit-prompt table (two wordings of one question) and ``sim-vs-paper --seeds`` (a tree
against direct choice) call that test, so when ``compare``'s test changes, only
:func:`paired_difference` changes with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bootstrap import (
    DEFAULT_LEVEL,
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    paired_replicates,
    percentile_interval,
    resample_weights,
)
from .multiple import bootstrap_p_values
from .paired import PairedTotals

__all__ = ["PairedDifference", "paired_difference"]


@dataclass(frozen=True, eq=False)
class PairedDifference:
    """``other − base`` per statistic × decoder × condition, shape (S, D, C) each: the point,
    its percentile interval and p-value (NaN with fewer than MIN_FAMILIES families), and
    how many common units it is over."""

    delta: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    p: np.ndarray
    units: np.ndarray
    n_families: int


def paired_difference(
    paired: PairedTotals,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> PairedDifference:
    """The paired difference of ``paired`` with compare's family-bootstrap interval and p."""
    delta = paired.delta()
    nan = np.full(delta.shape, np.nan)
    n_f = paired.base.sums.shape[0]
    if n_boot <= 0 or n_f < MIN_FAMILIES:
        return PairedDifference(delta, nan, nan, nan, paired.units(), n_f)
    reps = paired_replicates(paired, resample_weights(n_f, n_boot, seed))
    lo, hi = percentile_interval(reps, level)
    p = bootstrap_p_values(reps)
    shape = delta.shape
    return PairedDifference(
        delta, lo.reshape(shape), hi.reshape(shape), p.reshape(shape), paired.units(), n_f
    )
