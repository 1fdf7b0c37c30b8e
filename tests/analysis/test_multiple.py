"""The correction for many cells: Holm's step-down adjustment and bootstrap p-values."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from analysis.statistics.bootstrap import percentile_interval
from analysis.statistics.comparison import verdict
from analysis.statistics.multiple import bootstrap_p_values, holm

p_values = arrays(
    np.float64, st.integers(1, 12), elements=st.floats(0, 1) | st.just(np.nan), unique=False
)


def holm_rejects(p: np.ndarray, alpha: float) -> set[int]:
    """Holm's procedure as he stated it: step down while p(i) <= alpha / (m - i + 1)."""
    finite = [i for i in range(len(p)) if np.isfinite(p[i])]
    order = sorted(finite, key=lambda i: p[i])
    rejected: set[int] = set()
    for step, i in enumerate(order):
        if p[i] > alpha / (len(order) - step):
            break
        rejected.add(i)
    return rejected


@given(p_values, st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_rejects_what_the_step_down_procedure_rejects(p: np.ndarray, alpha: float) -> None:
    adjusted = holm(p)
    assert set(np.flatnonzero(adjusted <= alpha).tolist()) == holm_rejects(p, alpha)


@given(p_values)
def test_adjusted_values_are_bounded_ordered_and_nan_where_p_is(p: np.ndarray) -> None:
    adjusted = holm(p)
    finite = np.isfinite(p)
    assert np.array_equal(np.isfinite(adjusted), finite)
    m = int(finite.sum())
    if not m:
        return
    a, raw = adjusted[finite], p[finite]
    assert np.all(a >= raw - 1e-12) and np.all(a <= 1.0)
    assert np.all(a <= np.minimum(1.0, m * raw) + 1e-12)  # never above Bonferroni
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(a[order]) >= -1e-12)  # monotone in the raw p
    assert a[order[0]] == min(1.0, m * raw[order[0]])


def test_holm_by_hand() -> None:
    # m = 4: sorted p 0.01, 0.02, 0.03, 0.5 -> 0.04, max(0.04, 0.06), max(.06, .06), 0.5
    adjusted = holm(np.array([0.03, 0.5, 0.01, 0.02]))
    assert np.allclose(adjusted, [0.06, 0.5, 0.04, 0.06])
    assert np.isnan(holm(np.array([np.nan, 0.01])))[0]
    assert holm(np.array([np.nan, 0.01]))[1] == 0.01  # NaN is not a hypothesis: m = 1
    grid = holm(np.array([[0.01, 0.04], [0.2, np.nan]]))
    assert grid.shape == (2, 2) and grid[0, 0] == 0.03


def test_the_correction_keeps_false_verdicts_rare_over_many_null_cells() -> None:
    # 20 cells where nothing differs: uncorrected, 64% of comparisons would call some cell
    # better or worse; Holm keeps it at or below 5%.
    rng = np.random.default_rng(1)
    p = rng.uniform(size=(4000, 20))
    any_raw = np.mean((p < 0.05).any(axis=1))
    any_holm = np.mean([(holm(row) < 0.05).any() for row in p])
    assert any_raw > 0.6 and any_holm <= 0.05


def test_bootstrap_p_values_count_replicates_on_each_side() -> None:
    reps = np.array([[1.0, -1.0, 0.0, np.nan], [2.0, 1.0, 0.0, np.nan], [3.0, 1.0, 0.0, np.nan]])
    p = bootstrap_p_values(reps)
    # all 3 above 0: 2*(0+1)/4; one of 3 below: 2*(1+1)/4 = 1; all at 0: 1; none: NaN
    assert p[0] == 0.5 and p[1] == 1.0 and p[2] == 1.0 and np.isnan(p[3])
    assert bootstrap_p_values(np.full((9999, 1), 0.5))[0] == 2 / 10000


@given(st.floats(-4, 4), st.integers(0, 2**32 - 1))
def test_p_below_5_percent_is_the_95_percent_interval_excluding_zero(
    shift: float, seed: int
) -> None:
    reps = np.random.default_rng(seed).normal(shift, 1.0, size=(4000, 1))
    lo, hi = percentile_interval(reps, 0.95)
    p = bootstrap_p_values(reps)[0]
    excluded = bool(lo[0] > 0 or hi[0] < 0)
    # They can disagree only at the boundary (interpolation between two replicates).
    share = min(np.mean(reps <= 0), np.mean(reps >= 0))
    if abs(share - 0.025) > 0.002:
        assert (p < 0.05) == excluded


def test_verdicts_follow_the_adjusted_p_and_the_direction() -> None:
    assert verdict(0.01, -2.0, 0.05, lower_is_better=True) == "better"
    assert verdict(0.01, 2.0, 0.05, lower_is_better=True) == "worse"
    assert verdict(0.01, 2.0, 0.05, lower_is_better=False) == "better"  # within 5%
    assert verdict(0.05, -2.0, 0.05, lower_is_better=True) == "no clear difference"
    assert verdict(0.0001, 0.0, 0.05, lower_is_better=True) == "no clear difference"
    assert verdict(float("nan"), -2.0, 0.05, lower_is_better=True) is None
