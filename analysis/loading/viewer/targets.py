"""Which option of a sent question holds the target: the mark of the job viewer (no I/O).

The run folder records the target (exact decimal), the grid (L, eps, N), the decoder's
trace and, per question, the decoder step it stands for (``qmap``: ``tree10/2``,
``digits/d1``, ``bits/b64``...). From these the option whose meaning contains the target
is derived exactly, one rule per decoder family. A rule that cannot be applied (a decoder
with no rule, a target off the grid, a trace without the fields it needs) gives None, and
the viewer then marks nothing rather than something wrong.
"""

from __future__ import annotations

import re
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Any

from analysis.loading.columns.exact import parse_decimal
from analysis.loading.names import tree_branching

__all__ = ["TargetRule", "option_holding", "target_label"]

_NUMBER = r"(-?\d+(?:\.\d+)?)"
_INTERVAL = re.compile(rf"^\s*{_NUMBER} <= x < {_NUMBER}\s*$")
_COMPARE = re.compile(rf"^\s*x (<=|<|>=|>) {_NUMBER}\s*$")
# Decoders with a rule of their own below; any other is marked from its option texts.
_RULES = frozenset({"direct", "digits", "bits", "bits4", "actual_digits", "adaptive_thresholds"})

_STEP_NUMBER = re.compile(r"[a-z]*(\d+)$")


def _grid_index(target: Decimal, lower: Decimal, eps: Decimal, n_cells: int) -> int | None:
    """(target − L)/eps when it is a whole cell index of the grid, else None."""
    q = _cell(target, lower, eps)
    if q != q.to_integral_value() or not 0 <= q < n_cells:
        return None
    return int(q)


def _cell(target: Decimal, lower: Decimal, eps: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return (target - lower) / eps


def _step_number(step: str) -> int | None:
    found = _STEP_NUMBER.match(step)
    return int(found.group(1)) if found else None


def _tree(
    target: Decimal, trace_step: dict[str, Any] | None, lower: Decimal, eps: Decimal
) -> str | None:
    """Child j of the step's parent that holds the target's cell (Algorithm 1's cuts)."""
    if not trace_step or "parent" not in trace_step:
        return None
    idx = int(_cell(target, lower, eps).to_integral_value(ROUND_FLOOR))
    with localcontext() as ctx:
        ctx.prec = 60
        a = (parse_decimal(trace_step["parent"][0]) - lower) / eps
        b = (parse_decimal(trace_step["parent"][1]) - lower) / eps
    a_i, b_i = int(a), int(b)
    k = int(trace_step.get("k") or 0)
    if k <= 0 or not a_i <= idx < b_i:
        return None  # the target is outside this parent: no option holds it
    cuts = [a_i + (b_i - a_i) * j // k for j in range(k + 1)]
    return next(str(j) for j in range(k) if cuts[j] <= idx < cuts[j + 1])


def _holds(text: str, target: Decimal) -> bool | None:
    """Whether an option's text ("lo <= x < hi", "x <= z", ...) holds the target; None when
    the text is not one of these forms."""
    found = _INTERVAL.match(text)
    if found:
        return Decimal(found.group(1)) <= target < Decimal(found.group(2))
    found = _COMPARE.match(text)
    if found:
        z = Decimal(found.group(2))
        return {"<=": target <= z, "<": target < z, ">=": target >= z, ">": target > z}[
            found.group(1)
        ]
    return None


def option_holding(target: Decimal, texts: tuple[str, ...]) -> int | None:
    """The one option whose text says it holds ``target`` (exact decimals), else None.

    For decoders without a rule of their own (beams, bisection, weighted trees): the
    options as sent say which numbers they stand for, so that is what is read.
    """
    verdicts = [_holds(text, target) for text in texts]
    if None in verdicts or verdicts.count(True) != 1:
        return None
    return verdicts.index(True)


class TargetRule:
    """The target's option for every question of one output (its numbers parsed once)."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.decoder = str(record.get("decoder"))
        self.branching = tree_branching(self.decoder)
        try:
            self.target: Decimal | None = parse_decimal(record["target"])
            self.lower = parse_decimal(record["L"])
            self.eps = parse_decimal(record["eps"])
            self.n_cells = int(record["N"])
            self.index = _grid_index(self.target, self.lower, self.eps, self.n_cells)
        except (KeyError, ValueError, TypeError, ArithmeticError):
            self.target = None
            self.index = None

    @property
    def has_rule(self) -> bool:
        """True when this decoder has its own rule (else :func:`option_holding` applies)."""
        return self.branching is not None or self.decoder in _RULES

    def label(self, step: str, trace_step: dict[str, Any] | None) -> str | None:
        """The label of the option holding the target for decoder step ``step``, or None."""
        if self.target is None:
            return None
        try:
            return self._label(step, trace_step)
        except (KeyError, ValueError, TypeError, IndexError, ArithmeticError):
            return None

    def _label(self, step: str, trace_step: dict[str, Any] | None) -> str | None:
        idx, decoder = self.index, self.decoder
        if self.branching is not None:
            assert self.target is not None
            return _tree(self.target, trace_step, self.lower, self.eps)
        if decoder == "direct":
            return None if idx is None else str(idx)
        if decoder == "adaptive_thresholds" and trace_step and "threshold" in trace_step:
            # The question is "is x <= z?" with labels yes / no.
            assert self.target is not None
            return "yes" if self.target <= parse_decimal(trace_step["threshold"]) else "no"
        number = _step_number(step)
        if number is None:
            return None
        if decoder == "digits" and idx is not None:
            # Index digits: d1 is the most significant of len(str(N−1)) digits.
            digits = str(idx).zfill(len(str(self.n_cells - 1)))
            return digits[number - 1] if 1 <= number <= len(digits) else None
        if decoder == "bits" and idx is not None:
            return str((idx // number) % 2)  # step b64: the bit of weight 64
        assert self.target is not None
        if decoder == "bits4":
            # Step b0 asks for the bit of weight 1/2: floor(x·2) mod 2; b1 weight 1/4, ...
            return str(int((self.target * 2 ** (number + 1)) // 1) % 2)
        if decoder == "actual_digits":
            # Step d1 asks for the tenths digit of x written as 0.DDDD.
            return str(int((self.target * 10**number) // 1) % 10)
        return None


def target_label(
    record: dict[str, Any], step: str, trace_step: dict[str, Any] | None
) -> str | None:
    """The option label holding ``record``'s target at decoder step ``step`` (see module doc)."""
    return TargetRule(record).label(step, trace_step)
