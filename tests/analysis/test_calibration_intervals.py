"""benchmarks.calibration_intervals: the share's interval respects the draws' dependence."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.calibration_intervals import clopper_pearson, share_interval


@given(st.lists(st.integers(0, 1), min_size=2, max_size=300))
def test_independent_cells_give_clopper_pearson(cells: list[int]) -> None:
    hits = np.array(cells)
    units = [(f"run:{k}",) for k in range(len(cells))]  # each cell its own unit
    got = share_interval(hits, np.ones(len(cells)), units)
    assert np.allclose(got, clopper_pearson(int(hits.sum()), len(cells)), atol=1e-9)


@given(st.lists(st.integers(0, 1), min_size=2, max_size=200), st.integers(2, 12))
def test_perfectly_correlated_cells_count_the_draws(draws: list[int], per_draw: int) -> None:
    called = np.array(draws)
    units = [(f"a:{k}", f"b:{k}") for k in range(len(draws))]
    got = share_interval(called * per_draw, np.full(len(draws), per_draw), units)
    assert np.allclose(got, clopper_pearson(int(called.sum()), len(draws)), atol=1e-9)
