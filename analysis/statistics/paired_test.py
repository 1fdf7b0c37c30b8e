"""Compare's paired test, for the side protocols and the sim's seed sweep (no I/O).

``compare`` judges a difference of two sides over their common units with the verdict test
(``family_test.paired_family_test``: a cluster-robust t over families, chosen by
calibration), and prints the interval that inverts it. This module is the one place where
the bit-prompt table (two wordings of one question) and ``sim-vs-paper --seeds`` (a tree
against direct choice) call that test, so they judge a difference exactly as ``compare``
does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bootstrap import DEFAULT_LEVEL, DEFAULT_REPLICATES, DEFAULT_SEED, MIN_FAMILIES
from .family_test import paired_family_test
from .paired import PairedTotals

__all__ = ["PairedDifference", "paired_difference"]


@dataclass(frozen=True, eq=False)
class PairedDifference:
    """``other − base`` per statistic × decoder × condition, shape (S, D, C) each: the point,
    the interval that inverts compare's test and its p-value (NaN with fewer than
    MIN_FAMILIES families), and how many common units it is over."""

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
    """The paired difference of ``paired`` with compare's test: its p and the interval at
    ``level`` that excludes 0 exactly when p < 1 - level. ``n_boot`` 0 asks for no interval
    (as ``--bootstrap 0`` does everywhere); the test itself draws nothing."""
    delta = paired.delta()
    nan = np.full(delta.shape, np.nan)
    n_f = paired.base.sums.shape[0]
    if n_boot <= 0 or n_f < MIN_FAMILIES:
        return PairedDifference(delta, nan, nan, nan, paired.units(), n_f)
    flat = (n_f, delta.size)
    diffs = (paired.other.sums - paired.base.sums).reshape(flat)
    test = paired_family_test(diffs, paired.other.counts.reshape(flat), 1 - level, seed=seed)
    shape = delta.shape
    return PairedDifference(
        delta,
        test.lo.reshape(shape),
        test.hi.reshape(shape),
        test.p.reshape(shape),
        paired.units(),
        n_f,
    )
