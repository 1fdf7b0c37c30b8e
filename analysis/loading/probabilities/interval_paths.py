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
steps. Each distinct path is derived and kept once (``path_table.PathStore``: that run has
1,084 of them), each unit as its identity codes and its path; ``path_table.build_table``
makes the columns.
"""

from __future__ import annotations

import math
import struct
from array import array
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from analysis.errors import bad_output_line
from analysis.loading.columns.compact import extended
from analysis.loading.columns.exact import parse_decimal
from analysis.loading.columns.interning import Interner
from runfolder import JsonlReader, OutputLine, stored

from .chain_units import CHAIN_DECODERS, ChainOutputs, ChainRow
from .interval_steps import (
    FORMS,
    GridIndex,
    Step,
    TraceError,
    is_nested,
    read_steps,
    true_option,
)
from .path_table import LINE_ABSENT, LINE_FAILED, LINE_OTHER, PathStore, PathTable, build_table

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
_NOT_INTERVALS = -1  # the derive cache's answer for a trace that is not interval choices


def ceil_div(n: int, m: int) -> int:
    """⌈n/m⌉ for positive integers."""
    return -(-n // m)


# A path's row (path_table.PATH_INTS), its five floats, its steps' flat fields
# (path_table.PATH_STEP) and (step offset, bounds) of any cuts steps.
_Derived = tuple[tuple[int, ...], tuple[float, ...], list[int], list[tuple[int, tuple[int, ...]]]]


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
    ints = (
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
            choices.code(s.choice),
            true_option(s, cell),
        )
    # y's position in cells: the predicted distributions are scored against it.
    floats = (
        float(error),
        math.nan if forced is None else float(forced),
        float(position),
        float(grid.lower),
        float(grid.eps),
    )
    return ints, floats, fields, cuts


class PathsReader:
    """Builds the columns of a PathTable while outputs.jsonl streams past (``add`` per line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = PathStore()
        names = ("job", "decoder", "condition", "order", "case", "family")
        self.codes = {name: Interner() for name in names}
        self.codes["choice"] = Interner()
        # The interners' dicts, looked up directly in ``record`` (a method call per field
        # cost ~1 s of a 100× read).
        self.ids = tuple(self.codes[name].ids for name in names)
        self.grids: dict[tuple[Any, ...], GridIndex] = {}
        self.cache: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.derived: dict[tuple[Any, ...], int] = {}  # exact trace, target, value -> path
        self.pack = struct.Struct(f"={_ROW}i").pack  # a unit's row as store.units' items
        self.last: _Last | None = None  # what ``record`` made of the last line
        self.chains = ChainOutputs()  # digits, bits, thresholds: the Distributions section's
        self.generation = 0  # how often ``derived`` was cleared (its path ids then renewed)

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

    def path_of(self, record: OutputLine, key: tuple[Any, ...]) -> int:
        """The id of the output's distinct path in ``store``, or ``_NOT_INTERVALS``, derived
        once per ``key`` (``record`` looks it up first): the exact trace, target and value.
        Orders, conditions and repeats often take the same path (a 100× affine run has 1,084
        distinct paths in 409,600 interval outputs)."""
        found = self.derived.get(key)
        if found is None:
            grid = self.grid(record)
            try:
                steps = read_steps(record.get("trace"), grid)
                derived = _derive(steps, grid, self.numbers(record, grid), self.codes["choice"])
                found = self.store.add_path(*derived)
            except TraceError:
                found = _NOT_INTERVALS
            if len(self.derived) >= 50_000:  # entries; a few hundred bytes each
                self.derived.clear()  # (a path derived again is kept again: harmless)
                self.generation += 1
            self.derived[key] = found
        return found

    def _chain(self, record: OutputLine, condition: int, kind: int) -> ChainRow | None:
        """A chain output's row (``chain_units``); None when its grid or numbers do not read
        (the line is then left out of the Distributions section, as a trace that is not
        interval choices is left out of the paths)."""
        try:
            grid = self.grid(record)
            numbers = self.numbers(record, grid)
            return self.chains.row(record, condition, kind, numbers, float(grid.lower))
        except (TraceError, ArithmeticError, KeyError, TypeError, ValueError):
            return None

    def add(self, lineno: int, record: OutputLine) -> None:
        """Read one line; a malformed one is refused with its line number."""
        try:
            self.record(record)
        except (KeyError, ValueError, TypeError) as exc:
            raise bad_output_line(self.path, lineno, repr(exc)) from exc

    def record(self, record: OutputLine) -> None:
        """One output: a unit, and its path when new, when its trace reads as interval choices."""
        # The hot path (0.6 million lines at 100×) inlines what a call per field would cost:
        # names looked up in the interners' dicts, the path cache, the row packed in one go.
        jobs, decoders, conditions, _, _, _ = self.ids
        raw: Any = record["job"]
        job = raw if raw.__class__ is str else str(raw)
        decoder, condition = record["decoder"], record["condition"]
        decoder = decoder if decoder.__class__ is str else str(decoder)
        condition = condition if condition.__class__ is str else str(condition)
        try:
            job_code = jobs[job]
        except KeyError:
            job_code = self.codes["job"].code(job)
        try:
            # Every line's condition, as its decoder: the names are then the outputs' own, in
            # the same first-seen order, and give the tables' order without the outputs.
            decoder_code, condition_code = decoders[decoder], conditions[condition]
        except KeyError:
            decoder_code = self.codes["decoder"].code(decoder)
            condition_code = self.codes["condition"].code(condition)
        chain: ChainRow | None = None
        if record.get("status") != "ok":
            outcome: _Outcome = LINE_FAILED
        else:
            kind = CHAIN_DECODERS.get(decoder)
            if kind is not None:
                chain = self._chain(record, condition_code, kind)
            key = (
                record["L"],
                record["eps"],
                record["N"],
                record["target"],
                record["value"],
                orjson.dumps(record.get("trace")),
            )
            path = self.derived.get(key)
            if path is None:
                path = self.path_of(record, key)
            outcome = LINE_OTHER if path == _NOT_INTERVALS else self._unit(record, raw, path)
        self.last = (decoder_code, condition_code, outcome, chain)
        self._place(job_code, decoder_code, condition_code, outcome)
        self.chains.place(job_code, decoder_code, chain)

    def _unit(self, record: OutputLine, raw: Any, path: int) -> _Outcome:
        """The codes of an interval unit's names, its repeat and its path."""
        _, _, _, orders, cases, families = self.ids
        # Names as the tables show them: a string as is, any other value as ``str`` writes
        # it (inline: a call per name cost ~0.3 s at 100x).
        case: Any = record.get("case", raw)
        order, family = record["order"], record.get("family", case)
        order = order if order.__class__ is str else str(order)
        family = family if family.__class__ is str else str(family)
        case = case if case.__class__ is str else str(case)
        try:
            codes = (orders[order], cases[case], families[family])
        except KeyError:
            names = self.codes
            codes = (
                names["order"].code(order),
                names["case"].code(case),
                names["family"].code(family),
            )
        return (*codes, int(record.get("repeat") or 0), path)

    def repeated(self, job: str, repeat: int, last: _Last) -> None:
        """A line whose fields but its job, repeat and ``seq`` equal those of a line read
        before (``last``: what ``record`` kept of that line), taken without parsing
        (``repeated_lines``): the unit ``record`` would have made of it."""
        try:
            job_code = self.ids[0][job]
        except KeyError:
            job_code = self.codes["job"].code(job)
        decoder_code, condition_code, outcome, chain = last
        if outcome.__class__ is tuple:
            outcome = (*outcome[:3], repeat, outcome[4])
        self._place(job_code, decoder_code, condition_code, outcome)
        self.chains.place(job_code, decoder_code, chain)

    def _place(
        self, job_code: int, decoder_code: int, condition_code: int, outcome: _Outcome
    ) -> None:
        """The line's outcome as the latest of its (job, decoder): failed, not interval
        choices, or a unit row (its names' codes, repeat and path)."""
        store = self.store
        while len(store.latest) <= decoder_code:
            store.latest.append(array("i"))
        latest = store.latest[decoder_code]
        if len(latest) <= job_code:  # grown a chunk at a time (past the last job: absent)
            gap = job_code + 1 - len(latest)
            latest.extend(_ABSENT if gap <= len(_ABSENT) else array("i", [LINE_ABSENT]) * gap)
        if outcome.__class__ is int:
            latest[job_code] = outcome
            return
        units = store.units
        latest[job_code] = len(units) // _ROW
        row = (job_code, decoder_code, condition_code, *outcome)  # type: ignore[misc]
        try:  # (pack refuses the whole row, so a row is never half appended)
            units.frombytes(self.pack(*row))
        except struct.error:  # a value beyond int32: the rows widen to int64
            store.units = extended(units, row)
            self.pack = struct.Struct(f"={_ROW}{store.units.typecode}").pack

    def table(self, orders: tuple[str, str]) -> PathTable:
        """The columns as numpy arrays, the last line per (job, decoder) winning, and the
        steps both ``orders`` shared paired. Once: the reader's arrays go into the table."""
        # The caches are done with: free them before the columns are made.
        self.derived.clear()
        self.cache.clear()
        self.grids.clear()
        table = build_table(self.store, self.codes, orders, self.chains)
        # The table holds the names now; a caller that keeps the reader (the answers join
        # runs beside it) keeps no second list of a million job names.
        self.codes, self.ids, self.store = {}, (), PathStore()
        self.chains = ChainOutputs()
        return table


_ROW = 8  # path_table.IDENTITY and the path
# What a line came to: LINE_FAILED, LINE_OTHER, or a unit's (order, case, family, repeat, path).
_Outcome = int | tuple[int, ...]
# (decoder code, condition code, outcome, chain output's row or None)
_Last = tuple[int, int, _Outcome, ChainRow | None]
_ABSENT = array("i", [LINE_ABSENT]) * 4096  # a decoder's jobs without a line yet


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
