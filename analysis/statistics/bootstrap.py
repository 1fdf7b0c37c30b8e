"""Family bootstrap: percentile intervals from one (replicates × families) weight matrix.

A replicate draws F families with replacement; each family brings all of its units
(transforms, orders, both conditions). A statistic is a mean over units, so its
replicate value is ``(W @ sums) / (W @ counts)`` with W[b, f] the number of times
family f was drawn in replicate b: one matrix product for all replicates (no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .metrics import FamilyTotals
from .paired import PairedTotals

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "MIN_FAMILIES",
    "BootstrapResult",
    "family_bootstrap",
    "interval_refusal",
    "paired_replicates",
    "percentile_interval",
    "ratio_replicates",
    "resample_weights",
]

# Paper, Section 4: 10,000 percentile-bootstrap replicates with seed 20260923.
DEFAULT_REPLICATES = 10_000
DEFAULT_SEED = 20260923
DEFAULT_LEVEL = 0.95
# Fewer resampled families than this and no interval is shown (paper: no interval over the
# three historical dates). With F families there are only C(2F-1, F) distinct resamples.
MIN_FAMILIES = 5


def resample_weights(n_families: int, n_boot: int, seed: int) -> np.ndarray:
    """Return W, shape (n_boot, n_families): how often each family is drawn per replicate."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_families, size=(n_boot, n_families))
    draws += (np.arange(n_boot, dtype=np.int64) * n_families)[:, None]  # in place: one matrix
    counts = np.bincount(draws.ravel(), minlength=n_boot * n_families)
    return counts.reshape(n_boot, n_families)


def ratio_replicates(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Replicates of sum/count statistics: (F, K) sums and counts, (B, F) weights -> (B, K)."""
    w = weights.astype(np.float64)  # float matmul goes through BLAS; int matmul does not
    with np.errstate(invalid="ignore", divide="ignore"):  # no units drawn: NaN
        return (w @ sums) / (w @ counts)


def percentile_interval(
    replicates: np.ndarray, level: float = DEFAULT_LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each column of (B, K) replicates; NaN replicates are dropped."""
    tail = 100.0 * (1.0 - level) / 2.0
    q = [tail, 100.0 - tail]
    if not np.isnan(replicates).any():
        lo, hi = np.percentile(replicates, q, axis=0)
        return lo, hi
    lo = np.full(replicates.shape[1:], np.nan)
    hi = np.full(replicates.shape[1:], np.nan)
    for k in range(replicates.shape[1]):
        column = replicates[:, k]
        column = column[np.isfinite(column)]
        if len(column):
            lo[k], hi[k] = np.percentile(column, q)
    return lo, hi


def paired_replicates(paired: PairedTotals, weights: np.ndarray) -> np.ndarray:
    """Replicates of ``other − base`` over common units, (B, S·D·C); one resample, both sides.

    Both sides count the same units, so each replicate's difference of means is the mean
    of the differences: one ratio, ``W @ (sums_other − sums_base) / W @ counts``.
    """
    f = weights.shape[1]
    sums = (paired.other.sums - paired.base.sums).reshape(f, -1)
    return ratio_replicates(sums, paired.other.counts.reshape(f, -1), weights)


def interval_refusal(n_families: int, min_families: int = MIN_FAMILIES) -> str | None:
    """Why no interval is shown over ``n_families`` resampled units, or None if one is."""
    if 0 < n_families < min_families:
        return (
            f"only {n_families} {'family' if n_families == 1 else 'families'} to resample "
            f"(fewer than {min_families}), so no family-bootstrap interval is shown: "
            "percentiles over so few resampled units are not a confidence interval"
        )
    return None


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Intervals for every statistic, shape (statistics, D, C), and paired differences
    against the reference decoder over common units (NaN where there is none)."""

    n_boot: int
    seed: int
    level: float
    n_families: int
    reference: str | None
    lo: np.ndarray
    hi: np.ndarray
    diff: np.ndarray
    diff_lo: np.ndarray
    diff_hi: np.ndarray
    n_paired: np.ndarray  # (statistics, D, C): common units of each difference
    min_families: int = MIN_FAMILIES
    # MAPE's intervals by domain, shape (D, C, domains), on the same resamples (NaN: none).
    domain_lo: np.ndarray | None = None
    domain_hi: np.ndarray | None = None

    @property
    def refusal(self) -> str | None:
        """Why intervals are not shown although replicates were asked for, else None."""
        return interval_refusal(self.n_families, self.min_families) if self.n_boot > 0 else None


def family_bootstrap(
    totals: FamilyTotals,
    paired: PairedTotals | None = None,
    reference: str | None = None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    min_families: int = MIN_FAMILIES,
    by_domain: tuple[np.ndarray, np.ndarray] | None = None,
) -> BootstrapResult:
    """Percentile intervals, and paired differences vs ``reference`` on the same resamples.

    ``paired`` holds each decoder and the reference over their common units (see
    paired.py); without it there are no differences. ``by_domain``: per-family sums and
    counts (families, ...) of more means (MAPE by domain), given intervals on the same
    resamples. With fewer than ``min_families`` families no interval is computed (NaN),
    only the point estimates.
    """
    n_f, n_s, n_d, n_c = totals.sums.shape
    nan = np.full((n_s, n_d, n_c), np.nan)
    diff = paired.delta() if paired is not None else nan
    n_paired = paired.units() if paired is not None else np.zeros_like(nan)
    result = BootstrapResult(
        n_boot, seed, level, n_f, reference, nan, nan, diff, nan, nan, n_paired, min_families
    )
    if n_boot <= 0 or n_f == 0 or n_f < min_families:
        return result
    weights = resample_weights(n_f, n_boot, seed)
    reps = ratio_replicates(totals.sums.reshape(n_f, -1), totals.counts.reshape(n_f, -1), weights)
    lo, hi = (a.reshape(n_s, n_d, n_c) for a in percentile_interval(reps, level))
    diff_lo = diff_hi = nan
    if paired is not None:
        pair_lo, pair_hi = percentile_interval(paired_replicates(paired, weights), level)
        diff_lo, diff_hi = pair_lo.reshape(nan.shape), pair_hi.reshape(nan.shape)
    result = replace(result, lo=lo, hi=hi, diff_lo=diff_lo, diff_hi=diff_hi)
    if by_domain is None:
        return result
    sums, counts = by_domain
    reps = ratio_replicates(sums.reshape(n_f, -1), counts.reshape(n_f, -1), weights)
    dom_lo, dom_hi = (a.reshape(sums.shape[1:]) for a in percentile_interval(reps, level))
    return replace(result, domain_lo=dom_lo, domain_hi=dom_hi)
