"""The restricted exact evaluator that verifies every target (Appendix "Dataset Generation")."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.errors import ConfigError
from harness.protocol.arith import evaluate


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.01", Fraction(1, 100)),
        ("(7 + 8) * 0.01 + (0)", Fraction(3, 20)),
        ("(7 + 8) * 10000 + (0)", Fraction(150000)),
        ("(130 - 57) * 1 + (-50)", Fraction(23)),
        ("(672 / 8) * 0.01 + (0)", Fraction(21, 25)),
        ("0.1 + 0.2", Fraction(3, 10)),
        ("1 / 3", Fraction(1, 3)),
        ("-(-2)", Fraction(2)),
        ("+5", Fraction(5)),
        ("7 × 6 ÷ 3 − 1", Fraction(13)),
        ("1_000 * 0.5", Fraction(500)),
        ("2.5e3", Fraction(2500)),
        ("0.0625 * 16", Fraction(1)),
    ],
)
def test_evaluate_is_exact(text: str, value: Fraction) -> None:
    result = evaluate(text)
    assert isinstance(result, Fraction)
    assert result == value


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("x", "Name"),
        ("x + 1", "Name"),
        ("abs(-1)", "Call"),
        ("__import__('os')", "Call"),
        ("(1).real", "Attribute"),
        ("2 ** 3", "BinOp"),
        ("7 // 2", "BinOp"),
        ("7 % 2", "BinOp"),
        ("1 << 2", "BinOp"),
        ("lambda: 1", "Lambda"),
        ("'1'", "Constant"),
        ("b'1'", "Constant"),
        ("True", "Constant"),
        ("None", "Constant"),
        ("1j", "Constant"),
        ("1 < 2", "Compare"),
        ("1 == 1", "Compare"),
        ("not 1", "UnaryOp"),
        ("~1", "UnaryOp"),
        ("[1, 2]", "List"),
        ("(1, 2)", "Tuple"),
        ("1 if 1 else 2", "IfExp"),
        ("1 / 0", "division by zero"),
        ("1 / (2 - 2)", "division by zero"),
        ("1 / 0.0", "division by zero"),
        ("", "not an arithmetic expression"),
        ("1 +", "not an arithmetic expression"),
        ("import os", "not an arithmetic expression"),
        ("1" * 2001, "the limit is 2000"),
        ("(" * 1000 + "1" + ")" * 1000, "the limit is 2000"),
    ],
)
def test_evaluate_rejects_anything_but_arithmetic(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why.replace("(", r"\(")):
        evaluate(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0x10", id="hex"),
        pytest.param("0b101", id="binary"),
        pytest.param("1e9999999", id="huge-exponent"),
        pytest.param("+".join(["1"] * 999), id="long-sum"),
        pytest.param("-" * 1998 + "1", id="deep-unary"),
    ],
)
def test_evaluate_answers_every_short_input_with_a_value_or_config_error(text: str) -> None:
    """Inputs under the length limit either evaluate or raise ConfigError, nothing else."""
    assert len(text) <= 2000
    try:
        value = evaluate(text)
    except ConfigError:
        return
    assert isinstance(value, Fraction)


# ---- property: random small expression trees against Fraction arithmetic ------------------

Node = tuple[str, Fraction | None]  # (text, exact value or None after a division by zero)

leaves = st.one_of(
    st.integers(0, 1000).map(lambda i: (str(i), Fraction(i))),
    st.decimals(min_value=0, max_value=1000, places=3, allow_nan=False, allow_infinity=False).map(
        lambda d: (str(d), Fraction(d))
    ),
)


def _combine(op: str, left: Node, right: Node) -> Node:
    text = f"({left[0]} {op} {right[0]})"
    a, b = left[1], right[1]
    if a is None or b is None:
        return text, None
    if op == "+":
        return text, a + b
    if op == "-":
        return text, a - b
    if op == "*":
        return text, a * b
    return text, None if b == 0 else a / b


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    binary = st.builds(_combine, st.sampled_from("+-*/"), children, children)
    negated = children.map(lambda c: (f"-{c[0]}", None if c[1] is None else -c[1]))
    return st.one_of(binary, negated)


expressions = st.recursive(leaves, _extend, max_leaves=12)


@given(expressions)
def test_evaluate_agrees_with_fraction_arithmetic(node: Node) -> None:
    text, expected = node
    if expected is None:
        with pytest.raises(ConfigError, match="division by zero"):
            evaluate(text)
    else:
        assert evaluate(text) == expected


@given(st.decimals(allow_nan=False, allow_infinity=False, places=6, min_value=-(10**9)))
def test_decimal_literals_stay_exact(value: Decimal) -> None:
    text = format(value, "f")
    assert evaluate(text) == Fraction(value)
