"""A comparison's decisions as values (``analysis.statistics``): the cell verdict, the
release gate, the outside-the-promise mark and the sequential rule's outcome."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from analysis.statistics.decisions import CellKey, ReleaseGate, Verdict, verdict
from analysis.statistics.looks import sequential_outcome
from analysis.statistics.promise import SPREAD_FLAG, outside_promise, spread_ratio
from analysis.statistics.sequential import StopReason

finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.floats(0, 1) | st.just(math.nan), finite, st.booleans())
def test_a_verdict_is_called_only_below_alpha_and_in_deltas_direction(
    p: float, delta: float, lower_is_better: bool
) -> None:
    said = verdict(p, delta, 0.05, lower_is_better)
    if math.isnan(p):
        assert said is None
    elif p >= 0.05 or delta == 0:
        assert said is Verdict.UNCLEAR
    else:
        improves = (delta < 0) == lower_is_better
        assert said is (Verdict.BETTER if improves else Verdict.WORSE)


def test_the_gate_fails_exactly_its_cells() -> None:
    worse = CellKey("affine", "m", "tree2", "arithmetic")
    gate = ReleaseGate(1.0, (worse,))
    assert not gate.passed and gate.fails(worse)
    assert not gate.fails(CellKey("affine", "m", "tree2", "provided"))
    assert ReleaseGate(0.0, ()).passed
    assert str(worse) == "affine · m · tree2 · arithmetic"


@given(
    st.lists(st.floats(0, 100), min_size=3, max_size=12),
    st.lists(st.floats(0, 100), min_size=3, max_size=12),
    st.floats(0.1, 10),
)
def test_the_spread_ratio_is_symmetric_scale_free_and_at_least_one(
    a: list[float], b: list[float], scale: float
) -> None:
    f = min(len(a), len(b))
    sa, sb = np.array(a[:f])[:, None], np.array(b[:f])[:, None]
    n = np.full((f, 1), 8.0)
    ratio = spread_ratio(sa, sb, n)[0]
    assert np.isnan(ratio) or ratio >= 1
    np.testing.assert_allclose(spread_ratio(sb, sa, n), ratio, equal_nan=True)
    np.testing.assert_allclose(spread_ratio(scale * sa, scale * sb, n), ratio, rtol=1e-9,
                               equal_nan=True)  # fmt: skip


def test_only_a_called_cell_with_spreads_far_apart_is_outside_the_promise() -> None:
    ratio = np.array([SPREAD_FLAG, SPREAD_FLAG, SPREAD_FLAG - 0.01, np.nan, np.inf])
    called = np.array([True, False, True, True, True])
    assert outside_promise(ratio, called).tolist() == [True, False, False, False, True]


def _plan(families: int, looks: int, margin: float) -> dict[str, object]:
    return {"looks": looks, "margin": margin, "order": {"s": [str(f) for f in range(families)]}}


def test_an_outcome_stopped_at_its_first_look_counts_the_families_and_jobs_it_left() -> None:
    rng = np.random.default_rng(0)
    diffs = rng.normal(0, 1, (1, 5, 2, 1))  # 5 of 8 families asked, one later model, 2 cells
    counts = np.full_like(diffs, 8.0)
    axis = [str(f) for f in range(5)]
    kwargs = {"requests": 500, "cost_usd": 1.0, "lower_is_better": True, "method": "t"}
    # A margin of 1000 makes every cell futile at once: the rule stops at look 1 of 2 (5 and
    # 8 families: no look before 5).
    o = sequential_outcome(_plan(8, 3, 1000), "s", axis, diffs, counts, ["a", "b"], **kwargs)
    assert o.settled and o.stopped_early and (o.taken, o.looks, o.asked) == (1, 2, 5)
    assert o.unasked == frozenset({"5", "6", "7"}) and o.unasked_jobs(128) == 48
    assert set(o.path.reason) == {StopReason.FUTILE} and o.called(0) is None
    assert o.requests_full == 800 and math.isclose(o.cost_full, 1.6)
    # Every family asked (the last look taken): nothing was left on purpose.
    every = np.concatenate([diffs, diffs[:, :3]], axis=1)
    axis = [str(f) for f in range(8)]
    o = sequential_outcome(
        _plan(8, 3, 1000), "s", axis, every, np.full_like(every, 8.0), ["a", "b"], **kwargs
    )
    assert o.taken == o.looks == 2 and not o.unasked
    assert not o.stopped_early and o.unasked_jobs(128) == 0


def test_the_harness_asks_the_rule_without_loading_matplotlib() -> None:
    code = (
        "import sys, harness.comparing.sequential, analysis.statistics.comparison\n"
        "assert 'matplotlib' not in sys.modules, 'the decision path loads matplotlib'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
