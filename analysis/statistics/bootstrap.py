"""Family bootstrap: percentile intervals from one (replicates × families) weight matrix.

A replicate draws F families with replacement; each family brings all of its units
(transforms, orders, both conditions). A statistic is a mean over units, so its
replicate value is ``(W @ sums) / (W @ counts)`` with W[b, f] the number of times
family f was drawn in replicate b: one matrix product for all replicates (no I/O).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import FamilyTotals

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_REPLICATES",
    "DEFAULT_SEED",
    "BootstrapResult",
    "family_bootstrap",
    "percentile_interval",
    "ratio_replicates",
    "resample_weights",
]

# Paper, Section 4: 10,000 percentile-bootstrap replicates with seed 20260923.
DEFAULT_REPLICATES = 10_000
DEFAULT_SEED = 20260923
DEFAULT_LEVEL = 0.95


def resample_weights(n_families: int, n_boot: int, seed: int) -> np.ndarray:
    """Return W, shape (n_boot, n_families): how often each family is drawn per replicate."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_families, size=(n_boot, n_families))
    offsets = (np.arange(n_boot, dtype=np.int64) * n_families)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=n_boot * n_families)
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


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Intervals for every statistic, shape (statistics, D, C), and paired differences
    against the reference decoder (NaN where there is none)."""

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


def family_bootstrap(
    totals: FamilyTotals,
    decoders: tuple[str, ...],
    reference: str | None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> BootstrapResult:
    """Percentile intervals and paired differences vs ``reference`` on the same resamples."""
    n_f, n_s, n_d, n_c = totals.sums.shape
    point = totals.point()
    ref = decoders.index(reference) if reference in decoders else None
    diff = point - point[:, ref : ref + 1] if ref is not None else np.full_like(point, np.nan)
    if n_boot <= 0 or n_f == 0:
        nan = np.full_like(point, np.nan)
        return BootstrapResult(n_boot, seed, level, n_f, reference, nan, nan, diff, nan, nan)
    weights = resample_weights(n_f, n_boot, seed)
    reps = ratio_replicates(
        totals.sums.reshape(n_f, -1), totals.counts.reshape(n_f, -1), weights
    ).reshape(n_boot, n_s, n_d, n_c)
    lo, hi = (
        a.reshape(n_s, n_d, n_c) for a in percentile_interval(reps.reshape(n_boot, -1), level)
    )
    if ref is None:
        diff_lo = diff_hi = np.full_like(point, np.nan)
    else:
        paired = (reps - reps[:, :, ref : ref + 1]).reshape(n_boot, -1)
        diff_lo, diff_hi = (a.reshape(n_s, n_d, n_c) for a in percentile_interval(paired, level))
    return BootstrapResult(n_boot, seed, level, n_f, reference, lo, hi, diff, diff_lo, diff_hi)
