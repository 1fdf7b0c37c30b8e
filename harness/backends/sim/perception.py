"""What the sim believes a state's value is: the paper's grid, with arithmetic slips.

The sim computes the base result ``z`` of the expression and maps it through the affine
transform the state writes (``(e) * s + (L)``: ``y = z * s + L``), so one slip of one grid
unit is one cell in every affine domain. Slips (one unit, ten units, swapped digits, a
blunder) are drawn once per state and shared by every decoder of the job, as one reading
of the question would be. A provided result is read exactly. This is the only place the sim
parses a suite's text format: any other expression is read in its target's own last digit
(``natural_unit``); docs/models.md says what that does on each suite.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from harness.backends.reading import target_of
from harness.backends.sim.draws import Draws
from harness.backends.sim.params import SimParams
from harness.errors import ConfigError
from harness.protocol.arith import evaluate

_NUM = r"-?\d+(?:\.\d+)?"
_AFFINE_RE = re.compile(rf"^\((.+)\) \* ({_NUM}) \+ \(({_NUM})\)$")


@dataclass(frozen=True, slots=True)
class Seen:
    """The sim's reading of one state: ``value`` None when it cannot tell (it guesses)."""

    value: Fraction | None
    unit: Fraction  # one grid unit of the target: the transform's scale, or natural_unit
    provided: bool  # the state gives the result
    slip: str  # which perception slip happened ("" for none), for tests and docs


def natural_unit(y: Fraction) -> Fraction:
    """The grid unit of a target with no affine form: 1 for integers, the binary or decimal
    place of a fraction (13/16 -> 1/16, 0.25 -> 1/100 unless binary: 1/4 -> 1/16)."""
    d = y.denominator
    if d == 1:
        return Fraction(1)
    if d & (d - 1) == 0:  # a binary fraction: the exploratory grid's sixteenths, or finer
        return Fraction(1, max(d, 16))
    return Fraction(1, 10 ** decimal_places(y))


def decimal_places(x: Fraction) -> int:
    """Decimal places ``x`` is written with (0.8125 -> 4; at most 12)."""
    places = 0
    while (x * 10**places).denominator != 1 and places < 12:
        places += 1
    return places


def affine_parts(state: Any) -> tuple[Fraction, Fraction, Fraction] | None:
    """``(z, scale, shift)`` of an ``(e) * s + (L)`` expression, or None."""
    expression = state.get("expression") if isinstance(state, Mapping) else None
    if not isinstance(expression, str):
        return None
    m = _AFFINE_RE.match(expression)
    if m is None:
        return None
    try:
        z = evaluate(m[1])
    except ConfigError:
        return None
    return z, Fraction(m[2]), Fraction(m[3])


def perceive(state: Any, key: str, params: SimParams) -> Seen:
    """The sim's reading of ``state`` (``key`` its canonical text)."""
    target = target_of(state)  # no table of known targets: the sim knows no history
    provided = isinstance(state, Mapping) and "result" in state
    parts = affine_parts(state)
    if target is None:
        return Seen(None, Fraction(1), provided, "")
    if parts is None:
        z, scale, shift = target, Fraction(1), Fraction(0)
        unit = natural_unit(target)
    else:
        z, scale, shift = parts
        unit = abs(scale) or Fraction(1)
    if provided:
        return Seen(target, unit, True, "")
    # Slips are counted in grid units of z: z / step is the base result's own index.
    step = unit / (abs(scale) or 1)
    d = Draws("perceive", params.seed, key)
    u = d[0]
    p = params
    slip, index = "", z / step
    if u < p.slip_one:
        slip, index = "one", index + (1 if d[1] < 0.5 else -1)
    elif (u := u - p.slip_one) < p.slip_ten:
        slip, index = "ten", index + (10 if d[1] < 0.5 else -10)
    elif (u := u - p.slip_ten) < p.slip_swap and _swappable(index):
        slip, index = "swap", Fraction(int(str(int(abs(index)))[::-1])) * (1 if index > 0 else -1)
    elif u - p.slip_swap < p.blunder:
        slip, index = "blunder", Fraction(round(float(index) * (0.5 + d[2])))
    if not slip:
        return Seen(target, unit, False, "")
    return Seen(index * step * scale + shift, unit, False, slip)


def _swappable(index: Fraction) -> bool:
    """A whole number of two digits that differ (swapping them changes it)."""
    if index.denominator != 1:
        return False
    text = str(abs(index.numerator))
    return len(text) == 2 and text[0] != text[1]
