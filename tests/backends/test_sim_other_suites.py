"""The sim beyond the affine suite: what it parses of a state, and which hazards act elsewhere.

The perception reads an expression in the affine suite's format, ``(e) * s + (L)``, to take
its grid unit from ``s``; any other state is read with the unit of its target's own digits.
The hazards keyed to the affine domains (negative numbers, long bounds) act only where a
question shows those features, so on the exploratory, historical and bit-prompt suites they
change nothing, and on a suite of one's own that shows them they act at their rates
(docs/models.md, "What the sim parses, and what it does on other suites").
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from harness.backends.sim import SimParams
from harness.backends.sim.perception import perceive
from harness.protocol.cases import Suite, expression_case
from harness.protocol.grid import Grid
from harness.protocol.registry import load_suite
from simstudy.simulate import simulate, with_knobs

AFFINE_ONLY = {"negative": 0.0, "sign_flip": 0.0, "long": 0.0}


@pytest.mark.parametrize(
    ("expression", "unit"),
    [
        ("(6 + 1) * 0.01 + (0)", Fraction(1, 100)),  # the affine format: s is the unit
        ("(6 + 1) * 10000 + (0)", Fraction(10000)),
        ("(6 + 1) * 1 + (-50)", Fraction(1)),
        ("7 / 100", Fraction(1, 100)),  # anything else: the target's own last digit
        ("0.07 * 1", Fraction(1, 100)),
        ("70000", Fraction(1)),  # 10^4 times 7 written out: a unit of 1, not 10^4
        ("13 / 16", Fraction(1, 16)),  # a binary fraction: sixteenths (the exploratory grid)
    ],
)
def test_the_unit_comes_from_the_affine_format_or_the_targets_digits(
    expression: str, unit: Fraction
) -> None:
    seen = perceive({"expression": expression}, expression, SimParams())
    assert seen.unit == unit


@pytest.mark.parametrize("name", ["exploratory", "historical", "historical_binary", "bitprompts"])
def test_the_affine_hazards_change_nothing_on_another_suite(name: str) -> None:
    # No question there shows negative numbers or interval bounds of 5+ digits: the three
    # knobs at 0 give the same answers (historical's ranges start below 10,000).
    suite = load_suite(name)
    for seed in (0, 1):
        base = SimParams(seed=seed)
        ref = simulate(suite, base)
        assert ref and all(r["status"] == "ok" for r in ref)
        assert simulate(suite, with_knobs(base, AFFINE_ONLY)) == ref


def test_a_suite_of_ones_own_gets_the_hazards_its_questions_show() -> None:
    # Not the affine format (no unit to parse), negative results on a grid from -50: the
    # sim answers every job, and `negative` acts on its interval questions as on -50's.
    grid = Grid(Decimal(-50), Decimal(1), 100)
    cases = tuple(
        expression_case(i, "mine", f"{a} - {b}", Fraction(a - b), grid)
        for i, (a, b) in enumerate([(3, 40), (12, 30), (7, 9), (25, 60), (2, 33), (18, 19)])
    )
    suite = Suite("mine", 0, cases, ("direct", "tree2", "tree10", "digits"))
    calm = simulate(suite, SimParams(negative=0.0, sign_flip=0.0))
    rough = simulate(suite, SimParams(negative=1.0, sign_flip=1.0))
    assert len(calm) == len(rough) == len(suite.jobs()) * 4
    assert all(r["status"] == "ok" for r in calm + rough)
    changed = {r["decoder"] for r, s in zip(calm, rough, strict=True) if r["value"] != s["value"]}
    assert {"tree2", "tree10"} <= changed
