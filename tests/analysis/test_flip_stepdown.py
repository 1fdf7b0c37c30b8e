"""Issue 44's two candidates: the studentized sign-flip test and its intersection with the
bootstrap-t (analysis.statistics.flip_tests), and the max-t step-down over cells from joint
resamples (analysis.statistics.stepdown)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from analysis.statistics.bootstrap import resample_weights
from analysis.statistics.flip_tests import (
    flip_boot_t_p,
    flip_weights,
    studentized_flip_p,
    webb_weights,
)
from analysis.statistics.multiple import holm
from analysis.statistics.skew_tests import (
    bootstrap_t_p,
    bootstrap_t_replicates,
    cr1,
    two_sided_p,
)
from analysis.statistics.stepdown import max_t_stepdown, min_p_stepdown, single_step_max_t

families = st.integers(6, 20).flatmap(
    lambda f: st.tuples(
        arrays(np.float64, (f, 4), elements=st.floats(-50, 50, allow_nan=False)),
        arrays(np.int64, (f, 4), elements=st.integers(1, 9)),
    )
)


def _spread(diffs: np.ndarray, counts: np.ndarray) -> bool:
    delta, se, _ = cr1(diffs, counts)
    return bool(np.all(se > 1e-6 * (1 + np.abs(delta))))


@settings(max_examples=60, deadline=None)
@given(families, st.floats(-20, 20), st.floats(0.01, 100))
def test_the_intersection_p_is_at_least_each_part_and_unchanged_by_scale(
    data: tuple[np.ndarray, np.ndarray], shift: float, scale: float
) -> None:
    diffs, counts = data
    diffs = diffs + shift * counts
    assume(_spread(diffs, counts))
    f = len(diffs)
    flips, boot = flip_weights(f, 199, 3, 0.05 / 4), resample_weights(f, 199, 4)
    p = flip_boot_t_p(diffs, counts, flips, boot)
    assert np.all(p >= studentized_flip_p(diffs, counts, flips))
    assert np.all(p >= bootstrap_t_p(diffs, counts, boot))
    assert flip_boot_t_p(scale * diffs, counts, flips, boot) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize("f", [9, 10, 13])
def test_every_sign_vector_is_enumerated_where_it_reaches_the_level(f: int) -> None:
    signs = flip_weights(f, 999, 0, 0.05 / 12)
    assert signs.shape == (2**f - 1, f)
    assert len({tuple(row) for row in signs}) == 2**f - 1 and not (signs == 1).all(1).any()


def test_webbs_weights_where_sign_vectors_cannot_reach_the_level() -> None:
    # 8 families: 2 / 2^8 = 1/128 is above 0.05 / 12, so no sign-flip p could call a cell.
    w = flip_weights(8, 4000, 1, 0.05 / 12)
    assert w.shape == (4000, 8)
    assert set(np.round(np.abs(w).ravel() ** 2, 9)) == {0.5, 1.0, 1.5}
    pooled = webb_weights(50, 4000, 2).ravel()
    assert abs(pooled.mean()) < 0.02 and abs((pooled**2).mean() - 1) < 0.02


def test_the_enumerated_flips_floor_is_two_over_two_to_the_f() -> None:
    # Every family far on one side: only the identity and its negative reach |t|.
    f = 10
    diffs, counts = np.linspace(5, 9, f)[:, None], np.full((f, 1), 4)
    p = studentized_flip_p(diffs, counts, flip_weights(f, 0, 0, 0.01))
    assert p == pytest.approx([2 / 2**f])


def test_the_studentized_flips_are_exact_on_exchangeable_pairs() -> None:
    # A/A: per family two draws of one skewed law (its scale differing by family), so each
    # family's difference is symmetric about 0. A randomization test's level is then at
    # most alpha exactly; 600 seeded data sets stay within the binomial bound.
    rng = np.random.default_rng(44)
    f, k, trials, alpha = 10, 3, 600, 0.05
    signs = flip_weights(f, 0, 0, alpha)
    called = 0
    for _ in range(trials):
        scale = rng.lognormal(0, 1, size=(f, 1))
        a = rng.lognormal(0, 1.5, size=(f, k)) * scale
        b = rng.lognormal(0, 1.5, size=(f, k)) * scale
        called += int((studentized_flip_p(b - a, np.full((f, k), 8), signs) <= alpha).sum())
    assert called <= stats.binom.ppf(0.999, trials * k, alpha)
    assert called >= stats.binom.ppf(0.001, trials * k, alpha)  # and not a dead test


@settings(max_examples=80, deadline=None)
@given(families, st.integers(0, 10_000))
def test_the_stepdown_sits_between_each_cells_own_p_and_the_single_step_maximum(
    data: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    diffs, counts = data
    assume(_spread(diffs, counts))
    t, reps, testable = bootstrap_t_replicates(
        diffs, counts, resample_weights(len(diffs), 99, seed)
    )
    own = two_sided_p(t, reps, "symmetric", testable)
    down = max_t_stepdown(t, reps, testable)
    single = single_step_max_t(t, reps, testable)
    assert np.all(own <= down + 1e-12) and np.all(down <= single + 1e-12)
    assert np.all((down > 0) & (down <= 1))
    # Ordered as |t|: a cell further from 0 never gets the larger adjusted p.
    order = np.argsort(-np.abs(t), kind="stable")
    assert np.all(np.diff(down[order]) >= -1e-12)


@settings(max_examples=40, deadline=None)
@given(families, st.integers(0, 10_000))
def test_one_cell_the_stepdown_is_its_bootstrap_t_p(
    data: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    diffs, counts = data
    diffs, counts = diffs[:, :1], counts[:, :1]
    assume(_spread(diffs, counts))
    t, reps, testable = bootstrap_t_replicates(
        diffs, counts, resample_weights(len(diffs), 99, seed)
    )
    assert max_t_stepdown(t, reps, testable) == pytest.approx(
        two_sided_p(t, reps, "symmetric", testable)
    )


def test_the_stepdown_holds_the_family_wise_level_on_a_a_pairs() -> None:
    # 300 seeded A/A comparisons of 6 correlated cells over 24 families: any false call at
    # most the binomial bound of 5%, where each cell alone at 5% would call far more.
    rng = np.random.default_rng(7)
    f, k, trials = 24, 6, 300
    weights = resample_weights(f, 399, 11)
    any_call = any_raw = 0
    for _ in range(trials):
        common = rng.standard_t(4, size=(f, 1))
        diffs = common + 0.5 * rng.standard_t(4, size=(f, k))  # cells share their families
        t, reps, testable = bootstrap_t_replicates(diffs, np.full((f, k), 8), weights)
        any_call += int((max_t_stepdown(t, reps, testable) < 0.05).any())
        any_raw += int((two_sided_p(t, reps, "symmetric", testable) < 0.05).any())
    assert any_call <= stats.binom.ppf(0.99, trials, 0.05)
    assert any_raw > stats.binom.ppf(0.99, trials, 0.05)  # without a correction: over


def test_the_stepdown_calls_at_least_what_holm_calls_on_strongly_dependent_cells() -> None:
    # Cells that are near copies of each other: the joint maximum is about one cell's |t*|,
    # where Holm divides alpha by every cell.
    rng = np.random.default_rng(3)
    f, k = 40, 8
    base = rng.standard_normal((f, 1)) + 0.55
    diffs = base + 0.01 * rng.standard_normal((f, k))
    counts = np.full((f, k), 8)
    t, reps, testable = bootstrap_t_replicates(diffs, counts, resample_weights(f, 1999, 5))
    down = max_t_stepdown(t, reps, testable)
    held = holm(two_sided_p(t, reps, "symmetric", testable))
    assert np.all(down <= held + 1e-12) and (down < 0.05).sum() >= (held < 0.05).sum()


@settings(max_examples=80, deadline=None)
@given(families, st.integers(0, 10_000))
def test_the_min_p_stepdown_is_at_least_each_cells_own_p_and_ordered_by_it(
    data: tuple[np.ndarray, np.ndarray], seed: int
) -> None:
    diffs, counts = data
    assume(_spread(diffs, counts))
    t, reps, testable = bootstrap_t_replicates(
        diffs, counts, resample_weights(len(diffs), 99, seed)
    )
    own = two_sided_p(t, reps, "symmetric", testable)
    down = min_p_stepdown(t, reps, testable)
    assert np.all(own <= down + 1e-12) and np.all(down <= 1)
    order = np.lexsort((-np.abs(t), own))
    assert np.all(np.diff(down[order]) >= -1e-12)


def test_the_min_p_stepdown_holds_the_family_wise_level_on_a_a_pairs() -> None:
    # As the max-t test above, with one cell's tails far heavier than the others'.
    rng = np.random.default_rng(8)
    f, k, trials = 24, 6, 300
    weights = resample_weights(f, 399, 12)
    any_call = 0
    for _ in range(trials):
        common = rng.standard_t(4, size=(f, 1))
        diffs = common + 0.5 * rng.standard_t(4, size=(f, k))
        diffs[:, 0] = rng.standard_t(1.5, size=f)  # a cell of its own, heavy-tailed
        t, reps, testable = bootstrap_t_replicates(diffs, np.full((f, k), 8), weights)
        any_call += int((min_p_stepdown(t, reps, testable) < 0.05).any())
    assert any_call <= stats.binom.ppf(0.99, trials, 0.05)
