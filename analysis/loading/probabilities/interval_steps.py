"""Decision traces read as interval choices: which grid cells each option of a step stood for.

A trace is read step by step when every step names the interval its selected option stood
for, in one of the forms the harness writes (all bounds as cell indices of the grid
``[L + eps·i, L + eps·(i+1))``, i = 0..N−1):

=========  ==========================================  ===================================
form       trace step                                  option label -> interval
=========  ==========================================  ===================================
tree       ``choice``, ``interval``, ``parent``, ``k``  ``j`` -> ``[t_j, t_{j+1})`` with
                                                       ``t_j = a + floor((b−a)·j/k)`` on the
                                                       parent ``[a, b)`` (paper, Algorithm 1)
halving    ``choice``, ``interval`` (no parent)         the selected option -> ``interval``;
           (adaptive thresholds)                       the one other option -> the rest of
                                                       the parent (the previous step's
                                                       interval, the whole grid at round 1)
cells      ``choice``, ``value`` (direct choice)        ``i`` -> the cell ``[i, i+1)``
cuts       ``choice``, ``cuts`` (probabilistic          ``j`` -> ``[c_j, c_{j+1})``
           bisection)
=========  ==========================================  ===================================

Nothing else is read as an interval choice (digits, bits, sets, thresholds over the whole
CDF, beams that ask several intervals per round): such outputs are left out. No I/O here.
"""

from __future__ import annotations

from bisect import bisect_right
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise
from typing import Any, NamedTuple

from analysis.loading.columns.exact import parse_decimal

__all__ = [
    "CELLS",
    "CUTS",
    "FORMS",
    "HALVING",
    "TREE",
    "GridIndex",
    "Step",
    "TraceError",
    "is_nested",
    "read_steps",
    "tree_cuts",
    "true_option",
]

TREE, HALVING, CELLS, CUTS = "tree", "halving", "cells", "cuts"
FORMS = (TREE, HALVING, CELLS, CUTS)


class TraceError(ValueError):
    """A trace step that does not describe an interval choice on the output's grid."""


class Step(NamedTuple):
    """One decision of a path, in grid cell indices."""

    depth: int  # the step's round (1 = the first question)
    form: str  # TREE, HALVING, CELLS or CUTS
    a: int  # the parent interval [a, b): the options partition it
    b: int
    k: int  # how many options the question had (2 for halving)
    lo: int  # the selected option [lo, hi)
    hi: int
    choice: str
    cuts: tuple[int, ...] | None = None  # CUTS only


def tree_cuts(a: int, b: int, k: int) -> list[int]:
    """Algorithm 1's boundaries ``t_j = a + floor((b−a)·j/k)``, j = 0..k."""
    return [a + (b - a) * j // k for j in range(k + 1)]


class GridIndex:
    """Bound text -> cell index on one grid, exactly, with a cache (bounds repeat)."""

    def __init__(self, lower: Decimal, eps: Decimal, n_cells: int) -> None:
        self.lower, self.eps, self.n_cells = lower, eps, n_cells
        self._cache: dict[Any, int] = {}

    def __call__(self, bound: Any) -> int:
        """The index ``(bound − L)/eps``; TraceError when it is not a whole number in [0, N]."""
        try:
            found = self._cache.get(bound)
        except TypeError:  # a list or object where a bound belongs
            raise TraceError(f"bound {bound!r} is not a number") from None
        if found is not None:
            return found
        try:
            q = (parse_decimal(bound) - self.lower) / self.eps
        except ValueError as exc:
            raise TraceError(str(exc)) from None
        if q != q.to_integral_value() or not 0 <= q <= self.n_cells:
            raise TraceError(f"bound {bound!r} is not on the grid")
        if len(self._cache) < 100_000:
            self._cache[bound] = int(q)
        return int(q)

    def cell_of(self, target: Decimal) -> int | None:
        """The index of the cell holding ``target``, or None outside ``[L, U)``."""
        q = (target - self.lower) / self.eps
        cell = int(q.to_integral_value(rounding="ROUND_FLOOR"))
        return cell if 0 <= cell < self.n_cells else None

    def cells(self, target: Decimal) -> Fraction:
        """``(target − L)/eps`` exactly (a position in cells, fractional off the grid)."""
        return (Fraction(target) - Fraction(self.lower)) / Fraction(self.eps)


def _pair(value: Any, grid: GridIndex) -> tuple[int, int]:
    if not isinstance(value, list) or len(value) != 2:
        raise TraceError(f"expected [lower, upper], got {value!r}")
    lo, hi = grid(value[0]), grid(value[1])
    if lo >= hi:
        raise TraceError(f"empty interval {value!r}")
    return lo, hi


def _step(raw: Any, previous: tuple[int, int], grid: GridIndex, depth: int) -> Step:
    if not isinstance(raw, dict):
        raise TraceError("trace step is not an object")
    choice = raw.get("choice")
    if not isinstance(choice, str):
        raise TraceError("trace step has no string 'choice'")
    if "interval" in raw and "parent" in raw and "k" in raw:
        a, b = _pair(raw["parent"], grid)
        k = raw["k"]
        if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= b - a:
            raise TraceError(f"k={k!r} cannot partition [{a}, {b})")
        lo, hi = _pair(raw["interval"], grid)
        j = int(choice) if choice.isdigit() else k
        # Child j of Algorithm 1's partition is [t_j, t_{j+1}), t_j = a + floor((b−a)·j/k).
        if j >= k or a + (b - a) * j // k != lo or a + (b - a) * (j + 1) // k != hi:
            raise TraceError(f"choice {choice!r} is not the child [{lo}, {hi}) of [{a}, {b})")
        return Step(depth, TREE, a, b, k, lo, hi, choice)
    if "interval" in raw:
        a, b = previous
        lo, hi = _pair(raw["interval"], grid)
        if not a <= lo < hi <= b or (lo != a and hi != b) or (lo, hi) == (a, b):
            raise TraceError(f"[{lo}, {hi}) is not one of two parts of [{a}, {b})")
        return Step(depth, HALVING, a, b, 2, lo, hi, choice)
    if "cuts" in raw:
        cuts = raw["cuts"]
        if not isinstance(cuts, list) or len(cuts) < 3:
            raise TraceError("'cuts' must list at least three bounds")
        at = tuple(grid(c) for c in cuts)
        if any(x >= y for x, y in pairwise(at)):
            raise TraceError("'cuts' must increase")
        if not choice.isdigit() or int(choice) >= len(at) - 1:
            raise TraceError(f"choice {choice!r} is not one of {len(at) - 1} intervals")
        j = int(choice)
        return Step(depth, CUTS, at[0], at[-1], len(at) - 1, at[j], at[j + 1], choice, at)
    if "value" in raw and depth == 1:
        cell = grid(raw["value"])
        if choice != str(cell) or cell >= grid.n_cells:
            raise TraceError(f"choice {choice!r} is not the cell of value {raw['value']!r}")
        return Step(depth, CELLS, 0, grid.n_cells, grid.n_cells, cell, cell + 1, choice)
    raise TraceError("trace step names no interval")


def read_steps(trace: Any, grid: GridIndex) -> tuple[Step, ...]:
    """The trace's steps as interval choices, sorted by round; TraceError if any is not one.

    Rounds must run 1, 2, 3, ... so that a question id's step (``qmap`` ``decoder/<round>``)
    finds its step.
    """
    if not isinstance(trace, list) or not trace:
        raise TraceError("empty trace")
    rounds = [s.get("round") if isinstance(s, dict) else None for s in trace]
    if rounds != list(range(1, len(trace) + 1)):
        raise TraceError(f"rounds {rounds!r} do not run 1, 2, 3, ...")
    steps: list[Step] = []
    previous = (0, grid.n_cells)
    for depth, raw in enumerate(trace, start=1):
        step = _step(raw, previous, grid, depth)
        steps.append(step)
        previous = (step.lo, step.hi)
    return tuple(steps)


def true_option(step: Step, cell: int | None) -> int:
    """Which option's interval holds ``cell``: -1 if none does (the parent excludes it).

    For tree, cells and cuts steps the option index j (label ``str(j)``); for a halving
    step 0 for the selected option and 1 for the other one.
    """
    if cell is None or not step.a <= cell < step.b:
        return -1
    if step.form == TREE:
        # The largest j with t_j = a + floor((b−a)·j/k) <= cell: j = ⌈(c+1)·k/n⌉ − 1.
        return -(-(cell - step.a + 1) * step.k // (step.b - step.a)) - 1
    if step.form == CELLS:
        return cell
    if step.form == CUTS:
        assert step.cuts is not None
        return bisect_right(step.cuts, cell) - 1
    return 0 if step.lo <= cell < step.hi else 1


def is_nested(steps: tuple[Step, ...], n_cells: int) -> bool:
    """True when each step refines the previous selection, starting from the whole grid."""
    previous = (0, n_cells)
    for step in steps:
        if step.form == CUTS or (step.a, step.b) != previous:
            return False
        previous = (step.lo, step.hi)
    return True
