"""Paired tests over families built for skewed differences and few families (no I/O).

The calibration study (benchmarks/bench_calibration.py) sets these beside the verdict test
(``family_test``): on its "spread" null (equal means, one side more spread) the family
differences are skewed and the cluster-robust t calls "better" too often where few families
with a large error pull the mean and its standard error up together. Every function takes
per-family sums of paired differences ``d`` and unit counts ``n``, (F, K) or (F,), tests
"difference ``null``" per column and returns two-sided p-values (NaN under two families):

- ``bootstrap_t_p``: the studentized cluster (pairs) bootstrap-t: families resampled with
  replacement, each replicate's ``t* = (delta* - delta) / se*`` with its own CR1 standard
  error; ``tails="symmetric"`` compares ``|t*|`` with ``|t|``, ``"equal"`` takes each tail
  (Hall 1992, "The Bootstrap and Edgeworth Expansion", ch. 3; Cameron, Gelbach & Miller
  2008, "Bootstrap-based improvements for inference with clustered errors").
- ``hall_t_p``: the cluster-robust t moved by Hall's (1992, "On the removal of skewness by
  transformation", JRSS B 54) monotone cubic form of Johnson's (1978) skewness correction,
  ``T = t + a t^2 + a^2 t^3 / 3 + b``, ``a = g / (3 sqrt G)``, ``b = g / (6 sqrt G)``, with
  ``g`` the skewness of the families' residuals, against Student's t with G-1 df;
  ``hall_t_interval`` inverts it in closed form.
- ``wild_mammen_p``: the restricted wild cluster bootstrap-t with Mammen's (1993) two-point
  weights, whose third moment is 1, so that the flips keep the residuals' skewness.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from .student import student_ppf, student_sf

__all__ = [
    "Tails",
    "bootstrap_t_critical",
    "bootstrap_t_p",
    "bootstrap_t_replicates",
    "cr1",
    "hall_t_interval",
    "hall_t_p",
    "mammen_weights",
    "two_sided_p",
    "wild_mammen_p",
]

Tails = Literal["symmetric", "equal"]
_TIE = 1e-9  # a replicate equal to the observed statistic up to rounding reaches it


def _columns(d: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d, n = np.asarray(d, np.float64), np.asarray(n, np.float64)
    return (d[:, None], n[:, None]) if d.ndim == 1 else (d, n)


def cr1(d: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column: the difference ``sum d / sum n``, its CR1 standard error and the number
    of families with a unit (as ``family_test``)."""
    d, n = _columns(d, n)
    total, groups = n.sum(0), (n > 0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = d.sum(0) / total
        se = np.sqrt(groups / (groups - 1.0) * ((d - n * delta) ** 2).sum(0)) / total
    return delta, se, groups


def two_sided_p(t: np.ndarray, reps: np.ndarray, tails: Tails, testable: np.ndarray) -> np.ndarray:
    """p of the observed t (K,) against replicate t* (B, K), NaN where not ``testable``;
    a NaN t* (no difference and no spread) counts as 0."""
    reps = np.where(np.isnan(reps), 0.0, reps)
    b = reps.shape[0] + 1
    if tails == "symmetric":
        reach = np.abs(reps) >= np.abs(t) * (1 - _TIE)
        p = (1 + reach.sum(0)) / b
    else:
        tie = np.where(np.isfinite(t), _TIE * np.abs(t), 0.0)
        up = (1 + (reps >= t - tie).sum(0)) / b
        down = (1 + (reps <= t + tie).sum(0)) / b
        p = np.minimum(1.0, 2 * np.minimum(up, down))
    return np.where(testable, p, np.nan)


def _rounded(value: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``value`` with what is within rounding of 0 against ``scale`` (a sum it was taken
    from) set to 0: a resample of families that all differ alike has no spread, whatever
    the scale of the differences, and its t* is then infinite or 0, never rounding noise."""
    return np.where(np.abs(value) <= 1e-10 * np.abs(scale), 0.0, value)


def _observed_t(
    d: np.ndarray, n: np.ndarray, null: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    delta, se, groups = cr1(d, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (delta - null) / se
    # No spread: a difference from the null is certain (inf), none is no evidence (0).
    return np.where(np.isnan(t), 0.0, t), (groups >= 2) & np.isfinite(delta)


def bootstrap_t_replicates(
    d: np.ndarray, n: np.ndarray, weights: np.ndarray, null: np.ndarray | float = 0.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The observed ``t = (delta - null) / se`` (K,), the replicates' ``t*`` (B, K; NaN where
    a replicate has neither a difference nor a spread) and which columns can be tested."""
    d, n = _columns(d, n)
    t, testable = _observed_t(d, n, null)
    delta, _, groups = cr1(d, n)
    w = np.asarray(weights, np.float64)
    total = w @ n
    with np.errstate(invalid="ignore", divide="ignore"):
        star = (w @ d) / total
        d2 = w @ (d * d)
        squares = d2 - 2 * star * (w @ (d * n)) + star**2 * (w @ (n * n))
        se = np.sqrt(groups / (groups - 1.0) * np.maximum(_rounded(squares, d2), 0.0)) / total
        reps = _rounded(star - delta, np.abs(delta)) / se
    return t, reps, testable


def bootstrap_t_p(
    d: np.ndarray,
    n: np.ndarray,
    weights: np.ndarray,
    tails: Tails = "symmetric",
    null: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Studentized cluster bootstrap-t p of "difference ``null``"; ``weights`` (B, F) are
    how often each family is drawn per replicate (``bootstrap.resample_weights``)."""
    t, reps, testable = bootstrap_t_replicates(d, n, weights, null)
    return two_sided_p(t, reps, tails, testable)


def bootstrap_t_critical(reps: np.ndarray, level: float) -> np.ndarray:
    """The ``|t*|`` the symmetric bootstrap-t must exceed to reject at ``level``: the
    ``(k+1)``-th largest, ``k`` the most replicates that may reach ``|t|`` with p below it."""
    b = reps.shape[0]
    k = max(int(np.ceil(level * (b + 1) - 1)) - 1, 0)
    ordered = -np.sort(-np.abs(np.where(np.isnan(reps), 0.0, reps)), axis=0)
    return np.asarray(ordered[min(k, b - 1)], np.float64)


def mammen_weights(n_families: int, n_draws: int, seed: int) -> np.ndarray:
    """Mammen's two-point weights (B, F): ``-(sqrt 5 - 1)/2`` with probability
    ``(sqrt 5 + 1) / (2 sqrt 5)``, else ``(sqrt 5 + 1)/2`` (mean 0, variance 1, third moment 1)."""
    root5 = np.sqrt(5.0)
    low = np.random.default_rng(seed).random((n_draws, n_families)) < (root5 + 1) / (2 * root5)
    return np.where(low, -(root5 - 1) / 2, (root5 + 1) / 2)


def wild_mammen_p(
    d: np.ndarray,
    n: np.ndarray,
    weights: np.ndarray,
    tails: Tails = "symmetric",
    null: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Restricted wild cluster bootstrap-t p of "difference ``null``": each family's null
    residual ``u_f = d_f - n_f null`` is multiplied by its weight (``mammen_weights``)."""
    d, n = _columns(d, n)
    t, testable = _observed_t(d, n, null)
    _, _, groups = cr1(d, n)
    w = np.asarray(weights, np.float64)
    u = d - n * null
    total = n.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = (w @ u) / total  # delta* - null
        u2 = (w * w) @ (u * u)
        # Each replicate's residuals summed directly, not by expanding the square: the
        # expansion cancels, and its rounding split exact ties (|t*| = |t| when every
        # weight is alike) differently at another scale of the differences.
        resid = w[:, :, None] * u[None] - n[None] * shift[:, None, :]
        squares = np.einsum("bfk,bfk->bk", resid, resid)
        se = np.sqrt(groups / (groups - 1.0) * np.maximum(_rounded(squares, u2), 0.0)) / total
        reps = shift / se
    return two_sided_p(t, reps, tails, testable)


def _hall_terms(d: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hall's ``a`` and ``b`` per column from the skewness of the residuals' per-family mean."""
    d, n = _columns(d, n)
    delta, _, groups = cr1(d, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = (d - n * delta) * groups / n.sum(0)  # a family's share of the mean, as one observation
        e = np.where(n > 0, e, 0.0)
        var, third = (e**2).sum(0) / groups, (e**3).sum(0) / groups
        g = np.where(var > 0, third / var**1.5, 0.0)
        root = np.sqrt(groups)
    return g / (3 * root), g / (6 * root)


def hall_t_p(d: np.ndarray, n: np.ndarray, null: np.ndarray | float = 0.0) -> np.ndarray:
    """Skewness-corrected cluster-robust t p of "difference ``null``" (Johnson 1978 in
    Hall's 1992 monotone form), against Student's t with G-1 degrees of freedom."""
    t, testable = _observed_t(d, n, null)
    a, b = _hall_terms(d, n)
    with np.errstate(invalid="ignore", over="ignore"):
        moved = t + a * t**2 + a * a * t**3 / 3 + b
    moved = np.where(np.isfinite(t), moved, t)
    groups = cr1(d, n)[2]
    p = 2 * student_sf(np.abs(moved), np.maximum(groups - 1, 1))
    return np.where(testable, p, np.nan)


def hall_t_interval(
    d: np.ndarray, n: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """The differences Hall's test does not reject at ``alpha``: ``delta - g^-1(+-c) se``,
    with ``g^-1(y) = (cbrt(1 + 3a (y - b)) - 1) / a`` (``y - b`` when the skewness is 0)."""
    delta, se, groups = cr1(d, n)
    a, b = _hall_terms(d, n)
    c = student_ppf(1 - alpha / 2, np.maximum(groups - 1, 1))

    def inverse(y: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            moved = (np.cbrt(1 + 3 * a * (y - b)) - 1) / a
        return np.where(a == 0, y - b, moved)

    return delta - inverse(c) * se, delta - inverse(-c) * se
