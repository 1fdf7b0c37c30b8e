"""The calibration study's equal-mean nulls: side B's family values made from the pool's runs.

``spread`` scales B's distance from the pool's family mean (the same mean, s times the
spread, but on skewed metrics many values fall where no model can be: below 0, or above
100% within 5%); ``steady`` and ``erratic`` are realizable: every value one a model could
have. ``steady``: B is the mean of k other runs (the same mean, 1/sqrt(k) of the spread).
``erratic``: each family value is moved to its nearer bound or twice as far from it, with
probability 1/2 each (a factor Z in {0, 2}, E[Z] = 1: the same mean, more spread).
"""

from __future__ import annotations

import numpy as np

WITHIN5 = 2  # the metric index of within-5% (percent per output: a family sum is in [0, 100 n])


def upper_bound(metric: int, counts: np.ndarray) -> np.ndarray | None:
    """The largest family sum a model could have (None: unbounded, as MAPE and NMAE)."""
    return 100.0 * counts if metric == WITHIN5 else None


def spread_values(b: np.ndarray, mean: np.ndarray, factor: float) -> np.ndarray:
    """The old spread null: B moved to ``mean + factor (b - mean)`` (not always realizable)."""
    return mean + factor * (b - mean)


def other_runs(rng: np.random.Generator, n_runs: int, exclude: int, k: int) -> np.ndarray:
    """k distinct run indices out of ``n_runs``, none of them ``exclude`` (A's run)."""
    if not 1 <= k < n_runs:
        raise ValueError(f"the steady null needs 1 <= k < {n_runs} runs, got k={k}")
    picks = rng.choice(n_runs - 1, size=k, replace=False)
    return picks + (picks >= exclude)


def steady_values(runs: np.ndarray) -> np.ndarray:
    """The steady null's B: the mean of k runs' family values, (k, ...) -> (...)."""
    return runs.mean(0)


def erratic_factors(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Independent factors Z, 0 or 2 with probability 1/2 each (E[Z] = 1, Var[Z] = 1)."""
    return 2.0 * rng.integers(0, 2, size=shape)


def erratic_values(x: np.ndarray, upper: np.ndarray | None, z: np.ndarray) -> np.ndarray:
    """The erratic null's B: each value's distance from its nearer bound times Z.

    Unbounded metrics (errors): ``Z x``. Bounded ones (within 5%, in [0, upper]): the
    shortfall ``upper - x`` times Z where x is above upper / 2, else ``Z x``, so that twice
    the distance never leaves the range; E[B | x] = x either way.
    """
    if upper is None:
        return z * x
    return np.where(2 * x > upper, upper - z * (upper - x), z * x)


def out_of_range(values: np.ndarray, upper: np.ndarray | None) -> float:
    """The share of family values no model could have (below 0, or above ``upper``)."""
    bad = values < 0 if upper is None else (values < 0) | (values > upper)
    return float(bad.mean())


def out_of_range_shares(
    sums: np.ndarray, counts: np.ndarray, spreads: tuple[float, ...], k: int, seed: int = 0
) -> dict[str, list[float]]:
    """Each null's out-of-range share per metric, over every run x family x cell of a pool.

    ``sums``/``counts``: (runs, families, metrics, ...). Spread moves every run; steady
    averages k other runs for every run as A; erratic draws Z for every value.
    """
    rng = np.random.default_rng(seed)
    n_runs, n_metrics = sums.shape[0], sums.shape[2]
    shares: dict[str, list[float]] = {}
    for factor in spreads:
        shares[f"spread x{factor:g}"] = [
            out_of_range(
                spread_values(sums[:, :, m], sums[:, :, m].mean(0), factor),
                upper_bound(m, counts[:, :, m]),
            )
            for m in range(n_metrics)
        ]
    shares[f"steady k={k}"] = [
        out_of_range(
            np.array(
                [steady_values(sums[other_runs(rng, n_runs, i, k), :, m]) for i in range(n_runs)]
            ),
            upper_bound(m, counts[:, :, m]),
        )
        for m in range(n_metrics)
    ]
    shares["erratic"] = [
        out_of_range(
            erratic_values(
                sums[:, :, m],
                upper_bound(m, counts[:, :, m]),
                erratic_factors(rng, sums[:, :, m].shape),
            ),
            upper_bound(m, counts[:, :, m]),
        )
        for m in range(n_metrics)
    ]
    return shares
