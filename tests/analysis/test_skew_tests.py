"""The skew-aware candidates of the calibration study (analysis.statistics.skew_tests): each
p-value is unchanged by the scale of the differences, Hall's interval inverts his test, and
the bootstrap-t is the one a plain loop over replicates gives."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from analysis.statistics.bootstrap import resample_weights
from analysis.statistics.skew_tests import (
    Tails,
    bootstrap_t_p,
    cr1,
    hall_t_interval,
    hall_t_p,
    mammen_weights,
    wild_mammen_p,
)

ALPHA = 0.05

families = st.integers(6, 20).flatmap(
    lambda f: st.tuples(
        arrays(np.float64, (f, 3), elements=st.floats(-50, 50, allow_nan=False)),
        arrays(np.int64, (f, 3), elements=st.integers(1, 9)),
    )
)


@settings(max_examples=60, deadline=None)
@given(families, st.floats(-20, 20), st.floats(0.01, 100), st.sampled_from(["symmetric", "equal"]))
def test_every_p_is_unchanged_by_the_scale_of_the_differences(
    data: tuple[np.ndarray, np.ndarray], shift: float, scale: float, tails: Tails
) -> None:
    diffs, counts = data
    diffs = diffs + shift * counts
    delta, se, _ = cr1(diffs, counts)
    # Families that all differ alike leave only rounding as their spread, and its scale.
    assume(bool(np.all(se > 1e-6 * (1 + np.abs(delta)))))
    f = len(diffs)
    boot, wild = resample_weights(f, 199, 5), mammen_weights(f, 199, 5)
    for p_of in (
        lambda d: bootstrap_t_p(d, counts, boot, tails),
        lambda d: wild_mammen_p(d, counts, wild, tails),
        lambda d: hall_t_p(d, counts),
    ):
        assert p_of(scale * diffs) == pytest.approx(p_of(diffs), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(families, st.floats(-20, 20))
def test_halls_interval_excludes_0_exactly_when_his_p_is_below_alpha(
    data: tuple[np.ndarray, np.ndarray], shift: float
) -> None:
    diffs, counts = data
    diffs = diffs + shift * counts
    p = hall_t_p(diffs, counts)
    lo, hi = hall_t_interval(diffs, counts, ALPHA)
    testable = np.isfinite(p) & (cr1(diffs, counts)[1] > 0)
    # A p within rounding of alpha may land on either side: the interval's end is then ~0.
    clear = testable & (np.abs(p - ALPHA) > 1e-9)
    assert np.array_equal(((lo > 0) | (hi < 0))[clear], (p < ALPHA)[clear])
    assert np.all(lo[testable] <= hi[testable])


def test_without_skewness_halls_test_is_the_cluster_robust_t() -> None:
    diffs = np.array([-3.0, -1.0, 0.0, 1.0, 3.0, 2.0, -2.0]) + 0.5  # symmetric about 0.5
    counts = np.ones(7)
    delta, se, _ = cr1(diffs, counts)
    assert hall_t_p(diffs, counts)[0] == pytest.approx(2 * stats.t.sf(delta[0] / se[0], 6))


def test_the_bootstrap_t_is_a_loop_over_resampled_families() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(1, 6, 10)
    diffs = rng.exponential(2.0, 10) * counts - counts
    weights = resample_weights(10, 300, 1)
    delta, se, _ = cr1(diffs, counts)
    reps = []
    for w in weights:
        drawn = np.repeat(np.arange(10), w)  # each family as often as it was drawn
        d_star, s_star, _ = cr1(diffs[drawn], counts[drawn])  # a family drawn twice counts twice
        reps.append((d_star[0] - delta[0]) / s_star[0] if s_star[0] > 0 else 0.0)
    t = delta[0] / se[0]
    symmetric = (1 + np.sum(np.abs(reps) >= abs(t) * (1 - 1e-9))) / 301
    assert bootstrap_t_p(diffs, counts, weights)[0] == pytest.approx(symmetric)


def test_mammen_weights_have_mean_0_variance_1_and_third_moment_1() -> None:
    w = mammen_weights(50, 4000, 9).ravel()
    assert set(np.round(np.unique(w), 6)) == {
        round(-(5**0.5 - 1) / 2, 6),
        round((5**0.5 + 1) / 2, 6),
    }
    assert (w.mean(), (w**2).mean(), (w**3).mean()) == pytest.approx((0, 1, 1), abs=0.02)


def test_a_clear_difference_is_called_by_every_candidate() -> None:
    rng = np.random.default_rng(4)
    counts = np.full((32, 2), 5)
    diffs = rng.normal(3.0, 2.0, (32, 2)) * counts
    assert np.all(bootstrap_t_p(diffs, counts, resample_weights(32, 999, 2)) < 0.01)
    assert np.all(wild_mammen_p(diffs, counts, mammen_weights(32, 999, 2)) < 0.01)
    assert np.all(hall_t_p(diffs, counts) < 0.01)
