"""The sequential rule (analysis.statistics.sequential): alpha spent over looks sums to
alpha, peeking at pre-drawn A/A sim comparisons keeps the level, and a clear difference
stops early."""

from __future__ import annotations

import numpy as np
import pytest
from aa_draws import aa_comparisons
from hypothesis import given
from hypothesis import strategies as st

from analysis.statistics.sequential import sequential_replay, spending_levels


@given(st.lists(st.floats(0.01, 0.99), min_size=0, max_size=6), st.floats(0.001, 0.2))
def test_the_looks_spend_exactly_alpha_and_none_spends_less_than_nothing(
    cuts: list[float], alpha: float
) -> None:
    looks = sorted({round(c, 6) for c in cuts} | {1.0})
    levels = spending_levels(looks, alpha)
    # O'Brien-Fleming-type: an early look may spend (almost) nothing.
    assert sum(levels) == pytest.approx(alpha) and all(level >= 0 for level in levels)


def test_looks_that_do_not_rise_to_1_are_refused() -> None:
    with pytest.raises(ValueError, match="increasing"):
        spending_levels([0.5, 0.5, 1.0], 0.05)
    with pytest.raises(ValueError, match="end at 1"):
        spending_levels([0.25, 0.5], 0.05)


def test_peeking_at_a_a_comparisons_keeps_the_level() -> None:
    # 200 A/A comparisons at 32 families, four looks each: any cell called at any look in
    # at most 19 of 200 (the binomial bound of 5%, as the fixed test's calibration test).
    called = 0
    for r, (diffs, counts) in enumerate(aa_comparisons(200, 32)):
        path = sequential_replay(diffs, counts, n_flips=499, seed=r)
        called += bool((path.reason == "decided").any())
    assert called <= 19


def test_a_clear_difference_is_decided_at_the_first_look_and_nulls_stop_as_futile() -> None:
    diffs, counts = aa_comparisons(1, 64)[0]
    diffs = diffs.copy()
    diffs[:, :3] = 0.0  # three cells with no change at all
    diffs[:, 3:6] += 40.0 * counts[:, 3:6]  # three cells much worse
    path = sequential_replay(diffs, counts, n_flips=999)
    assert list(path.reason[3:6]) == ["decided"] * 3 and list(path.stopped_at[3:6]) == [1] * 3
    assert np.all(path.sign[3:6] == 1)
    assert list(path.reason[:3]) == ["futile"] * 3
