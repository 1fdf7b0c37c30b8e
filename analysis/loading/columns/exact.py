"""Exact per-output errors: decimal strings in, float64 metric contributions out."""

from __future__ import annotations

import math
from decimal import Context, Decimal, InvalidOperation, localcontext
from typing import Any

__all__ = ["TOLERANCE_PERCENT", "output_errors", "parse_decimal"]

# Paper, Figure 1: share of outputs with APE <= 5%.
TOLERANCE_PERCENT = Decimal(5)

# 60 significant digits hold every difference and product of two grid values the harness
# writes (at most ~20 digits each), so subtraction and comparison below are exact.
_EXACT = Context(prec=60)
_HUNDRED = Decimal(100)


def parse_decimal(value: Any) -> Decimal:
    """Parse a decimal string (or a JSON int/float from imported predictions) exactly.

    Raises ValueError for anything that is not a finite number.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"expected a decimal string, got {value!r}")
    try:
        # str() of a float is its shortest repr, so 0.1 reads as Decimal("0.1"), not 0.1000…055.
        number = Decimal(value if isinstance(value, str) else str(value))
    except InvalidOperation as exc:
        raise ValueError(f"expected a decimal string, got {value!r}") from exc
    if not number.is_finite():
        raise ValueError(f"expected a finite number, got {value!r}")
    return number


def output_errors(
    target: Decimal, value: Decimal, lower: Decimal, eps: Decimal, n_cells: int
) -> tuple[float, float, float, float]:
    """Return (APE %, 100·|ŷ−y|/(U−L), grid index (ŷ−L)/eps, within-5% flag) for one output.

    Errors are formed in exact decimal arithmetic and only then rounded to float64, so the
    5% boundary is decided exactly: ŷ=0.63 for y=0.6 has APE exactly 5 (in float64 it is
    5.000000000000004 and would fall outside). APE and the flag are NaN when y=0, where
    relative error is undefined (the paper's affine suite excludes zero targets).
    """
    with localcontext(_EXACT):
        error = abs(value - target)
        width = eps * n_cells
        index = float((value - lower) / eps)
        nae = float(_HUNDRED * error / width)
        if target == 0:
            return math.nan, nae, index, math.nan
        magnitude = abs(target)
        ape = float(_HUNDRED * error / magnitude)
        within = 1.0 if _HUNDRED * error <= TOLERANCE_PERCENT * magnitude else 0.0
        return ape, nae, index, within
