"""The affine suite follows Appendix "Dataset Generation and Exact Numerical Checks"."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.protocol.arith import evaluate
from harness.protocol.cases import SUBJECT, Suite
from harness.protocol.registry import load_suite
from suites.affine import DECODERS, DOMAINS, OPERATORS, SEED, base_expressions, build

EXPRESSION = re.compile(r"^(\d+) ([-+*/]) (\d+)$")
CANONICAL = re.compile(r"^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?$")
PAPER_GRIDS = [(Decimal(0), Decimal(1)), (Decimal(0), Decimal("0.01")), (Decimal(-50), Decimal(1))]
PAPER_GRIDS.append((Decimal(0), Decimal(10000)))


@pytest.fixture(scope="module")
def suite() -> Suite:
    return build()


def check_generation_rules(pairs: list[tuple[str, int]], per_operator: int) -> None:
    """The paper's rules for the base expressions, checked on any seed."""
    assert len(pairs) == per_operator * 4
    assert len({text for text, _ in pairs}) == len(pairs)
    for index, (text, z) in enumerate(pairs):
        match = EXPRESSION.match(text)
        assert match is not None, text
        a, op, b = int(match.group(1)), match.group(2), int(match.group(3))
        assert op == OPERATORS[index // per_operator]
        if op == "+":
            assert 1 <= a <= 80 and 1 <= b <= 80
        elif op == "-":
            assert 2 <= a <= 200 and 1 <= b <= 150
        elif op == "*":
            assert 2 <= a <= 12 and 2 <= b <= 12
        else:
            assert 2 <= b <= 15 and a % b == 0 and 1 <= a // b <= 99
        assert isinstance(z, int) and 0 < z < 100 and z != 50
        assert evaluate(text) == z


def test_base_expressions_follow_the_papers_rules() -> None:
    pairs = base_expressions()
    assert OPERATORS == ("+", "-", "*", "/")
    check_generation_rules(pairs, 16)


@settings(max_examples=15)
@given(seed=st.integers(0, 2**32), per_operator=st.integers(1, 16))
def test_generation_rules_hold_for_any_seed(seed: int, per_operator: int) -> None:
    check_generation_rules(base_expressions(seed, per_operator), per_operator)


def test_cases_cover_four_domains_per_family(suite: Suite) -> None:
    assert suite.seed == SEED == 20260923
    assert suite.decoders == DECODERS
    assert len(suite.cases) == 256
    assert len({case.id for case in suite.cases}) == 256
    pairs = base_expressions()
    for index, case in enumerate(suite.cases):
        family, domain = divmod(index, 4)
        expression, z = pairs[family]
        spec = DOMAINS[domain]
        assert case.family == family
        assert case.domain == spec.name
        assert (case.grid.lo, case.grid.eps) == PAPER_GRIDS[domain]
        assert case.grid.n == 100
        assert case.subject == SUBJECT
        text = f"({expression}) * {spec.scale} + ({spec.shift})"
        assert dict(case.state) == {"expression": text}
        assert case.target == evaluate(text) == z * Fraction(spec.scale) + Fraction(spec.shift)
        # The target is a grid value: no quantisation error at the grid's resolution.
        index_on_grid = case.grid.index_of(case.target)
        assert 0 <= index_on_grid < 100
        assert Fraction(case.grid.bound(index_on_grid)) == case.target


def test_expression_text_is_the_papers(suite: Suite) -> None:
    texts = [case.state["expression"] for case in suite.cases[:4]]
    expression = base_expressions()[0][0]
    assert texts == [
        f"({expression}) * 1 + (0)",
        f"({expression}) * 0.01 + (0)",
        f"({expression}) * 1 + (-50)",
        f"({expression}) * 10000 + (0)",
    ]


def test_jobs_are_every_case_condition_and_order(suite: Suite) -> None:
    jobs = suite.jobs()
    assert len(jobs) == 1024
    assert len({job.id for job in jobs}) == 1024
    assert {(job.condition, job.order) for job in jobs} == {
        ("arithmetic", "ascending"),
        ("arithmetic", "reversed"),
        ("provided", "ascending"),
        ("provided", "reversed"),
    }
    assert jobs[0].id == "affine/f0/int/arithmetic/ascending/r0"


def test_case_hash_is_stable_and_follows_the_seed(suite: Suite) -> None:
    again = build()
    assert again.case_hash() == suite.case_hash()
    assert load_suite("affine").case_hash() == suite.case_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", suite.case_hash())
    assert build(seed=SEED + 1).case_hash() != suite.case_hash()
    assert build(per_operator=15).case_hash() != suite.case_hash()


def test_provided_condition_adds_an_exact_decimal_result(suite: Suite) -> None:
    for case in suite.cases:
        arithmetic = case.state_for("arithmetic")
        provided = case.state_for("provided")
        assert arithmetic == dict(case.state)
        assert set(provided) == {"expression", "result"}
        assert provided["expression"] == case.state["expression"]
        result = provided["result"]
        assert isinstance(result, str)
        assert CANONICAL.match(result), result
        assert Fraction(result) == case.target
    by_id = {case.id: case for case in suite.cases}
    first = base_expressions()[0][1]
    assert by_id["f0/x0.01"].state_for("provided")["result"] == str(Decimal(first) / 100)
    assert by_id["f0/x10000"].state_for("provided")["result"] == str(first * 10000)
    assert by_id["f0/minus50"].state_for("provided")["result"] == str(first - 50)


def test_the_state_of_the_case_is_not_changed_by_the_provided_condition(suite: Suite) -> None:
    case = suite.cases[0]
    case.state_for("provided")
    assert "result" not in case.state


@pytest.mark.parametrize(
    ("name", "params", "decoders", "message"),
    [
        ("nope", {}, None, "unknown suite"),
        ("affine", {"colour": "red"}, None, "no parameter 'colour'"),
        ("affine", {"cells": "many"}, None, "not valid"),
        ("affine", {"cells": "50"}, None, "cells must be >= 100"),
        ("affine", {"per_operator": "0"}, None, "per_operator must be >= 1"),
        ("affine", {"cells": "256"}, None, "at most 255"),
        ("affine", {}, (), "at least one decoder"),
        ("affine", {}, ("tree1",), "K >= 2"),
        ("affine", {}, ("nearest",), "unknown decoder"),
    ],
)
def test_load_suite_refuses_bad_requests(
    name: str, params: dict[str, str], decoders: tuple[str, ...] | None, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_suite(name, params=params, decoders=decoders)
