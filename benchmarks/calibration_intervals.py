"""The calibration study's shares and their 95% intervals when the trials are not independent.

A share of called cells counts a draw's 12 cells, which share the draw's two runs, and at
many families the draws share runs too (at 128 families every draw is one of the pool's
pairs). Clopper-Pearson over the cells treats them as independent and is too narrow. Here
the share's variance is the multi-membership cluster-robust one (Fafchamps & Gubert 2007;
Cameron, Gelbach & Miller 2011; Aronow, Samii & Assenova 2015): the sum of ``e_d e_d'`` over
every pair of draws that share a unit (a run), ``e_d`` a draw's hits less the share times its
trials. Its design effect turns the trials into an effective count, and the interval is
Clopper-Pearson's on that count (Korn & Graubard 1998), with the design effect at least 1.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence

import numpy as np


def clopper_pearson(hits: float, trials: float, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of ``hits / trials`` (either may be fractional: an effective
    count, as Korn & Graubard's)."""
    from scipy.stats import beta

    tail = (1 - level) / 2
    lo = float(beta.ppf(tail, hits, trials - hits + 1)) if hits > 0 else 0.0
    hi = float(beta.ppf(1 - tail, hits + 1, trials - hits)) if hits < trials else 1.0
    return lo, hi


def sharing(units: Sequence[Collection[Hashable]]) -> np.ndarray:
    """(D, D) whether two draws share a unit; a draw always shares itself (its own cells)."""
    names = {name: k for k, name in enumerate(sorted({u for us in units for u in us}, key=str))}
    member = np.zeros((len(units), len(names)))
    for d, us in enumerate(units):
        member[d, [names[u] for u in us]] = 1.0
    shared = member @ member.T > 0
    np.fill_diagonal(shared, True)
    return shared


def effective_trials(
    hits: np.ndarray, trials: np.ndarray, units: Sequence[Collection[Hashable]]
) -> float:
    """The trials' count over the design effect (at least 1): ``p (1 - p) / Var(p)``, with
    Var the cluster-robust variance over draws that share a unit. With no hit (or all) there
    is no spread to estimate it from: the draws' count (a draw's cells fully dependent)."""
    hits = np.asarray(hits, float)
    trials = np.asarray(trials, float)
    total = trials.sum()
    share = hits.sum() / total
    residual = hits - share * trials
    covariance = float(residual @ sharing(units) @ residual)
    if share in (0.0, 1.0) or covariance <= 0:
        return float(len(hits))
    return min(float(total), share * (1 - share) * total**2 / covariance)


def share_interval(
    hits: np.ndarray,
    trials: np.ndarray,
    units: Sequence[Collection[Hashable]],
    level: float = 0.95,
) -> tuple[float, float]:
    """The interval of ``sum(hits) / sum(trials)`` over draws (one entry each) that share the
    ``units`` listed per draw: Clopper-Pearson on the effective count (Korn & Graubard)."""
    share = float(np.sum(hits) / np.sum(trials))
    n_eff = effective_trials(np.asarray(hits), np.asarray(trials), units)
    return clopper_pearson(share * n_eff, n_eff, level)
