"""Pre-drawn A/A sim comparisons for the verdict test's calibration tests: 12 runs of the
sim at its default knobs (seeds 1000-1011) over the affine suite at 128 families
(``per_operator=32``), kept as their per-family MAPE sums of the 12 decoder x condition
cells (``tests/data/aa_mape_sums.npz``; every family has 8 outputs per cell); made by
``benchmarks/bench_calibration.py``'s pool."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).parent.parent / "data" / "aa_mape_sums.npz"


def aa_comparisons(n: int, families: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-drawn A/A comparisons: two distinct sim runs (default knobs, 128 families each,
    MAPE sums of the 12 decoder x condition cells) on the same random family subset."""
    return _drawn(n, families, None)


def spread_comparisons(
    n: int, families: int, factor: float = 3.0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pre-drawn same-mean, different-spread comparisons (the calibration study's "spread"
    null): side B's family sums moved to ``m_f + factor (b_f - m_f)``, ``m_f`` the mean of
    family f over the 12 runs, so that B keeps A's mean and its family differences skew."""
    return _drawn(n, families, factor)


def _drawn(n: int, families: int, factor: float | None) -> list[tuple[np.ndarray, np.ndarray]]:
    data = np.load(DATA)
    sums, count = data["sums"].astype(np.float64), float(data["count"])
    rng = np.random.default_rng(28)
    drawn = []
    for _ in range(n):
        i, j = rng.choice(len(sums), 2, replace=False)
        fams = rng.choice(sums.shape[1], families, replace=False)
        other = sums[j, fams]
        if factor is not None:
            mean = sums[:, fams].mean(axis=0)
            other = mean + factor * (other - mean)
        drawn.append((other - sums[i, fams], np.full((families, 12), count)))
    return drawn
