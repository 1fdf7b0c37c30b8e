"""Intervals for the sim studies' summaries over seeds and replicates (pure).

A share of seeds or of simulated comparisons is itself a draw: ``share_interval`` gives its
exact (Clopper-Pearson) interval. A mean of per-seed differences gets a Student t interval
over the seeds (``over_seeds``): seeds are independent draws of the whole suite.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy.special import betaincinv

from analysis.statistics.student import student_ppf


def share_interval(hits: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) ``level`` interval of a share ``hits / trials``: 5 of 100
    gives 0.016-0.113, so a measured share of 0.05 does not show a rate at or below 5%."""
    tail = (1 - level) / 2
    lo = 0.0 if hits == 0 else float(betaincinv(hits, trials - hits + 1, tail))
    hi = 1.0 if hits == trials else float(betaincinv(hits + 1, trials - hits, 1 - tail))
    return lo, hi


def over_seeds(deltas: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The mean of per-seed differences and its Student t ``level`` interval over the seeds
    (mean, lo, hi; two seeds at least)."""
    n, mean = len(deltas), statistics.fmean(deltas)
    half = float(student_ppf(1 - (1 - level) / 2, n - 1)) * statistics.stdev(deltas) / math.sqrt(n)
    return mean, mean - half, mean + half
