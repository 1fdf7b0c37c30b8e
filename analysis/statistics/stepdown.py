"""Max-t step-down over the cells from joint resamples (no I/O; issue 44's candidate).

Holm corrects separate p-values and so assumes the worst dependence between the cells; the
cells of a comparison share their families, and one family resample moves them all at
once. Romano & Wolf's (2005, "Exact and approximate stepdown methods for multiple
hypothesis testing", JASA 100) step-down, after Westfall & Young (1993), reads the
correction from the resamples themselves: the cells are ordered by ``|t|``, largest first,
and the j-th is set against the maximum of ``|t*|`` over itself and every cell after it in
that order, the same resample for all; its adjusted p is the share of resamples whose
maximum reaches its ``|t|`` (counting the observed one), never below an earlier cell's. It
keeps the family-wise rate as Holm does (asymptotically, with studentized statistics) and
calls at least as much as the single-step maximum.

The maximum of ``|t*|`` is a fair yardstick only when the cells' null laws are alike; a
bootstrap-t over few skewed families has far heavier tails in one cell than in another, and
the maximum is then that cell's alone. Westfall & Young's min-P step-down (1993, "Resampling-
Based Multiple Testing", ch. 2) sets each cell's p against the minimum over the cells of
the resamples' own p-values (each replicate's ``|t*|`` ranked within its cell), which puts
every cell on one scale first (``min_p_stepdown``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_t_stepdown", "min_p_stepdown", "single_step_max_t"]

_TIE = 1e-9  # a replicate equal to the observed |t| up to rounding reaches it (as skew_tests)


def _prepared(
    t: np.ndarray, reps: np.ndarray, testable: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """|t| of the testable cells, their |t*| (a NaN t* counts as 0), and the order."""
    cols = np.flatnonzero(testable)
    observed = np.abs(np.asarray(t, np.float64)[cols])
    star = np.abs(np.nan_to_num(np.asarray(reps, np.float64)[:, cols], nan=0.0))
    return cols, observed, star


def max_t_stepdown(t: np.ndarray, reps: np.ndarray, testable: np.ndarray) -> np.ndarray:
    """Romano-Wolf step-down adjusted p per cell (K,) from the observed ``t`` (K,) and the
    centred replicates ``t*`` (B, K) of one set of joint resamples; NaN where not testable."""
    adjusted = np.full(np.shape(t), np.nan)
    cols, observed, star = _prepared(t, reps, testable)
    if not len(cols):
        return adjusted
    order = np.argsort(-observed, kind="stable")
    # Column j of the suffix maximum: max |t*| over the j-th largest cell and all after it.
    suffix = np.maximum.accumulate(star[:, order][:, ::-1], axis=1)[:, ::-1]
    reach = suffix >= observed[order] * (1 - _TIE)
    p = (1 + reach.sum(0)) / (star.shape[0] + 1)
    adjusted[cols[order]] = np.maximum.accumulate(p)  # never below an earlier step's
    return adjusted


def single_step_max_t(t: np.ndarray, reps: np.ndarray, testable: np.ndarray) -> np.ndarray:
    """The single-step maximum: each cell against the maximum ``|t*|`` over every cell."""
    adjusted = np.full(np.shape(t), np.nan)
    cols, observed, star = _prepared(t, reps, testable)
    if not len(cols):
        return adjusted
    top = star.max(1)[:, None]
    adjusted[cols] = (1 + (top >= observed * (1 - _TIE)).sum(0)) / (star.shape[0] + 1)
    return adjusted


def min_p_stepdown(t: np.ndarray, reps: np.ndarray, testable: np.ndarray) -> np.ndarray:
    """Westfall-Young min-P step-down adjusted p per cell (K,): each cell's bootstrap p
    ``(1 + #{|t*| >= |t|}) / (B + 1)``, ordered smallest first, against the minimum over it
    and every later cell of the replicates' p ``#{b': |t*_b'| >= |t*_b|} / (B + 1)``."""
    adjusted = np.full(np.shape(t), np.nan)
    cols, observed, star = _prepared(t, reps, testable)
    if not len(cols):
        return adjusted
    b = star.shape[0]
    own = (1 + (star >= observed * (1 - _TIE)).sum(0)) / (b + 1)
    ranked = np.sort(star, axis=0)
    # Each replicate's p within its cell: how many replicates reach its |t*| (itself too).
    star_p = np.empty_like(star)
    for j in range(star.shape[1]):
        reach = b - np.searchsorted(ranked[:, j], star[:, j] * (1 - _TIE), side="left")
        star_p[:, j] = reach / (b + 1)
    order = np.lexsort((-observed, own))  # smallest p first; ties: the larger |t| first
    suffix = np.minimum.accumulate(star_p[:, order][:, ::-1], axis=1)[:, ::-1]
    p = (1 + (suffix <= own[order] * (1 + _TIE)).sum(0)) / (b + 1)
    adjusted[cols[order]] = np.maximum.accumulate(np.minimum(p, 1.0))
    return adjusted
