"""An exact rational evaluator for arithmetic text; it accepts arithmetic syntax only.

Used to verify every target (paper, Appendix "Dataset Generation and Exact Numerical
Checks") and by the oracle and sim models to read an expression from a request's state.
It never calls ``eval``: it walks a parsed AST and rejects every node that is not a
number, a parenthesised group, unary +/- or one of + - * /.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache

from harness.errors import ExpressionError

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
# Long inputs are refused before parsing: Python's parser has its own recursion limits.
_MAX_LENGTH = 2000
_DECIMAL = re.compile(r"\d+(\.\d*)?([eE][+-]?\d{1,3})?|\.\d+([eE][+-]?\d{1,3})?")


# The oracle and sim read the same few hundred expressions thousands of times.
@lru_cache(maxsize=16384)
def evaluate(text: str) -> Fraction:
    """The exact value of ``text``, e.g. ``"(7 + 8) * 0.01 + (0)"`` -> ``Fraction(3, 20)``."""
    normalised = text.replace("×", "*").replace("÷", "/").replace("−", "-")
    if len(normalised) > _MAX_LENGTH:
        raise ExpressionError(
            f"expression is {len(normalised)} characters; the limit is {_MAX_LENGTH}"
        )
    try:
        tree = ast.parse(normalised, mode="eval")
        return _walk(tree.body, normalised)
    except (SyntaxError, MemoryError) as exc:
        raise ExpressionError(f"not an arithmetic expression: {text[:80]!r}") from exc
    except RecursionError as exc:
        raise ExpressionError(f"expression nests too deeply: {text[:80]!r}...") from exc


def _walk(node: ast.expr, source: str) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        # The source text, not the float, so 0.01 stays exactly 1/100.
        literal = (ast.get_source_segment(source, node) or "").replace("_", "")
        # Plain decimals only: hex/binary literals are not arithmetic text, and a huge
        # exponent (1e99999999) would expand to an integer of that many digits.
        if not _DECIMAL.fullmatch(literal):
            raise ExpressionError(f"{literal!r} is not a plain decimal number (in {source!r})")
        return Fraction(literal)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _walk(node.operand, source)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left, source), _walk(node.right, source)
        if isinstance(node.op, ast.Div) and right == 0:
            raise ExpressionError(f"division by zero in {source!r}")
        return _BINARY[type(node.op)](left, right)
    kind = type(node).__name__
    raise ExpressionError(
        f"only numbers, parentheses and + - * / are allowed; found {kind} in {source!r}"
    )
