"""The proper scores of piecewise-uniform distributions, checked three independent ways."""

from __future__ import annotations

import numpy as np
import scoringrules as sr
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis.statistics.predictive import PathSteps, tree_leaves
from analysis.statistics.proper_scores import (
    Leaves,
    central_intervals,
    crps,
    interval_score,
    log_scores,
    massive,
    pit,
    quantiles,
    step_log_loss,
    step_rps,
)


def one(lo: list[float], hi: list[float], mass: list[float]) -> Leaves:
    return Leaves(
        1,
        np.zeros(len(lo), np.int64),
        np.array(lo, float),
        np.array(hi, float),
        np.array(mass, float),
    )


def pairwise_crps(lo: np.ndarray, hi: np.ndarray, m: np.ndarray, y: float) -> float:
    """E|X − y| − ½ E|X − X'| term by term (the issue's formula), for disjoint leaves."""
    c, w = (lo + hi) / 2, hi - lo
    # E|U − y| for U uniform on [lo, hi): by cases.
    inside = (lo <= y) & (y < hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        in_leaf = ((y - lo) ** 2 + (hi - y) ** 2) / (2 * np.where(w > 0, w, 1))
    to_y = np.where(inside & (w > 0), in_leaf, np.abs(c - y))
    cross = np.abs(c[:, None] - c[None, :]) * m[:, None] * m[None, :]
    np.fill_diagonal(cross, 0.0)
    e_xx = cross.sum() + (m * m * w / 3).sum()
    return float((m * to_y).sum() - 0.5 * e_xx)


def integrated_crps(lo: np.ndarray, hi: np.ndarray, m: np.ndarray, y: float) -> float:
    """∫ (F(x) − 1{x ≥ y})² dx by the trapezoid rule on a fine grid."""
    left, right = min(lo.min(), y) - 1.0, max(hi.max(), y) + 1.0
    x = np.linspace(left, right, 400_001)
    share = np.clip((x[:, None] - lo) / np.where(hi > lo, hi - lo, 1e-300), 0, 1)
    f = (share * m).sum(axis=1)
    return float(np.trapezoid((f - (x >= y)) ** 2, x))


partitions = st.lists(
    st.tuples(st.integers(1, 5), st.floats(0.0, 1.0)), min_size=1, max_size=6
).map(lambda parts: parts if sum(p for _, p in parts) > 0 else [(w, 1.0) for w, _ in parts])


def leaves_of(parts: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    widths = np.array([w for w, _ in parts], float)
    mass = np.array([p for _, p in parts], float)
    hi = np.cumsum(widths)
    return hi - widths, hi, mass / mass.sum()


@settings(max_examples=60, deadline=None)
@given(partitions, st.floats(-3.0, 35.0))
def test_crps_matches_the_pairwise_formula(parts, y):
    lo, hi, m = leaves_of(parts)
    found = crps(Leaves(1, np.zeros(len(lo), np.int64), lo, hi, m), np.array([y]))[0]
    assert np.isclose(found, pairwise_crps(lo, hi, m, y), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.sampled_from([0.0, 0.0, 0.3, 1.0])), min_size=1,
             max_size=8),
    st.floats(-3.0, 45.0),
    st.sampled_from([1.0, 0.97, 1.03]),
)  # fmt: skip
def test_dropping_the_inner_leaves_of_mass_0_changes_no_score(parts, y, total):
    lo, hi, m = leaves_of(parts if any(p for _, p in parts) else [(w, 1.0) for w, _ in parts])
    whole = Leaves(1, np.zeros(len(lo), np.int64), lo, hi, m * total)  # total: rounding
    kept, at = massive(whole), np.array([y])
    assert len(kept.owner) == (m > 0)[1:-1].sum() + min(len(m), 2)
    assert np.isclose(crps(kept, at)[0], crps(whole, at)[0], atol=1e-12)
    assert pit(kept, at)[0] == pit(whole, at)[0]
    assert log_scores(kept, at, np.ones(1)) == log_scores(whole, at, np.ones(1))
    for q in (0.05, 0.25, 0.5, 0.75, 0.95, 0.99):
        assert quantiles(kept, q)[0] == quantiles(whole, q)[0]


def test_crps_matches_numerical_integration():
    lo, hi, m = (
        np.array([0.0, 2.0, 3.0, 7.0]),
        np.array([2.0, 3.0, 7.0, 8.0]),
        np.array([0.1, 0.5, 0.0, 0.4]),
    )
    for y in (-1.0, 0.0, 1.3, 2.5, 5.0, 7.9, 9.5):
        found = crps(Leaves(1, np.zeros(4, np.int64), lo, hi, m), np.array([y]))[0]
        assert np.isclose(found, integrated_crps(lo, hi, m, y), atol=1e-6), y


def test_crps_with_a_gap_matches_numerical_integration():
    lo, hi, m = np.array([0.0, 5.0]), np.array([1.0, 6.0]), np.array([0.3, 0.7])
    for y in (-2.0, 0.5, 3.0, 5.5, 8.0):
        found = crps(Leaves(1, np.zeros(2, np.int64), lo, hi, m), np.array([y]))[0]
        assert np.isclose(found, integrated_crps(lo, hi, m, y), atol=1e-6)


def test_crps_matches_scoringrules_uniform_and_weighted_ensemble():
    # One leaf: the uniform distribution's closed form.
    for y in (-0.5, 0.2, 0.7, 1.4):
        found = crps(one([0.0], [1.0], [1.0]), np.array([y]))[0]
        assert np.isclose(found, float(sr.crps_uniform(y, 0.0, 1.0)), atol=1e-12)
    # Point masses (leaves of width 0): a weighted ensemble, exactly.
    x, w = np.array([1.0, 2.0, 4.0]), np.array([0.2, 0.5, 0.3])
    for y in (0.0, 1.5, 2.0, 3.3, 6.0):
        found = crps(one(list(x), list(x), list(w)), np.array([y]))[0]
        expected = float(sr.crps_ensemble(y, x, ens_w=w, estimator="nrg"))
        assert np.isclose(found, expected, atol=1e-12)


@given(st.floats(-50, 50), st.floats(-50, 50))
def test_a_point_mass_scores_the_absolute_error(x, y):
    leaves = one([x - 60.0, x, x], [x, x, x + 60.0], [0.0, 1.0, 0.0])
    assert np.isclose(crps(leaves, np.array([y]))[0], abs(x - y), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(partitions, partitions.map(lambda p: [q for _, q in p]))
def test_crps_and_log_score_are_proper_on_a_partition(parts, other):
    """Under outcomes drawn from F, the expected score of F is no worse than that of G
    (G: other masses on the same leaves)."""
    lo, hi, m = leaves_of(parts)
    g = np.resize(np.array(other, float) + 1e-3, len(m))
    g /= g.sum()
    # The expectation over y ~ F exactly enough: many points per leaf, weighted.
    points = 64
    share = (np.arange(points) + 0.5) / points
    y = (lo[:, None] + share[None, :] * (hi - lo)[:, None]).ravel()
    weight = np.repeat(m / points, points)
    owner = np.zeros(len(lo), np.int64)

    def expected(masses: np.ndarray) -> tuple[float, float]:
        scores = [
            (
                crps(Leaves(1, owner, lo, hi, masses), np.array([v]))[0],
                log_scores(Leaves(1, owner, lo, hi, masses), np.array([v]), np.ones(1))[0][0],
            )
            for v in y
        ]
        c = np.array([s[0] for s in scores])
        lg = np.array([s[1] for s in scores])
        used = weight > 0
        return float((weight * c).sum()), float((weight[used] * lg[used]).sum())

    own_c, own_log = expected(m)
    other_c, other_log = expected(g)
    assert own_c <= other_c + 1e-9
    assert own_log <= other_log + 1e-9


def test_log_scores_count_a_zero_mass_true_leaf_as_infinite():
    leaves = one([0.0, 1.0, 3.0], [1.0, 3.0, 4.0], [0.5, 0.5, 0.0])
    plain, density = log_scores(leaves, np.array([1.5]), np.array([4.0]))
    assert np.isclose(plain[0], -np.log(0.5))
    assert np.isclose(density[0], -np.log(0.5 / (2.0 / 4.0)))
    plain, _ = log_scores(leaves, np.array([3.5]), np.array([4.0]))
    assert plain[0] == np.inf
    plain, _ = log_scores(leaves, np.array([9.0]), np.array([4.0]))  # outside every leaf
    assert plain[0] == np.inf


def test_pit_quantiles_and_intervals_of_two_owners():
    leaves = Leaves(
        2,
        np.array([0, 0, 1]),
        np.array([0.0, 1.0, 10.0]),
        np.array([1.0, 3.0, 20.0]),
        np.array([0.5, 0.5, 1.0]),
    )
    assert np.allclose(pit(leaves, np.array([2.0, 15.0])), [0.75, 0.5])
    assert np.allclose(quantiles(leaves, 0.25), [0.5, 12.5])
    lower, upper = central_intervals(leaves, 0.5)
    assert np.allclose(lower, [0.5, 12.5]) and np.allclose(upper, [2.0, 17.5])
    y = np.array([2.5, 19.0])
    lower, upper = central_intervals(leaves, 0.8)
    ours = interval_score(lower, upper, y, 0.8)
    theirs = np.asarray(sr.interval_score(y, lower, upper, 0.2))  # its alpha: 1 − level
    assert np.allclose(ours, theirs)
    assert np.allclose(ours, [2.4, 8.0])
    assert np.allclose(
        interval_score(lower, upper, np.array([3.0, 5.0]), 0.8), [2.4 + 4.0, 8.0 + 60.0]
    )


def test_step_scores():
    p = np.array([0.7, 0.2, 0.1, 0.4, 0.6])
    width = np.array([3, 2])
    true = np.array([0, 1])
    # RPS: ((0.7−1)² + (0.9−1)²)/2 and (0.4−0)².
    assert np.allclose(step_rps(p, width, true), [(0.09 + 0.01) / 2, 0.16])
    assert np.allclose(step_log_loss(np.array([0.7, 0.6])), -np.log([0.7, 0.6]))


def test_tree_leaves_follow_the_path_and_leave_siblings_uniform():
    # N = 8, K = 2: [0, 8) -> chose [4, 8) (p .3/.7) -> chose [4, 6) (p .9/.1) -> [5, 6).
    steps = PathSteps(
        n=1,
        n_cells=np.array([8]),
        path=np.array([0, 0, 0]),
        k=np.array([2, 2, 2]),
        chosen=np.array([1, 0, 1]),
        p=np.array([0.3, 0.7, 0.9, 0.1, 0.4, 0.6]),
    )
    leaves = tree_leaves(steps)
    assert leaves.lo.tolist() == [0, 4, 5, 6]
    assert leaves.hi.tolist() == [4, 5, 6, 8]
    assert np.allclose(leaves.mass, [0.3, 0.7 * 0.9 * 0.4, 0.7 * 0.9 * 0.6, 0.7 * 0.1])
    assert np.isclose(leaves.mass.sum(), 1.0)


def test_tree_leaves_of_direct_choice_are_the_cells():
    steps = PathSteps(
        1,
        np.array([4]),
        np.array([0]),
        np.array([4]),
        np.array([2]),
        np.array([0.1, 0.2, 0.3, 0.4]),
    )
    leaves = tree_leaves(steps)
    assert leaves.lo.tolist() == [0, 1, 2, 3] and np.allclose(leaves.mass, [0.1, 0.2, 0.3, 0.4])


def test_tree_leaves_leave_out_inner_leaves_of_mass_0_and_keep_the_ends():
    # N = 6, direct choice: cells 1, 3 and 5 have probability 0; cell 5 is the last child.
    p = np.array([0.2, 0.0, 0.5, 0.0, 0.3, 0.0])
    steps = PathSteps(1, np.array([6]), np.array([0]), np.array([6]), np.array([2]), p)
    leaves = tree_leaves(steps)
    assert leaves.lo.tolist() == [0, 2, 4, 5] and leaves.mass.tolist() == [0.2, 0.5, 0.3, 0.0]
    full = Leaves(1, np.zeros(6, np.int64), np.arange(6.0), np.arange(1.0, 7.0), p)
    for y in (0.5, 1.5, 3.5, 5.5):
        assert np.isclose(crps(leaves, np.array([y]))[0], crps(full, np.array([y]))[0])


def test_no_owners_score_nothing():
    empty = Leaves(0, np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    none = np.zeros(0)
    assert len(crps(empty, none)) == 0 and len(pit(empty, none)) == 0
    assert len(log_scores(empty, none, none)[0]) == 0 and len(quantiles(empty, 0.5)) == 0


def test_a_quantile_met_exactly_is_found_whatever_the_float_sums():
    # 0.7 + 0.1 + 0.1 sums to 0.8999999999999999 in floats: F reaches 0.9 at 3 exactly, so
    # F⁻¹(0.9) is 3, not the far side of the empty cell [3, 4).
    found = quantiles(one([0, 1, 2, 3, 4], [1, 2, 3, 4, 5], [0.7, 0.1, 0.1, 0.0, 0.1]), 0.9)
    assert found[0] == 3.0
