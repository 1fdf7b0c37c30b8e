"""outputs.jsonl read as interval paths: one unit per ok output whose trace is interval choices.

First of the two streaming passes behind the Probabilities section (``answers.py`` is the
second). It keeps, per unit, what the paper's first-divergence bound needs (Proposition
"First-divergence error bound"; Appendix "First divergence"):

- ``first_divergence``: the depth d of E_d, the first selected interval that excludes y
  (0: none does; -1: undefined, for a path that is not nested or a target outside [L, U));
- ``error_cells``: |ŷ−y|/eps (computed exactly, stored as float64);
- ``forced_cells``: the error the first wrong turn alone forces, the distance from y to the
  nearest grid value in the selected interval (the paper's 0.49 example: 0.01 at the wrong
  turn [0.5, 1), 0.26 after later refinement);
- ``ineligible``: why the bound's proof does not cover the unit (0: it does);

and the steps themselves, flat, for the join with requests.jsonl. Everything is kept in
typed arrays, not per-output objects: a 100× affine run has 409,600 units and 1.4 million
steps.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from analysis.errors import bad_output_line
from runfolder import JsonlReader, OutputLine, stored

from .exact import parse_decimal
from .interning import Interner
from .interval_steps import (
    FORMS,
    GridIndex,
    Step,
    TraceError,
    is_nested,
    read_steps,
    true_option,
)
from .order_pairs import pair_steps

__all__ = ["INELIGIBLE", "LEFT_OUT", "PathTable", "PathsReader", "ceil_div", "read_paths"]

# Why the bound's proof does not cover a unit; code i > 0 is INELIGIBLE[i].
INELIGIBLE = (
    "",
    "path not nested",  # a step does not refine the previous selection
    "target outside [L, U)",  # the paper's scope: in-range targets only
    "read-out not the final cell's lower endpoint",  # e.g. a probability-weighted read-out
    "parent wider than W_{d-1}",  # a partition less balanced than Algorithm 1's
)
# Codes whose outputs have no first-divergence depth at all: out of the bound's table.
LEFT_OUT = frozenset({1, 2})
_UNIT_INTS = (
    "job",
    "decoder",
    "condition",
    "order",
    "case",
    "family",
    "repeat",
    "n_cells",
    "branching",
    "target_cell",
    "nested",
    "ineligible",
    "first_divergence",
    "beyond_term",
    "step_count",
    "step_start",
)
_STEP_INTS = ("form", "a", "b", "k", "lo", "hi", "choice", "truth", "pair")
_FAILED, _OTHER, _ABSENT = -1, -2, -3  # what the last line of an output said, if not a unit


def ceil_div(n: int, m: int) -> int:
    """⌈n/m⌉ for positive integers."""
    return -(-n // m)


@dataclass(frozen=True, eq=False)
class PathTable:
    """Units (ok outputs read as interval paths) and their steps, as numpy columns.

    Unit columns: ``unit[name]`` for every name in ``_UNIT_INTS`` plus ``error_cells`` and
    ``forced_cells`` (NaN without a divergence); categorical columns are codes into
    ``names[column]``. ``target_cell`` is -1 outside [L, U); ``beyond_term`` flags a unit
    whose error is not below its term of the bound (never, when the proof applies).
    Step columns: ``step[name]`` for ``_STEP_INTS``; unit u's steps are
    ``step_start[u] .. step_start[u] + step_count[u] − 1`` by depth; ``truth`` is the option
    holding y (``interval_steps.true_option``; -1: none). ``pair`` is
    ``2·pair id + side`` (side 0: the first order) or -1 when the other order did not ask
    the same question at that step. Pairs: ``pair_first``, ``pair_second``, ``pair_depth``.
    """

    unit: dict[str, np.ndarray]
    step: dict[str, np.ndarray]
    names: dict[str, tuple[str, ...]]
    cuts: dict[int, tuple[int, ...]]  # step -> the bounds of a CUTS step's options
    codes: dict[str, dict[str, int]]  # "job", "decoder": name -> code
    unit_at: np.ndarray  # job code · len(decoders) + decoder code -> unit, or -1
    pair_first: np.ndarray
    pair_second: np.ndarray
    pair_depth: np.ndarray
    outputs_read: int  # distinct ok (job, decoder) outputs
    not_intervals: tuple[tuple[str, int], ...]  # (decoder, ok outputs) not interval choices

    def __len__(self) -> int:
        return len(self.unit["job"])

    def unit_of(self, job: str, decoder: str) -> int | None:
        """The unit of output (job, decoder), or None when it is not one."""
        j, d = self.codes["job"].get(job), self.codes["decoder"].get(decoder)
        if j is None or d is None:
            return None
        unit = int(self.unit_at[j * len(self.codes["decoder"]) + d])
        return unit if unit >= 0 else None

    def step_of(self, unit: int, depth: int) -> Step | None:
        """Step ``depth`` (1-based) of ``unit``'s path, or None beyond its end."""
        if not 1 <= depth <= self.unit["step_count"][unit]:
            return None
        i = int(self.unit["step_start"][unit]) + depth - 1
        s = self.step
        return Step(
            depth,
            FORMS[s["form"][i]],
            int(s["a"][i]),
            int(s["b"][i]),
            int(s["k"][i]),
            int(s["lo"][i]),
            int(s["hi"][i]),
            self.names["choice"][s["choice"][i]],
            self.cuts.get(i),
        )


# A unit's row beyond its identity (n_cells … step_count), its two floats, its steps' flat
# fields, and (step offset, bounds) of any cuts steps.
_Derived = tuple[tuple[int, ...], tuple[float, float], list[int], list[tuple[int, tuple[int, ...]]]]


def _derive(
    steps: tuple[Step, ...], grid: GridIndex, numbers: tuple[Any, ...], choices: Interner
) -> _Derived:
    """First divergence, exact error, forced error and eligibility of one path (module doc)."""
    cell, position, found, error = numbers
    n_cells, branching = grid.n_cells, steps[0].k
    nested = is_nested(steps, n_cells)
    first, forced, term = -1, None, 1
    if nested and cell is not None:
        first = next((s.depth for s in steps if not s.lo <= cell < s.hi), 0)
        if first:
            wrong = steps[first - 1]
            forced = wrong.lo - position if position < wrong.lo else position - (wrong.hi - 1)
            term = ceil_div(n_cells, branching ** (first - 1))
    last = steps[-1]
    if not nested:
        ineligible = 1
    elif cell is None:
        ineligible = 2
    elif last.hi - last.lo != 1 or found != last.lo:
        ineligible = 3
    elif any(s.b - s.a > ceil_div(n_cells, branching ** (s.depth - 1)) for s in steps):
        ineligible = 4
    else:
        ineligible = 0
    tail = (
        n_cells,
        branching,
        -1 if cell is None else cell,
        int(nested),
        ineligible,
        first,
        int(ineligible == 0 and not error < term),
        len(steps),
    )
    fields: list[int] = []
    cuts = []
    for i, s in enumerate(steps):
        if s.cuts is not None:
            cuts.append((i, s.cuts))
        fields += (
            FORMS.index(s.form),
            s.a,
            s.b,
            s.k,
            s.lo,
            s.hi,
            choices.code(s.choice),
            true_option(s, cell),
            -1,
        )
    floats = (float(error), math.nan if forced is None else float(forced))
    return tail, floats, fields, cuts


class PathsReader:
    """Builds the columns of a PathTable while outputs.jsonl streams past (``add`` per line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # int32 (half of int64's bytes: 1.4 million steps at 100×), widened once a value
        # does not fit (grid indices of a vast N).
        self.units = array("i")  # _UNIT_INTS per unit
        self.floats = array("d")  # error_cells, forced_cells per unit
        self.steps = array("i")  # _STEP_INTS per step
        names = ("job", "decoder", "condition", "order", "case", "family")
        self.codes = {name: Interner() for name in names}
        self.codes["choice"] = Interner()
        self.cuts: dict[int, tuple[int, ...]] = {}
        self.grids: dict[tuple[Any, ...], GridIndex] = {}
        self.cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.derived: dict[tuple[Any, ...], _Derived | None] = {}
        # Per decoder code, by job code: the unit, or _FAILED, _OTHER (not interval
        # choices) or _ABSENT. Typed arrays, not a dict: no object per output stays behind.
        self.latest: list[array[int]] = []

    def grid(self, record: OutputLine) -> GridIndex:
        n_cells = record["N"]
        key = (record["L"], record["eps"], n_cells)
        grid = self.grids.get(key)
        if grid is None:
            if isinstance(n_cells, bool) or not isinstance(n_cells, int) or n_cells <= 0:
                raise TraceError(f"N must be a positive whole number; got {n_cells!r}")
            eps = parse_decimal(record["eps"])
            if eps <= 0:
                raise TraceError(f"eps must be positive; got {record['eps']!r}")
            grid = self.grids.setdefault(key, GridIndex(parse_decimal(record["L"]), eps, n_cells))
        return grid

    def numbers(self, record: OutputLine, grid: GridIndex) -> tuple[Any, ...]:
        """(cell of y or None, y in cells, ŷ in cells, |ŷ−y| in cells), exact and cached."""
        key = (record["target"], record["value"], record["L"], record["eps"], record["N"])
        known = self.cache.get(key)
        if known is None:
            target: Decimal = parse_decimal(record["target"])
            found, position = grid.cells(parse_decimal(record["value"])), grid.cells(target)
            known = (grid.cell_of(target), position, found, abs(found - position))
            if len(self.cache) >= 200_000:  # targets and values repeat across decoders
                self.cache.clear()
            self.cache[key] = known
        return known

    def derive(self, record: OutputLine) -> _Derived:
        """What a unit's row and steps hold beyond its identity, cached on the exact trace,
        target and value: orders, conditions and repeats often take the same path (a 1×
        affine run has 1,021 distinct paths in 4,096 interval outputs)."""
        trace = record.get("trace")
        key = (record["L"], record["eps"], record["N"], record["target"], record["value"])
        full = (*key, orjson.dumps(trace))
        found = self.derived.get(full)
        if found is None:
            grid = self.grid(record)
            try:
                steps = read_steps(trace, grid)
                found = _derive(steps, grid, self.numbers(record, grid), self.codes["choice"])
            except TraceError:
                found = None
            if len(self.derived) >= 50_000:  # entries; a few hundred bytes each
                self.derived.clear()
            self.derived[full] = found
        if found is None:
            raise TraceError("not interval choices")
        return found

    def add(self, lineno: int, record: OutputLine) -> None:
        """Read one line; a malformed one is refused with its line number."""
        try:
            self.record(record)
        except (KeyError, ValueError, TypeError) as exc:
            raise bad_output_line(self.path, lineno, repr(exc)) from exc

    def record(self, record: OutputLine) -> None:
        """One output: a unit and its steps when its trace reads as interval choices."""
        codes = self.codes
        job, decoder = (
            codes["job"].code(str(record["job"])),
            codes["decoder"].code(str(record["decoder"])),
        )
        # Every line's condition, as its decoder: the names are then the outputs' own, in
        # the same first-seen order, and give the tables' order without the outputs.
        condition = codes["condition"].code(str(record["condition"]))
        while len(self.latest) <= decoder:
            self.latest.append(array("i"))
        latest = self.latest[decoder]
        if len(latest) <= job:
            latest.extend([_ABSENT] * (job + 1 - len(latest)))
        if record.get("status") != "ok":
            latest[job] = _FAILED
            return
        try:
            tail, floats, fields, cuts = self.derive(record)
        except TraceError:
            latest[job] = _OTHER
            return
        latest[job] = len(self.floats) // 2
        start = len(self.steps) // len(_STEP_INTS)
        # One extend per row (stride arrays): appending column by column cost twice as much.
        self.units = _extended(
            self.units,
            (
                job,
                decoder,
                condition,
                codes["order"].code(str(record["order"])),
                codes["case"].code(str(record.get("case", record["job"]))),
                codes["family"].code(str(record.get("family", record.get("case", record["job"])))),
                int(record.get("repeat") or 0),
                *tail,
                start,
            ),
        )
        self.floats.extend(floats)
        self.steps = _extended(self.steps, fields)
        for offset, bounds in cuts:
            self.cuts[start + offset] = bounds

    def table(self, orders: tuple[str, str]) -> PathTable:
        """The columns as numpy arrays, the last line per (job, decoder) winning, and the
        steps both ``orders`` shared paired."""
        latest = [np.frombuffer(column, np.int32) for column in self.latest]
        alive = np.zeros(len(self.floats) // 2, bool)
        for column in latest:
            alive[column[column >= 0]] = True
        ints = _columns(self.units, len(_UNIT_INTS))[alive]
        floats = np.frombuffer(self.floats, np.float64).reshape(-1, 2)[alive]
        unit: dict[str, np.ndarray] = {n: ints[:, i].copy() for i, n in enumerate(_UNIT_INTS)}
        unit |= {"error_cells": floats[:, 0].copy(), "forced_cells": floats[:, 1].copy()}
        del ints, floats
        # Step columns are strided views of the one flat buffer (no copy: 90 MB at 100×).
        flat = _columns(self.steps, len(_STEP_INTS))
        step = {name: flat[:, i] for i, name in enumerate(_STEP_INTS)}
        names = {name: tuple(codes.strings) for name, codes in self.codes.items()}
        n_decoders = max(len(names["decoder"]), 1)
        unit_at = np.full(len(names["job"]) * n_decoders, -1, np.int64)
        at = unit["job"].astype(np.int64) * n_decoders + unit["decoder"]
        unit_at[at] = np.arange(len(unit["job"]))
        # Which steps both option orders of one case shared (fills step["pair"]).
        first, second, depth = pair_steps(unit, step, self.cuts, names["order"], orders)
        return PathTable(
            unit=unit,
            step=step,
            names=names,
            cuts=self.cuts,
            codes={name: dict(self.codes[name].ids) for name in ("job", "decoder")},
            unit_at=unit_at,
            pair_first=first,
            pair_second=second,
            pair_depth=depth,
            outputs_read=sum(int(np.count_nonzero((c >= 0) | (c == _OTHER))) for c in latest),
            not_intervals=tuple(
                sorted(
                    (names["decoder"][d], int(np.count_nonzero(c == _OTHER)))
                    for d, c in enumerate(latest)
                    if np.any(c == _OTHER)
                )
            ),
        )


def _extended(stride: array[int], row: Any) -> array[int]:
    """``stride`` with ``row`` appended, widened to int64 first if a value needs it."""
    size = len(stride)
    try:
        stride.extend(row)
    except OverflowError:  # extend appends item by item: drop the part-row first
        stride = array("q", stride[:size])
        stride.extend(row)
    return stride


def _columns(stride: array[int], width: int) -> np.ndarray:
    """A stride array as a (rows, width) NumPy view."""
    return np.frombuffer(stride, np.dtype(f"i{stride.itemsize}")).reshape(-1, width)


def read_paths(path: Path, orders: tuple[str, str] = ("ascending", "reversed")) -> PathTable:
    """Stream ``outputs.jsonl``: every ok output whose trace reads as interval choices.

    The last line for a (job, decoder) wins, as everywhere in analysis. A missing file
    reads as empty. ``orders`` names the two option orders whose questions are paired.
    """
    reader = PathsReader(path)
    if stored(path).is_file():
        for lineno, record in JsonlReader[OutputLine](path).numbered():
            reader.add(lineno, record)
    return reader.table(orders)
