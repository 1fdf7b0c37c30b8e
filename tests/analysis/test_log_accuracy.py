"""LAR, MSA and SSPB (Morley et al. 2018): definitions, symmetry, zeros and sign mismatches."""

from __future__ import annotations

import math

import numpy as np
from analysis_runs import RunFactory, true_index
from hypothesis import given
from hypothesis import strategies as st

from analysis import analysis_to_dict, analyze_run, build_tables, load_run
from analysis.statistics.log_accuracy import lar, log_ratios, msa, sspb

positive = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False)
ratios = st.lists(st.tuples(positive, positive), min_size=1, max_size=30)


def test_worked_example() -> None:
    # value twice the target and half of it: |q| = ln 2 both times, biases cancel.
    r = log_ratios(np.array([2.0, 1.0, 5.0]), np.array([1.0, 2.0, 5.0]))
    assert np.allclose(r.q, [math.log(2), -math.log(2), 0.0])
    assert math.isclose(lar(r.q), 100 * 2 * math.log(2) / 3)
    assert math.isclose(msa(r.q), 100.0)  # median |q| = ln 2: a factor of 2 is 100%
    assert sspb(r.q) == 0.0


def test_zero_and_sign_mismatch_are_counted_apart_never_dropped_silently() -> None:
    value = np.array([0.0, 3.0, -2.0, 4.0, np.nan, -1.0])
    target = np.array([1.0, 0.0, 2.0, 4.0, 1.0, -2.0])
    r = log_ratios(value, target)
    assert r.zero.tolist() == [True, True, False, False, False, False]
    assert r.sign_mismatch.tolist() == [False, False, True, False, False, False]
    # Both negative: a defined ratio (the log of |v|/|y|).
    assert np.isnan(r.q[:3]).all() and np.isnan(r.q[4])
    assert np.allclose(r.q[[3, 5]], [0.0, math.log(0.5)])


def test_no_defined_ratio_gives_nan() -> None:
    q = log_ratios(np.array([0.0]), np.array([1.0])).q
    assert math.isnan(lar(q)) and math.isnan(msa(q)) and math.isnan(sspb(q))


@given(ratios)
def test_swapping_value_and_target_keeps_accuracy_and_flips_bias(pairs) -> None:
    v, y = np.array(pairs).T
    q, back = log_ratios(v, y).q, log_ratios(y, v).q
    assert math.isclose(lar(q), lar(back), rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(msa(q), msa(back), rel_tol=1e-9, abs_tol=1e-9)
    # The symmetric bias: over- and under-prediction by the same factor are mirror images.
    assert math.isclose(sspb(q), -sspb(back), rel_tol=1e-9, abs_tol=1e-9)


@given(ratios, st.floats(min_value=1e-3, max_value=1e3))
def test_scale_free(pairs, scale: float) -> None:
    v, y = np.array(pairs).T
    q, scaled = log_ratios(v, y).q, log_ratios(v * scale, y * scale).q
    assert math.isclose(lar(q), lar(scaled), rel_tol=1e-6, abs_tol=1e-6)


@given(ratios)
def test_bounds(pairs) -> None:
    v, y = np.array(pairs).T
    q = log_ratios(v, y).q
    assert lar(q) >= 0 and msa(q) >= 0
    assert abs(sspb(q)) <= msa(q) + 1e-9  # |median q| <= median |q|


def _zero_or_mirror(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
    """tree2 answers 0 on the minus50 grid, digits the target's mirror (-target); else exact."""
    z = true_index(family)
    if domain == "minus50" and decoder == "tree2":
        return 50  # value L + 50 eps = 0
    if domain == "minus50" and decoder == "digits":
        return 100 - z  # value 50 - z = -target: the sign differs
    return z


def test_analyze_counts_zeros_and_sign_mismatches_beside_lar(runs: RunFactory) -> None:
    a = analyze_run(load_run(runs.affine(predict=_zero_or_mirror)), n_boot=20)
    cells = {(c["decoder"], c["condition"]): c for c in analysis_to_dict(a)["cells"]}
    per_cell = 4 * 2  # families x orders on the minus50 grid
    for condition in ("arithmetic", "provided"):
        tree2, digits, direct = (cells[(d, condition)] for d in ("tree2", "digits", "direct"))
        assert tree2["log_accuracy"]["zero"] == per_cell
        assert tree2["log_accuracy"]["sign_mismatch"] == 0
        assert digits["log_accuracy"]["sign_mismatch"] == per_cell
        assert direct["log_accuracy"] == {"msa": 0.0, "sspb": 0.0, "zero": 0, "sign_mismatch": 0}
        # The rest are exact: LAR is 0 over the outputs that have a log ratio, and those are
        # the ok outputs less the ones counted apart.
        assert tree2["lar"]["value"] == 0.0
        assert tree2["lar"]["n"] == tree2["n_ok"] - per_cell
    table = next(t for t in build_tables(a) if t.title.startswith("Log accuracy ratio"))
    assert table.header[-2:] == ("no log: zero", "no log: sign mismatch")
    assert any(row[-2] == str(per_cell) for row in table.rows)
