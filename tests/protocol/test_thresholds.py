"""Threshold CDFs (paper, Appendix "CDF Construction") and the threshold decoders.

The isotonic projection is checked against SciPy's isotonic regression (a test-only
dependency: the harness must not import SciPy), the masses against their definition, and
the decoders against scripted answers, including the paper's decreasing example.
"""

from __future__ import annotations

import math
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.optimize import isotonic_regression

from harness.backends.sim import SimModel, SimParams
from harness.errors import GridError
from harness.protocol.cases import SUBJECT
from harness.protocol.decoders import Answer, make_decoder
from harness.protocol.decoders.cdf import (
    decreases,
    histogram_masses,
    isotonic_projection,
    midpoint_mean,
    modal_index,
)
from harness.protocol.decoders.thresholds import probability_at_most
from harness.protocol.grid import Grid, fmt
from harness.protocol.prompts import threshold_criteria, threshold_instruction

FRACTIONS = Grid(Decimal(0), Decimal("0.0625"), 16)
INTEGERS = Grid(Decimal(0), Decimal(1), 16)
probabilities = st.floats(0.0, 1.0, allow_nan=False)
wide = st.floats(-2.0, 3.0, allow_nan=False)


# ---- the pure CDF module --------------------------------------------------------------------


@given(st.lists(st.one_of(probabilities, wide), min_size=1, max_size=40))
@example([0.26, 0.01])
@example([1.0, 0.0, 1.0, 0.0])
@example([0.5])
def test_projection_agrees_with_scipy(p: list[float]) -> None:
    ours = isotonic_projection(p)
    theirs = np.clip(isotonic_regression(p, increasing=True).x, 0.0, 1.0)
    assert len(ours) == len(p)
    assert max(abs(a - b) for a, b in zip(ours, theirs, strict=True)) <= 1e-9


@given(st.lists(probabilities, max_size=40))
def test_projection_is_a_cdf_and_masses_sum_to_one(p: list[float]) -> None:
    f = isotonic_projection(p)
    assert all(0.0 <= v <= 1.0 for v in f)
    assert all(a <= b for a, b in pairwise(f))
    masses = histogram_masses(f)
    assert len(masses) == len(p) + 1
    assert all(w >= 0.0 for w in masses)
    assert math.isclose(sum(masses), 1.0, abs_tol=1e-12)


@given(st.lists(probabilities, max_size=40))
def test_projection_leaves_a_nondecreasing_sequence_alone(p: list[float]) -> None:
    ordered = sorted(p)
    assert isotonic_projection(ordered) == ordered
    assert not decreases(ordered)


def test_the_papers_example_counts_as_a_decrease() -> None:
    # Section "Numerical distributions need a separate validation": P(Y<=0.4375)=0.26,
    # P(Y<=0.5)=0.01 for one arithmetic input.
    raw = [0.26, 0.01]
    assert decreases(raw)
    projected = isotonic_projection(raw)
    assert projected == pytest.approx([0.135, 0.135])
    assert histogram_masses(projected) == pytest.approx([0.135, 0.0, 0.865])


def test_equal_neighbours_are_not_a_decrease() -> None:
    assert not decreases([0.2, 0.2, 0.9])
    assert not decreases([])
    assert decreases([0.2, 0.9, 0.89])


def test_projection_refuses_nan() -> None:
    with pytest.raises(ValueError, match="finite"):
        isotonic_projection([0.1, float("nan")])


def test_midpoint_mean_is_exact() -> None:
    bounds = [FRACTIONS.bound(i) for i in range(17)]
    one_hot = [0.0] * 16
    one_hot[13] = 1.0
    assert midpoint_mean(bounds, one_hot) == Fraction(13, 16) + Fraction(1, 32)
    halves = [0.5] + [0.0] * 14 + [0.5]
    assert midpoint_mean(bounds, halves) == Fraction(1, 2)
    with pytest.raises(ValueError, match="bounds"):
        midpoint_mean(bounds[:-1], one_hot)


def test_modal_index_breaks_ties_toward_the_lower_value() -> None:
    assert modal_index([0.1, 0.4, 0.1, 0.4]) == 1
    assert modal_index([0.25, 0.25, 0.25, 0.25]) == 0
    assert modal_index([0.0, 0.0, 1.0]) == 2


def test_the_harness_does_not_import_scipy() -> None:
    code = (
        "import sys, harness.cli, harness.protocol.decoders, harness.running.check, suites;"
        "from harness.protocol.decoders import cdf, thresholds;"
        "sys.exit(1 if 'scipy' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---- normalising one yes/no pair ------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "p"),
    [
        (Answer("yes", {"yes": 0.26, "no": 0.74}), 0.26),
        (Answer("no", {"yes": 0.3, "no": 0.3}), 0.5),  # rounded wire values need not sum to 1
        (Answer("yes", {"yes": 0.8}), 1.0),  # a missing label counts as zero
        (Answer("yes", None), 1.0),  # no probabilities: the selected label as 0/1
        (Answer("no", None), 0.0),
        (Answer("no", {"yes": 0.0, "no": 0.0}), 0.0),
        (Answer("yes", {"yes": -1.0, "no": 0.0}), 1.0),
    ],
)
def test_probability_at_most_normalises_the_pair(answer: Answer, p: float) -> None:
    assert probability_at_most(answer) == pytest.approx(p)


# ---- the threshold decoders ------------------------------------------------------------------


def feed(name: str, grid: Grid, p_yes: list[float | None]) -> dict:
    """Answer every threshold ``t<i>`` with P(yes) = p_yes[i-1] (None: no probabilities)."""
    decoder = make_decoder(name, grid, SUBJECT)
    questions = decoder.ready()
    assert [q.key for q in questions] == [f"t{i}" for i in range(1, grid.n)]
    for question, p in zip(questions, p_yes, strict=True):
        if p is None:
            decoder.give(question.key, Answer("yes"))
        else:
            choice = "yes" if p >= 0.5 else "no"
            decoder.give(question.key, Answer(choice, {"yes": p, "no": 1 - p}))
    assert decoder.done and decoder.ready() == []
    result = decoder.result()
    return {"value": result.value, "rounds": result.rounds, "extra": dict(result.extra)}


def test_parallel_thresholds_keep_raw_and_projected_values() -> None:
    # The paper's decrease at 0.4375 / 0.5 inside an otherwise rising CDF.
    raw = [0.0] * 7 + [0.26, 0.01] + [0.9] * 6
    out = feed("parallel_thresholds", FRACTIONS, raw)
    extra = out["extra"]
    assert extra["thresholds"][7:9] == ["0.4375", "0.5"]
    assert extra["thresholds"][0] == "0" and extra["thresholds"][-1] == "0.875"
    assert extra["raw"] == pytest.approx(raw)
    assert extra["decreased"] is True
    assert extra["projected"][7] == extra["projected"][8] == pytest.approx(0.135)
    assert len(extra["masses"]) == 16
    assert math.isclose(sum(extra["masses"]), 1.0, abs_tol=1e-9)
    # Mass 0.765 sits on grid value 0.5625 (w_9 = f_10 - f_9).
    assert out["value"] == Decimal("0.5625") and extra["mode"] == "0.5625"
    assert out["rounds"] == 1


def test_parallel_thresholds_break_ties_toward_the_lower_value() -> None:
    raw = [0.0] * 3 + [0.5] * 9 + [1.0] * 3
    # Two masses of 0.5: on grid values 3 and 12; the lower wins.
    assert feed("parallel_thresholds", INTEGERS, raw)["value"] == Decimal(3)


def test_parallel_thresholds_fall_back_to_the_selected_labels() -> None:
    raw: list[float | None] = [0.0] * 11 + [None] * 4
    out = feed("parallel_thresholds", INTEGERS, raw)
    assert out["value"] == Decimal(11)
    assert out["extra"]["raw"] == [0.0] * 11 + [1.0] * 4


def test_threshold_cdf_snaps_the_midpoint_mean_down_to_its_cell() -> None:
    out = feed("threshold_cdf", FRACTIONS, [0.5] * 15)
    # Masses 0.5 on the first and last cells: mean (1/32 + 31/32) / 2 = 1/2, cell [0.5, 0.5625).
    assert out["extra"]["mean"] == "0.5"
    assert out["value"] == Decimal("0.5")
    assert out["extra"]["decreased"] is False
    skew = feed("threshold_cdf", INTEGERS, [0.0] * 4 + [0.5] + [1.0] * 10)
    # Masses 0.5 on values 4 and 5: mean 0.5 * 4.5 + 0.5 * 5.5 = 5.
    assert skew["extra"]["mean"] == "5"
    assert skew["value"] == Decimal(5)


@pytest.mark.parametrize("grid", [INTEGERS, FRACTIONS], ids=["int", "fraction"])
def test_adaptive_thresholds_keep_a_half_interval(grid: Grid) -> None:
    decoder = make_decoder("adaptive_thresholds", grid, SUBJECT)
    asked = []
    for label in ("no", "yes", "no", "no"):
        (question,) = decoder.ready()
        asked.append(dict(question.criteria)["yes"])
        decoder.give(question.key, Answer(label))
    assert decoder.done
    result = decoder.result()
    assert result.rounds == 4 == decoder.depths()[1]
    # no: [8, 16); yes: [8, 12); no: [10, 12); no: [11, 12).
    assert result.value == grid.bound(11)
    assert asked == [f"x <= {fmt(grid.bound(i))}" for i in (7, 11, 9, 10)]
    assert result.trace[-1]["interval"] == [fmt(grid.bound(11)), fmt(grid.bound(12))]


@pytest.mark.parametrize("name", ["parallel_thresholds", "threshold_cdf"])
@pytest.mark.parametrize("grid", [INTEGERS, FRACTIONS], ids=["int", "fraction"])
def test_threshold_positions_are_pinned(name: str, grid: Grid) -> None:
    """``x <= L`` ... ``x <= U - 2 eps``: docs/protocol.md "Threshold positions" says why.

    The N - 1 comparisons are the CDF at the grid's interior cell boundaries; the bins
    between them, (z_{i-1}, z_i], are right-closed and each holds exactly one candidate
    (its right end z_i; the lowest bin holds L, the top bin U - eps). P(Y <= U - eps) = 1
    for every candidate, so it is the prescribed endpoint f_{m+1} = 1, never asked.
    """
    decoder = make_decoder(name, grid, SUBJECT)
    asked = [dict(q.criteria)["yes"] for q in decoder.ready()]
    assert asked == [f"x <= {fmt(grid.lo + grid.eps * i)}" for i in range(grid.n - 1)]
    expected = {
        INTEGERS: [str(i) for i in range(15)],
        FRACTIONS: ["0", "0.0625", "0.125", "0.1875", "0.25", "0.3125", "0.375", "0.4375",
                    "0.5", "0.5625", "0.625", "0.6875", "0.75", "0.8125", "0.875"],
    }[grid]  # fmt: skip
    assert asked == [f"x <= {z}" for z in expected]
    # Every candidate, L and U - eps included, is read back exactly from exact answers.
    for i in range(grid.n):
        y = Fraction(grid.bound(i))
        decoder = make_decoder(name, grid, SUBJECT)
        for question in decoder.ready():
            z = Fraction(dict(question.criteria)["yes"].removeprefix("x <= "))
            p = 1.0 if y <= z else 0.0
            decoder.give(question.key, Answer("yes" if p else "no", {"yes": p, "no": 1 - p}))
        masses = decoder.result().extra["masses"]
        assert masses == [1.0 if j == i else 0.0 for j in range(grid.n)]
        assert decoder.result().value == grid.bound(i)


def test_threshold_decoders_refuse_grids_too_large_to_ask_in_one_round() -> None:
    huge = Grid.from_range(0, 10000, "0.01")
    for name in ("parallel_thresholds", "threshold_cdf"):
        with pytest.raises(GridError, match="interior boundary"):
            make_decoder(name, huge, SUBJECT)
    # The adaptive search asks one question a round, so any grid will do.
    assert make_decoder("adaptive_thresholds", huge, SUBJECT).depths() == (19, 20)


# ---- the sim model's threshold answers ---------------------------------------------------------


@pytest.mark.parametrize("confusion", [0.15, 1.0])
def test_sim_threshold_answers_fall_off_around_the_perceived_value(confusion: float) -> None:
    # Provided condition: the sim perceives 0.5 exactly, on its grid of sixteenths. Ask 201
    # comparisons x <= z: below the grid value under 0.5 the answer is no, from 0.5 on yes,
    # and a confused sim falls off smoothly across the cell between.
    zs = [Fraction(400 + i, 1000) for i in range(201)]
    body = {
        "model": "sim",
        "state": {"expression": "1/2", "result": "0.5"},
        "questions": {
            f"q{i}": {
                "type": "choice",
                "instructions": threshold_instruction(
                    SUBJECT, Decimal(z.numerator) / z.denominator
                ),
                "criteria": dict(threshold_criteria(Decimal(z.numerator) / z.denominator)),
            }
            for i, z in enumerate(zs)
        },
    }
    sim = SimModel(SimParams(confusion=confusion, provided=1.0))
    response = sim.respond(body)
    assert response == SimModel(SimParams(confusion=confusion, provided=1.0)).respond(body)
    p_yes = [response["answers"][f"q{i}"]["probabilities"]["yes"] for i in range(len(zs))]
    far_below = [p for z, p in zip(zs, p_yes, strict=True) if z < Fraction(42, 100)]
    at_or_above = [p for z, p in zip(zs, p_yes, strict=True) if z >= Fraction(1, 2)]
    if confusion < 1.0:
        assert sum(far_below) / len(far_below) < 0.2
        assert sum(at_or_above) / len(at_or_above) > 0.8
    assert sum(far_below) / len(far_below) < sum(at_or_above) / len(at_or_above)
    between = {
        p for z, p in zip(zs, p_yes, strict=True) if Fraction(4375, 10000) <= z < Fraction(1, 2)
    }
    if confusion >= 1.0:
        assert any(0.05 < p < 0.95 for p in between)  # smooth, not a step


# Any JSON value a server might send where a probability belongs.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)


@given(st.sampled_from(["yes", "no"]), JSON_VALUES, JSON_VALUES)
@example("yes", "0.9", 0.1)  # a number as a string is not a number
@example("no", math.inf, math.inf)
def test_junk_probabilities_are_read_as_no_support_never_an_exception(
    choice: str, p_yes: object, p_no: object
) -> None:
    """A server's malformed probabilities cannot crash a decoder: a value that is not a
    finite number counts 0, and with no support left the selected label decides."""
    answer = Answer(choice, {"yes": p_yes, "no": p_no})
    p = probability_at_most(answer)
    assert 0.0 <= p <= 1.0
    numbers = [
        v for v in (p_yes, p_no)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    ]  # fmt: skip
    if not numbers:
        assert p == (1.0 if choice == "yes" else 0.0)
