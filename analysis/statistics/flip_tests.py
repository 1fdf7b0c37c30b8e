"""The studentized sign-flip test over families, and its intersection with the bootstrap-t
(no I/O; issue 44's candidates, measured by benchmarks/bench_calibration.py).

When the two models are exchangeable within each family (an A/A pair), every family's
paired difference ``d_f`` is symmetric about 0 given its magnitude, so flipping the signs of
the families leaves the joint law unchanged: the studentized statistic
``t = sum d / (CR1 se)`` set against its value under every sign vector is an exact
randomization test at any family count (the p counts the observed vector; Monte Carlo
draws keep it exact, as ``(1 + reach) / (B + 1)``). Its floor is ``2 / 2^F`` (a vector and
its negative give the same ``|t|``): at 8 families 1/128, above Holm's first step over 12
cells (0.05 / 12), so there, and wherever the enumeration cannot reach the level asked,
the flips are Webb's (2014) six-point weights ``±sqrt(1/2), ±1, ±sqrt(3/2)``, which reach
any level but are then an approximation, not an exact test.

``flip_boot_t_p`` is the intersection ``max(p_flip, p_boot_t)`` of the flips and the
symmetric cluster bootstrap-t (``skew_tests``): it rejects only where both do, so its level
is at most either part's, and where the flips are exact (exchangeable pairs) it is exact.
"""

from __future__ import annotations

import numpy as np

from .skew_tests import _columns, _observed_t, _rounded, bootstrap_t_p, cr1, two_sided_p

__all__ = [
    "EXACT_UP_TO",
    "flip_boot_t_p",
    "flip_weights",
    "studentized_flip_p",
    "webb_weights",
]

EXACT_UP_TO = 13  # 2^13 = 8,192 sign vectors: enumerate them all, no draw needed
_CHUNK = 2048  # weight rows per block: (block, F, K) stays small at 250,000 draws
_WEBB = np.array([-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)])


def webb_weights(n_families: int, n_draws: int, seed: int) -> np.ndarray:
    """Webb's six-point weights (B, F), each value with probability 1/6 (mean 0, variance 1)."""
    rng = np.random.default_rng(seed)
    return _WEBB[rng.integers(0, 6, size=(n_draws, n_families))]


def flip_weights(n_families: int, n_draws: int, seed: int, level: float) -> np.ndarray:
    """The flips for a test at ``level``: every sign vector but the identity when their
    floor ``2 / 2^F`` is at most ``level`` and ``F <= 13``; ``n_draws`` random sign vectors
    above 13 families; Webb's weights where the enumeration's floor is above ``level``."""
    if 2.0 ** (1 - n_families) > level:
        return webb_weights(n_families, n_draws, seed)
    if n_families <= EXACT_UP_TO:
        codes = np.arange(1, 2**n_families, dtype=np.int64)  # 0 is the identity
        return 1.0 - 2.0 * ((codes[:, None] >> np.arange(n_families)) & 1)
    rng = np.random.default_rng(seed)
    return rng.choice(np.array([-1.0, 1.0]), size=(n_draws, n_families))


def studentized_flip_p(
    d: np.ndarray, n: np.ndarray, weights: np.ndarray, null: np.ndarray | float = 0.0
) -> np.ndarray:
    """Two-sided p of "difference ``null``": each family's null residual
    ``u_f = d_f - n_f null`` times its weight, each replicate studentized with its own CR1
    error, ``|t*|`` against ``|t|`` (NaN under two families)."""
    d, n = _columns(d, n)
    t, testable = _observed_t(d, n, null)
    groups = cr1(d, n)[2]
    u = d - n * null
    total = n.sum(0)
    w = np.asarray(weights, np.float64)
    reps = np.empty((w.shape[0], d.shape[1]))
    for start in range(0, w.shape[0], _CHUNK):
        block = w[start : start + _CHUNK]
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = (block @ u) / total
            # Residuals summed directly, not by expanding the square: the expansion cancels,
            # and its rounding would split exact ties (|t*| = |t|) at another scale.
            resid = block[:, :, None] * u[None] - n[None] * shift[:, None, :]
            squares = np.einsum("bfk,bfk->bk", resid, resid)
            scale = (block * block) @ (u * u)
            se = np.sqrt(groups / (groups - 1.0) * np.maximum(_rounded(squares, scale), 0)) / total
            reps[start : start + _CHUNK] = shift / se
    return two_sided_p(t, reps, "symmetric", testable)


def flip_boot_t_p(
    d: np.ndarray,
    n: np.ndarray,
    flips: np.ndarray,
    resamples: np.ndarray,
    null: np.ndarray | float = 0.0,
) -> np.ndarray:
    """The intersection test's p: the larger of the studentized flips' (``flips``, from
    ``flip_weights``) and the symmetric bootstrap-t's (``resamples``, family counts)."""
    return np.maximum(
        studentized_flip_p(d, n, flips, null), bootstrap_t_p(d, n, resamples, "symmetric", null)
    )
