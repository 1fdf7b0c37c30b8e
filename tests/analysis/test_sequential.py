"""The sequential rule (analysis.statistics.sequential): alpha spent over looks sums to
alpha, peeking at pre-drawn A/A sim comparisons keeps the level, and a clear difference
stops early."""

from __future__ import annotations

import numpy as np
import pytest
from aa_draws import aa_comparisons
from hypothesis import given, settings
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
    # With the t inside; the default bootstrap-t's heavier tails at 16 families decide a
    # look later (test_calibration_nulls measures that rule).
    path = sequential_replay(diffs, counts, n_flips=999, method="t")
    assert list(path.reason[3:6]) == ["decided"] * 3 and list(path.stopped_at[3:6]) == [1] * 3
    assert np.all(path.sign[3:6] == 1)
    assert list(path.reason[:3]) == ["futile"] * 3


@given(st.floats(-4, 4), st.floats(0.001, 0.2))
def test_hwang_shih_decani_spending_also_sums_to_alpha(gamma: float, alpha: float) -> None:
    levels = spending_levels([0.25, 0.5, 0.75, 1.0], alpha, gamma)
    assert sum(levels) == pytest.approx(alpha) and all(level >= 0 for level in levels)


def test_cells_with_no_difference_leave_holms_m_so_a_marginal_cell_is_called() -> None:
    # One cell with a clear difference among eleven that answered alike everywhere: Holm
    # over the one callable cell tests it at the look's level, not at level / 12.
    rng = np.random.default_rng(3)
    counts = np.full((32, 12), 8.0)
    diffs = np.zeros((32, 12))
    diffs[:, 0] = counts[:, 0] * (1.0 + rng.normal(0, 1.5, 32))
    path = sequential_replay(diffs, counts)
    assert path.reason[0] == "decided" and path.sign[0] == 1
    assert set(path.reason[1:]) == {"futile"}


def test_looks_not_taken_leave_cells_open_and_a_margin_makes_small_effects_futile() -> None:
    diffs, counts = aa_comparisons(1, 64)[0]
    partial = sequential_replay(diffs, counts, upto=1)
    assert partial.delta is not None and partial.delta.shape == (1, diffs.shape[1])
    assert not partial.settled and "open" in set(partial.reason)
    # A/A differences are small against a margin of 1,000 points: futile at the first look.
    wide = sequential_replay(diffs, counts, margin=1_000.0)
    assert set(wide.reason) <= {"futile"} and set(wide.stopped_at) == {1}


# Each example replays the rule twice with the default test's 9,999 resamples per look
# (about 0.14 s idle): 25 examples keep the test far inside pytest's 120 s timeout on a
# machine whose two cores run two suites at once.
@settings(max_examples=25)
@given(st.integers(0, 2**31), st.floats(0.0, 3.0), st.sampled_from([0.0, 0.3]))
def test_what_is_asked_after_a_cell_stopped_changes_no_decision(
    seed: int, effect: float, margin: float
) -> None:
    # A stopped cell's later families (never asked, were its decoders left out of later
    # looks) may hold anything: the decisions of every cell stay as they were.
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 9, size=(32, 8)).astype(float)
    shift = np.array([0, 0, effect, effect, -effect, 0.5 * effect, 0, 2 * effect])
    diffs = counts * (shift + rng.standard_t(3, size=(32, 8)))
    diffs[:, 0] = 0.0  # a cell that answered alike everywhere
    path = sequential_replay(diffs, counts, margin=margin)
    later = diffs.copy(), counts.copy()
    for cell, look in enumerate(path.stopped_at):
        after = path.sizes[int(look) - 1]
        later[0][after:, cell] = rng.normal(0, 50, size=32 - after)
        later[1][after:, cell] = rng.integers(0, 9, size=32 - after)
    again = sequential_replay(*later, margin=margin)
    assert list(again.stopped_at) == list(path.stopped_at)
    assert list(again.reason) == list(path.reason) and list(again.sign) == list(path.sign)
    assert path.delta is not None and again.delta is not None
    for look in range(len(path.delta)):
        shown = path.stopped_at >= look + 1  # each cell's path up to its stop
        assert np.allclose(again.delta[look, shown], path.delta[look, shown], equal_nan=True)
