"""benchmarks.calibration_nulls: the calibration study's equal-mean nulls are models.

Side B's family values must be ones a model could have (errors at least 0, within-5% in
[0, 100 n]) and keep A's mean over the pool; the steady null's spread is 1/sqrt(k) of A's.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from benchmarks.bench_calibration import draw
from benchmarks.calibration_nulls import (
    erratic_values,
    other_runs,
    out_of_range,
    out_of_range_shares,
    steady_values,
    upper_bound,
)

N = 8  # outputs per family and cell, as in the study's pool


def _pool(
    n_runs: int, n_fam: int, seed: int = 0, sigma: float = 1.5
) -> tuple[np.ndarray, np.ndarray]:
    """Skewed sums as the sim's: (runs, families, mape/nmae/within5, 6 decoders, 2 conditions)."""
    rng = np.random.default_rng(seed)
    shape = (n_runs, n_fam, 3, 6, 2)
    sums = rng.lognormal(0.0, sigma, size=shape)
    sums[:, :, 2] = 100.0 * rng.binomial(N, 0.8, size=sums[:, :, 2].shape)
    return sums, np.full(shape, float(N))


@given(arrays(np.int64, 20, elements=st.integers(0, 100 * N)))
def test_erratic_within5_stays_in_range_and_keeps_each_value_on_average(x: np.ndarray) -> None:
    upper = np.full(x.shape, 100.0 * N)
    low, high = (erratic_values(x.astype(float), upper, np.full(x.shape, z)) for z in (0.0, 2.0))
    assert out_of_range(low, upper) == 0.0 and out_of_range(high, upper) == 0.0
    assert np.array_equal((low + high) / 2, x)  # E[Z] = 1, exactly


@given(arrays(np.float64, 20, elements=st.floats(0, 1e6)))
def test_erratic_errors_stay_at_least_zero_and_keep_each_value_on_average(x: np.ndarray) -> None:
    low, high = (erratic_values(x, None, np.full(x.shape, z)) for z in (0.0, 2.0))
    assert out_of_range(low, None) == 0.0 and out_of_range(high, None) == 0.0
    assert np.array_equal((low + high) / 2, x)


def test_steady_keeps_the_pools_mean_over_every_a_and_every_choice_of_b() -> None:
    sums, _ = _pool(6, 4)
    k = 3
    b = [
        steady_values(sums[list(runs)])
        for i in range(len(sums))
        for runs in combinations([r for r in range(len(sums)) if r != i], k)
    ]
    np.testing.assert_allclose(np.mean(b, axis=0), sums.mean(0), rtol=1e-12)
    assert out_of_range(np.array(b)[:, :, :2], None) == 0.0
    assert out_of_range(np.array(b)[:, :, 2], 100.0 * N) == 0.0


def test_other_runs_are_distinct_and_never_a() -> None:
    rng = np.random.default_rng(1)
    seen = np.zeros(10)
    for _ in range(2000):
        runs = other_runs(rng, 10, 4, 9)
        assert len(set(runs.tolist())) == 9 and 4 not in runs and runs.max() < 10
        seen[runs] += 1
    assert seen[4] == 0 and (seen[np.arange(10) != 4] == 2000).all()


def test_the_steady_spread_is_one_over_root_k_of_a_single_runs() -> None:
    sums, _ = _pool(4000, 2, seed=2, sigma=0.5)
    rng = np.random.default_rng(3)
    for k in (2, 9):
        b = np.array([steady_values(sums[other_runs(rng, len(sums), 0, k)]) for _ in range(3000)])
        ratio = b.std(0) / sums.std(0)  # 48 cells, each a ratio of sds within a few percent
        assert abs(ratio.mean() * np.sqrt(k) - 1) < 0.03, (k, ratio.mean())
        np.testing.assert_allclose(ratio, 1 / np.sqrt(k), rtol=0.15)


def test_the_study_draws_equal_means_under_the_new_nulls() -> None:
    sums, counts = _pool(40, 16, seed=4)
    pools = {"default": {"sums": sums, "counts": counts}}
    rng = np.random.default_rng(5)
    for scenario in ("steady", "erratic"):
        for metric in range(3):
            d = np.array([draw(pools, scenario, metric, 16, rng)[0] for _ in range(400)])
            # The mean difference over 400 draws is 0 within 4 standard errors in every cell.
            z = d.mean((0, 1)) / (d.sum(1).std(0) / np.sqrt(400) / 16)
            assert (np.abs(z) < 4).all(), (scenario, metric, z)


def test_only_the_old_spread_null_leaves_the_range() -> None:
    sums, counts = _pool(40, 16, seed=6)
    shares = out_of_range_shares(sums, counts, (1.5, 3.0), 9)
    assert all(share > 0.05 for share in shares["spread x3"])
    assert shares["steady k=9"] == [0.0, 0.0, 0.0] and shares["erratic"] == [0.0, 0.0, 0.0]
    assert upper_bound(0, counts) is None


def test_saved_results_of_other_tests_on_the_same_draws_join_into_one_row() -> None:
    from benchmarks.bench_calibration import merge, tables

    row = {"scenario": "erratic", "metric": "mape", "families": 8}
    share = {"cell": 0.05, "cell_ci": (0.04, 0.06), "holm": 0.04, "holm_ci": (0.02, 0.06)}
    seq = {"sequential_holm_boot_t_max": 0.02, "sequential_holm_boot_t_max_ci": (0.01, 0.04)}
    merged = merge(
        [
            {"calibration": [{**row, "cluster_t": share}], "power": []},
            {"calibration": [{**row, "boot_t_max": share, **seq}], "power": []},
        ]
    )
    assert len(merged["calibration"]) == 1
    table = tables(merged)
    assert "| cluster_t | boot_t_max | sequential, boot_t_max (Holm) |" in table
    assert "| 2.0 [1.0, 4.0] |" in table
    assert "| 5.0 [4.0, 6.0] / 4.0 [2.0, 6.0] |" in table  # each share with its interval


def test_the_rule_with_a_candidates_p_is_that_candidates_rule() -> None:
    """``sequential_replay(method=...)`` puts the candidate's p inside the rule; the default
    is the bootstrap-t's. Its p cannot go below 1/(B+1), so a look whose t could decide
    draws enough resamples to resolve the look's level (``look_flips``): here it decides
    at the same looks as the t, where 199 resamples alone could not (issue 44)."""
    from analysis.statistics.sequential import look_flips, sequential_replay

    d = np.random.default_rng(5).normal(2.0, 1.0, (24, 3)) * 8
    n = np.full((24, 3), 8.0)
    default = sequential_replay(d, n, n_flips=199, seed=1)
    same = sequential_replay(d, n, n_flips=199, seed=1, method="bootstrap_t")
    assert np.array_equal(same.stopped_at, default.stopped_at)
    t = sequential_replay(d, n, n_flips=199, seed=1, method="t")
    assert (t.reason == "decided").all() and (default.reason == "decided").all()
    assert np.array_equal(default.stopped_at, t.stopped_at)
    # A level far below 199 resamples' floor 1/200, which the t reaches on all 24 families.
    level = 0.0001
    assert look_flips(d, n, level, 199, "bootstrap_t") >= 3 / level
    assert look_flips(d, n, level, 199, "t") == 199
