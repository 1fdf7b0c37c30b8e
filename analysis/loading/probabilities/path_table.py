"""The interval paths as numpy columns: one row per unit, one per step of each unit's path.

``PathsReader`` (``interval_paths.py``) keeps each distinct path once (``PathStore``: a 100×
affine run has 409,600 units on 1,084 distinct paths) and per unit only its identity codes
and its path. ``build_table`` expands that into the per-unit and per-step columns of a
``PathTable`` in the smallest integer types that hold them, a block of units at a time, and
keeps of the steps only what the answers join reads (the parent intervals and cuts that
pairing compares stay with the distinct paths). No I/O.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.loading.columns.compact import extended, narrow, narrow_type, stride_view
from analysis.loading.columns.interning import CompactNames, Interner, NameCodes

from .chain_units import ChainOutputs
from .order_pairs import Questions, pair_steps

__all__ = [
    "IDENTITY",
    "LINE_ABSENT",
    "LINE_FAILED",
    "LINE_OTHER",
    "PATH_INTS",
    "PATH_STEP",
    "PathStore",
    "PathTable",
    "build_table",
]

# A unit's row while reading: these codes, then its path.
IDENTITY = ("job", "decoder", "condition", "order", "case", "family", "repeat")
# A distinct path's row: what the bound needs (interval_paths module doc) ...
PATH_INTS = (
    "n_cells",
    "branching",
    "target_cell",
    "nested",
    "ineligible",
    "first_divergence",
    "beyond_term",
    "step_count",
)
# ... and its steps' rows.
PATH_STEP = ("form", "a", "b", "k", "choice", "truth")
_KEPT_STEP = ("form", "k", "choice", "truth")  # the answers join reads these (and pair)
_FLOATS = 5  # a path's floats: error, forced error, y's position (cells), L, eps
_BLOCK = 1 << 16  # units expanded at once: their steps' int64 index, ~2 MB
# What the last line of an output said, if not a unit.
LINE_FAILED, LINE_OTHER, LINE_ABSENT = -1, -2, -3


@dataclass(frozen=True, eq=False)
class PathTable:
    """Units (ok outputs read as interval paths) and their steps, as numpy columns.

    Unit columns: ``unit[name]`` for ``IDENTITY``, ``PATH_INTS``, ``step_start`` and the
    floats ``error_cells``, ``forced_cells`` (NaN without a divergence), ``lower`` and
    ``eps`` (the grid's L and ε, as floats: the log-scale CRPS maps cells to values) and
    ``target_cells``
    (y's position in cells, fractional; NaN when not finite); categorical
    columns are codes into ``names[column]``. ``target_cell`` is -1 outside [L, U);
    ``beyond_term`` flags a unit whose error is not below its term of the bound (never, when
    the proof applies). Step columns: ``step[name]`` for ``form`` (index into
    ``interval_steps.FORMS``), ``k`` (the options), ``choice`` (code into
    ``names["choice"]``), ``truth`` and ``pair``; unit u's steps are
    ``step_start[u] .. step_start[u] + step_count[u] − 1`` by depth; ``truth`` is the option
    holding y (``interval_steps.true_option``; -1: none). ``pair`` is
    ``2·pair id + side`` (side 0: the first order) or -1 when the other order did not ask
    the same question at that step. Pairs: ``pair_first``, ``pair_second``, ``pair_depth``.
    Integer columns have the smallest type that holds them.
    """

    unit: dict[str, np.ndarray]
    step: dict[str, np.ndarray]
    names: dict[str, Sequence[str]]  # tuples, but "job": CompactNames
    cuts: dict[int, tuple[int, ...]]  # step -> the bounds of a CUTS step's options
    codes: dict[str, Mapping[str, int]]  # "job" (NameCodes), "decoder": name -> code
    unit_at: np.ndarray  # job code · len(decoders) + decoder code -> unit, or -1
    pair_first: np.ndarray
    pair_second: np.ndarray
    pair_depth: np.ndarray
    outputs_read: int  # distinct ok (job, decoder) outputs
    not_intervals: tuple[tuple[str, int], ...]  # (decoder, ok outputs) not interval choices
    chains: ChainOutputs = field(default_factory=ChainOutputs)  # digits, bits, thresholds

    def __len__(self) -> int:
        return len(self.unit["job"])

    def unit_of(self, job: str, decoder: str) -> int | None:
        """The unit of output (job, decoder), or None when it is not one."""
        j, d = self.codes["job"].get(job), self.codes["decoder"].get(decoder)
        if j is None or d is None:
            return None
        unit = int(self.unit_at[j * len(self.codes["decoder"]) + d])
        return unit if unit >= 0 else None


@dataclass
class PathStore:
    """What ``PathsReader`` accumulates: typed stride arrays (int32, widened to int64 once a
    value does not fit), no object per output."""

    units: array[int] = field(default_factory=lambda: array("i"))  # IDENTITY + path per unit
    paths: array[int] = field(default_factory=lambda: array("i"))  # PATH_INTS per path
    floats: array[float] = field(default_factory=lambda: array("d"))  # _FLOATS per path
    steps: array[int] = field(default_factory=lambda: array("i"))  # PATH_STEP per path step
    cuts: dict[int, tuple[int, ...]] = field(default_factory=dict)  # path step -> bounds
    # Per decoder code, by job code: the unit, or LINE_FAILED, LINE_OTHER (not interval
    # choices) or LINE_ABSENT.
    latest: list[array[int]] = field(default_factory=list)

    def add_path(
        self,
        ints: tuple[int, ...],
        floats: tuple[float, ...],
        steps: list[int],
        cuts: list[tuple[int, tuple[int, ...]]],
    ) -> int:
        """Keep one distinct path; its id."""
        found, first = len(self.floats) // _FLOATS, len(self.steps) // len(PATH_STEP)
        self.paths = extended(self.paths, ints)
        self.floats.extend(floats)
        self.steps = extended(self.steps, steps)
        for offset, bounds in cuts:
            self.cuts[first + offset] = bounds
        return found


def build_table(
    store: PathStore,
    interners: dict[str, Interner],
    orders: tuple[str, str],
    chains: ChainOutputs | None = None,
) -> PathTable:
    """The PathTable of what ``store`` read, the last line per (job, decoder) winning, and
    the steps both ``orders`` shared paired. Empties ``store``'s per-unit arrays, freeing
    each as soon as its columns are made (the table is at its largest at the end)."""
    names: dict[str, Sequence[str]] = {
        name: tuple(codes.strings) for name, codes in interners.items() if name != "job"
    }
    # The job names compact (a million at 1000×): their strings go with the reader's interner.
    jobs = names["job"] = CompactNames(interners["job"].strings if "job" in interners else [])
    latest = [np.frombuffer(column, np.int32) for column in store.latest]
    store.latest = []
    outputs_read = sum(int(np.count_nonzero((c >= 0) | (c == LINE_OTHER))) for c in latest)
    not_intervals = tuple(
        sorted(
            (names["decoder"][d], int(np.count_nonzero(c == LINE_OTHER)))
            for d, c in enumerate(latest)
            if np.any(c == LINE_OTHER)
        )
    )
    alive = np.zeros(len(store.units) // (len(IDENTITY) + 1), bool)
    for column in latest:
        alive[column[column >= 0]] = True
    del latest
    unit, path = _identity(store, alive)
    del alive
    # Pairing first, while little else is held: its sort is the pass's largest temporary.
    paths = stride_view(store.paths, len(PATH_INTS))
    count = narrow(paths[:, PATH_INTS.index("step_count")])[path]
    start = narrow(np.cumsum(count, dtype=np.int64) - count)
    steps = stride_view(store.steps, len(PATH_STEP))
    path_counts = paths[:, PATH_INTS.index("step_count")].astype(np.int64)
    form, a, b, k = (steps[:, PATH_STEP.index(name)] for name in ("form", "a", "b", "k"))
    questions = Questions(
        form, a, b, k, start=np.cumsum(path_counts) - path_counts, cuts=store.cuts
    )
    total = int(start[-1]) + int(count[-1]) if len(start) else 0
    # One pair per shared step and side at most: 2·total + 1 bounds every value.
    pair = np.full(total, -1, narrow_type(-1, 2 * total + 1))
    # Which steps both option orders of one case shared (fills pair).
    first, second, depth = pair_steps(
        unit | {"step_count": count, "step_start": start},
        path,
        questions,
        names["order"],
        orders,
        pair,
    )
    unit |= {
        name: count if name == "step_count" else narrow(paths[:, i])[path]
        for i, name in enumerate(PATH_INTS)
    }
    unit["step_start"] = start
    floats = np.frombuffer(store.floats, np.float64).reshape(-1, _FLOATS)
    unit["error_cells"], unit["forced_cells"] = floats[path, 0], floats[path, 1]
    unit["target_cells"] = floats[path, 2]
    unit["lower"], unit["eps"] = floats[path, 3], floats[path, 4]
    step = _steps(unit, path, questions.start, steps) | {"pair": pair}
    unit_at = _unit_at(unit, len(names["job"]), len(names["decoder"]))
    return PathTable(
        unit=unit,
        step=step,
        names=names,
        cuts=_unit_cuts(path, unit["step_start"], questions),
        codes={"job": NameCodes(jobs), "decoder": interners["decoder"].ids},
        unit_at=unit_at,
        pair_first=first,
        pair_second=second,
        pair_depth=depth,
        outputs_read=outputs_read,
        not_intervals=not_intervals,
        chains=ChainOutputs() if chains is None else chains,
    )


def _identity(store: PathStore, alive: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The identity columns of the ``alive`` units, and their paths; frees ``store.units``."""
    rows = stride_view(store.units, len(IDENTITY) + 1)
    store.units = array("i")
    # Column by column: a line read again for one output (rare) leaves a dead row behind.
    everyone = slice(None) if alive.all() else alive
    unit = {name: narrow(rows[everyone, i]) for i, name in enumerate(IDENTITY)}
    return unit, rows[everyone, len(IDENTITY)].copy()


def _steps(
    unit: dict[str, np.ndarray], path: np.ndarray, path_start: np.ndarray, steps: np.ndarray
) -> dict[str, np.ndarray]:
    """Each unit's copy of its path's steps, for the columns the join reads (but ``pair``)."""
    kept = {name: narrow(steps[:, PATH_STEP.index(name)]) for name in _KEPT_STEP}
    count, start = unit["step_count"], unit["step_start"]
    total = int(start[-1]) + int(count[-1]) if len(start) else 0
    step = {name: np.empty(total, kept[name].dtype) for name in _KEPT_STEP}
    for at in range(0, len(path), _BLOCK):
        units = slice(at, at + _BLOCK)
        first, counts = start[units].astype(np.int64), count[units].astype(np.int64)
        # Unit step s of unit u is step s − start[u] of its path.
        end = int(first[-1] + counts[-1])
        source = np.repeat(path_start[path[units]] - first, counts)
        source += np.arange(first[0], end)
        for name in _KEPT_STEP:
            step[name][first[0] : end] = kept[name][source]
    return step


def _unit_cuts(
    path: np.ndarray, starts: np.ndarray, questions: Questions
) -> dict[int, tuple[int, ...]]:
    """The cuts of every unit's CUTS steps, by unit step (as ``PathTable.cuts``)."""
    if not questions.cuts:
        return {}
    of_path = np.searchsorted(questions.start, np.array(sorted(questions.cuts)), side="right") - 1
    by_path: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for p, q in zip(of_path.tolist(), sorted(questions.cuts), strict=True):
        by_path.setdefault(p, []).append((q - int(questions.start[p]), questions.cuts[q]))
    cuts = {}
    for u in np.flatnonzero(np.isin(path, list(by_path))).tolist():
        for offset, bounds in by_path[int(path[u])]:
            cuts[int(starts[u]) + offset] = bounds
    return cuts


def _unit_at(unit: dict[str, np.ndarray], jobs: int, decoders: int) -> np.ndarray:
    """job code · decoders + decoder code -> unit, or -1."""
    decoders = max(decoders, 1)
    n = len(unit["job"])
    unit_at = np.full(jobs * decoders, -1, narrow_type(-1, n))
    for at in range(0, n, _BLOCK):
        rows = slice(at, at + _BLOCK)
        where = unit["job"][rows].astype(np.int64) * decoders + unit["decoder"][rows]
        unit_at[where] = np.arange(at, at + len(where))
    return unit_at
