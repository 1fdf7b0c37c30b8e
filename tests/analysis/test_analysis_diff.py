"""diff: paired changes between two runs, changed outputs, and refusals."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from analysis_runs import RunFactory, exact, true_index

from analysis import (
    STATISTICS,
    DiffRefusedError,
    diff_runs,
    family_totals,
    load_run,
    paired_family_test,
)
from analysis.cli import main
from analysis.statistics.family_test import Method

MAPE = STATISTICS.index("mape")


def worse_tree10(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
    """B: tree10 is off by +2 cells in the arithmetic condition for even families."""
    z = exact(family, domain, condition, order, decoder)
    if decoder == "tree10" and condition == "arithmetic" and family % 2 == 0:
        return z + 2
    return z


def test_identical_runs_have_zero_change(runs: RunFactory) -> None:
    a = runs.affine("a", families=range(6))
    d = diff_runs(load_run(a), load_run(a), n_boot=200)
    assert np.all(np.nan_to_num(d.delta) == 0)
    assert np.all(np.nan_to_num(d.delta_lo) == 0) and np.all(np.nan_to_num(d.delta_hi) == 0)
    assert d.n_changed.sum() == 0 and d.top == ()
    assert d.n_compared.sum() == 6 * 4 * 2 * 2 * 6


def test_changed_outputs_and_largest_changes(runs: RunFactory) -> None:
    a = load_run(runs.affine("a", families=range(6)))
    b = load_run(runs.affine("b", families=range(6), predict=worse_tree10))
    d = diff_runs(a, b, n_boot=300, top=5)
    t, arith = d.design.decoders.index("tree10"), d.design.conditions.index("arithmetic")
    assert d.n_changed[t, arith] == 3 * 4 * 2  # 3 even families × 4 domains × 2 orders
    assert d.n_changed.sum() == 24
    assert d.delta[1, t, arith] == pytest.approx(1.0)  # NMAE +2 cells on half the outputs
    assert len(d.top) == 5
    # The largest |ΔAPE| comes from the smallest target: family 0 (z=1): 200 points.
    assert true_index(0) == 1
    top = d.top[0]
    assert (top.decoder, top.condition, top.delta_ape) == ("tree10", "arithmetic", 200.0)
    assert top.job.startswith("affine/f0/")
    assert [abs(o.delta_ape) for o in d.top] == sorted(
        (abs(o.delta_ape) for o in d.top), reverse=True
    )


def test_paired_interval_is_compares_test_on_both_runs_family_sums(runs: RunFactory) -> None:
    a = load_run(runs.affine("a", families=range(8)))
    b = load_run(runs.affine("b", families=range(8), predict=worse_tree10))
    d = diff_runs(a, b, n_boot=250, seed=3)
    families = tuple(str(f) for f in range(8))
    ta, tb = (family_totals(r.outputs, d.design, families) for r in (a, b))
    diffs = (tb.sums - ta.sums).reshape(8, -1)
    test = paired_family_test(diffs, ta.counts.reshape(8, -1), alpha=0.05, n_flips=250, seed=3)
    lo, hi = test.lo, test.hi
    assert np.allclose(d.delta_lo.ravel(), lo, equal_nan=True)
    assert np.allclose(d.delta_hi.ravel(), hi, equal_nan=True)


@pytest.mark.parametrize(("method", "other"), [("t", "bootstrap_t"), ("bootstrap_t", "t")])
def test_cli_diff_test_brackets_with_the_test_asked_for(
    runs: RunFactory, capsys: pytest.CaptureFixture, method: Method, other: Method
) -> None:
    # diff --test, as compare's: the brackets are that test's interval (the two tests'
    # differ on these families).
    a = runs.affine("a", families=range(8))
    b = runs.affine("b", families=range(8), predict=worse_tree10)
    assert main(["diff", str(a), str(b), "--json", "--bootstrap", "250", "--test", method]) == 0
    data = orjson.loads(capsys.readouterr().out)
    asked = diff_runs(load_run(a), load_run(b), n_boot=250, method=method)
    not_asked = diff_runs(load_run(a), load_run(b), n_boot=250, method=other)
    i, c = asked.design.decoders.index("tree10"), asked.design.conditions.index("arithmetic")
    cell = next(
        x for x in data["cells"] if (x["decoder"], x["condition"]) == ("tree10", "arithmetic")
    )
    assert cell["mape"]["lo"] == pytest.approx(asked.delta_lo[MAPE, i, c])
    assert cell["mape"]["lo"] != pytest.approx(not_asked.delta_lo[MAPE, i, c])


def test_refuses_different_suites_or_case_sets(runs: RunFactory) -> None:
    a = load_run(runs.affine("a", families=range(2)))
    other_suite = load_run(runs.affine("s", families=range(2), suite="historical"))
    other_cases = load_run(runs.affine("c", families=range(2), case_hash="f" * 64))
    with pytest.raises(DiffRefusedError, match="same suite"):
        diff_runs(a, other_suite)
    with pytest.raises(DiffRefusedError, match="case sets differ"):
        diff_runs(a, other_cases)


def test_cli_refusal_is_one_line_and_exit_2(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    a = runs.affine("a", families=range(2))
    c = runs.affine("c", families=range(2), case_hash="f" * 64)
    assert main(["diff", str(a), str(c)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("numericjev diff: error: the case sets differ")


def test_cli_diff_markdown_and_json(runs: RunFactory, capsys: pytest.CaptureFixture) -> None:
    a = runs.affine("a", families=range(4))
    b = runs.affine("b", families=range(4), predict=worse_tree10, simulated=False)
    assert main(["diff", str(a), str(b), "--bootstrap", "200", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED MODEL — not a measurement of any real model (A)" in out
    assert "Largest changes (top 3 by |ΔAPE|)" in out
    assert "| Tree (K=10)" in out and "jev-test" in out
    assert main(["diff", str(a), str(b), "--json", "--bootstrap", "200"]) == 0
    data = orjson.loads(capsys.readouterr().out)
    assert data["a"]["simulated"] is True and data["b"]["simulated"] is False
    assert data["b"]["notice"] is None and data["a"]["served_models"] == {"sim-1": 64}
    cell = next(
        c for c in data["cells"] if (c["decoder"], c["condition"]) == ("tree10", "arithmetic")
    )
    assert cell["n_changed"] == 2 * 4 * 2 and cell["nmae"]["delta"] == pytest.approx(1.0)
    assert len(data["top_changes"]) == 10


def test_diff_over_four_families_shows_no_interval(
    runs: RunFactory, capsys: pytest.CaptureFixture
) -> None:
    a = runs.affine("a", families=range(4))
    b = runs.affine("b", families=range(4), predict=worse_tree10)
    d = diff_runs(load_run(a), load_run(b), n_boot=200)
    assert np.isnan(d.delta_lo).all() and np.isfinite(d.delta).any()
    assert main(["diff", str(a), str(b), "--bootstrap", "200"]) == 0
    assert "No brackets: only 4 families to resample (fewer than 5)" in capsys.readouterr().out
