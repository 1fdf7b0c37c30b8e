"""Outside the measured promise: a called cell whose two sides' spreads differ a lot (no I/O).

The verdict test's promise (``family_test.PROMISES``) holds when the two models are
exchangeable within families, and, as measured, on equal-mean pairs whose spreads differ
moderately (steady k=2, erratic); it does not where one model is several times steadier
than the other at the same mean (steady k=9), and no test of a mean can promise that
(Bahadur & Savage 1956). A cell's two sides show how far apart their spreads are: the ratio
of the standard deviations of their family means, the larger over the smaller. A cell called
better or worse with a ratio at or above ``SPREAD_FLAG`` carries a note saying it lies
outside the measured promise. The threshold and the rates it gives (how many of steady
k=9's false calls it marks, how many A/A cells) are measured by
``benchmarks/bench_spread_flag.py`` (docs/comparing.md).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["SPREAD_FLAG", "outside_promise", "spread_ratio"]

SPREAD_FLAG = 3.0  # docs/comparing.md, "Outside the promise": the measured rates at 2, 3 and 4


def spread_ratio(base_sums: np.ndarray, other_sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per column of (F, K) family sums over the same counts: the larger side's standard
    deviation of family means over the smaller's (inf where only one side varies, NaN where
    neither does or there are fewer than two families with a unit)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = base_sums / counts, other_sums / counts
        sa, sb = (_spread(x) for x in (a, b))
        return np.asarray(np.maximum(sa, sb) / np.minimum(sa, sb))


def _spread(means: np.ndarray) -> np.ndarray:
    """Standard deviation over families (NaN with fewer than two: a cell no output of which
    was scored has none); rounding dust of equal values counts as none."""
    with warnings.catch_warnings():  # numpy warns for such a column, not only errstate
        warnings.simplefilter("ignore", RuntimeWarning)
        sd = np.nanstd(means, axis=0, ddof=1)
    return np.where(sd <= 1e-9 * np.nanmax(np.abs(means), axis=0, initial=0.0), 0.0, sd)


def outside_promise(ratio: np.ndarray, called: np.ndarray, flag: float = SPREAD_FLAG) -> np.ndarray:
    """Which cells lie outside the measured promise: called (better or worse) with a spread
    ratio at or above ``flag``. A "no clear difference" makes no claim to mark."""
    return np.asarray(called, bool) & (np.nan_to_num(ratio, nan=0.0) >= flag)
