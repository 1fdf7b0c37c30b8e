"""The CRPS on log10|y|: the distribution folded, floored at half a cell and spread
uniformly on the log scale (``log_scale``), with disjoint leaves that keep every mass."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_proper_scores import integrated_crps

from analysis.statistics.log_scale import log_leaves, log_target
from analysis.statistics.proper_scores import Leaves, crps


def leaves(lo: list[float], hi: list[float], mass: list[float]) -> Leaves:
    return Leaves(1, np.zeros(len(lo), np.int64), np.array(lo, float), np.array(hi, float),
                  np.array(mass, float))  # fmt: skip


def test_a_point_mass_scores_the_log_distance():
    # Cell 7 of the x10000 grid (L = 0, eps = 10^4): the centre 75,000; y's centre 45,000.
    one = log_leaves(leaves([7.0], [8.0], [1.0]), np.zeros(1), np.array([1e4]))
    assert np.allclose([one.lo[0], one.hi[0]], np.log10([7e4, 8e4]))
    # A width-0 leaf (a point mass) stays one: |log10 x − log10 y|.
    point = log_leaves(leaves([7.5], [7.5], [1.0]), np.zeros(1), np.array([1e4]))
    y = log_target(np.array([4.5]), np.zeros(1), np.array([1e4]))
    assert np.isclose(crps(point, y)[0], abs(np.log10(7.5e4) - np.log10(4.5e4)))


def test_signs_fold_and_a_leaf_across_zero_is_cut_there():
    # The -50 domain (L = -50, eps = 1): cells [45, 46) and [54, 55) are -5..-4 and 4..5.
    folded = log_leaves(leaves([45.0, 54.0], [46.0, 55.0], [0.5, 0.5]), np.array([-50.0]),
                        np.ones(1))  # fmt: skip
    assert np.allclose(folded.lo, [np.log10(4)]) and np.allclose(folded.hi, [np.log10(5)])
    assert np.allclose(folded.mass, [1.0])
    # [-2, 2): cut at 0, the halves folded onto one [0, 2), whose end below 0.5 (eps/2) is
    # floored: all of the mass over [log10 0.5, log10 2).
    across = log_leaves(leaves([48.0], [52.0], [1.0]), np.array([-50.0]), np.ones(1))
    assert np.allclose([across.lo, across.hi, across.mass], [[np.log10(0.5)], [np.log10(2)], [1]])
    # A part wholly below half a cell is a point mass at log10(eps/2).
    tiny = log_leaves(leaves([50.0, 51.0], [50.25, 52.0], [0.25, 0.75]), np.array([-50.0]),
                      np.ones(1))  # fmt: skip
    assert np.allclose(tiny.lo, [np.log10(0.5), np.log10(1)]) and np.allclose(
        tiny.mass, [0.25, 0.75]
    )
    assert tiny.hi[0] == tiny.lo[0]


parts = st.lists(st.tuples(st.integers(1, 6), st.floats(0.0, 1.0)), min_size=1, max_size=7)


@settings(max_examples=60, deadline=None)
@given(parts, st.integers(-40, 40), st.sampled_from([0.01, 1.0, 1e4]), st.floats(0.0, 30.0))
def test_log_leaves_are_disjoint_keep_the_mass_and_score_as_integrated(parts, start, eps, y):
    widths = np.array([w for w, _ in parts], float)
    mass = np.array([m for _, m in parts], float)
    mass = mass / mass.sum() if mass.sum() > 0 else np.full(len(mass), 1.0 / len(mass))
    hi = np.cumsum(widths)
    lower = np.array([start * eps])
    found = log_leaves(leaves(list(hi - widths), list(hi), list(mass)), lower, np.array([eps]))
    assert np.isclose(found.mass.sum(), 1.0)
    assert np.all(found.hi >= found.lo)
    assert np.all(found.lo[1:] >= found.hi[:-1] - 1e-12)  # sorted, not overlapping
    target = log_target(np.array([y]), lower, np.array([eps]))
    score = crps(found, target)[0]
    assert np.isclose(score, integrated_crps(found.lo, found.hi, found.mass, target[0]), atol=2e-4)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 60), min_size=2, max_size=7),  # cell edges (ties: points)
            st.sampled_from([-60.0, -31.0, -5.0, 0.0, 3.0]),  # L: all-negative, mixed, positive
            st.sampled_from([0.01, 1.0, 10.0]),  # eps
            st.integers(0, 2**31),  # masses' seed
        ),
        min_size=1,
        max_size=6,
    ),
    st.floats(-3.0, 3.0),
)
def test_one_signed_owners_mapped_in_place_score_as_the_fold_does(owners, y):
    """Owners whose values keep one sign skip the fold's density sums (a speed path): their
    CRPS on log10|x| is the fold's, to rounding, beside owners that need the fold."""
    from analysis.statistics.log_scale import _added_parts

    own, lo, hi, mass, lower, eps = [], [], [], [], [], []
    for i, (edges, low, step, seed) in enumerate(owners):
        edges = sorted(edges)
        m = np.random.default_rng(seed).dirichlet(np.ones(len(edges) - 1))
        own += [i] * (len(edges) - 1)
        lo += edges[:-1]
        hi += edges[1:]
        mass += list(m)
        lower.append(low)
        eps.append(step)
    got = Leaves(len(owners), np.array(own), np.array(lo, float), np.array(hi, float),
                 np.array(mass))  # fmt: skip
    low, step = np.array(lower), np.array(eps)
    o = got.owner
    folded = _added_parts(got.n, o, low[o] + step[o] * got.lo, low[o] + step[o] * got.hi,
                          got.mass, step[o])  # fmt: skip
    ys = np.full(got.n, y)
    assert np.allclose(crps(log_leaves(got, low, step), ys), crps(folded, ys), atol=1e-12)
