"""A tree decoder's recorded decision path, rebuilt level by level for drawing (no I/O).

Each level partitions only the selected parent (paper, Algorithm 1):
``k = min(K, b−a)``, ``t_j = a + floor((b−a)·j/k)``, child j = ``[L+eps·t_j, L+eps·t_{j+1})``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from analysis.errors import SelectionError

from .exact import parse_decimal
from .names import tree_branching

__all__ = ["DecisionPath", "PathLevel", "decision_path"]


@dataclass(frozen=True)
class PathLevel:
    """One decision: the parent interval, its k children shown around the chosen one."""

    round: int
    parent: tuple[str, str]
    k: int
    chosen: int  # index j of the selected child
    shown: tuple[int, ...]  # child indices drawn (the chosen one and up to 3 siblings)
    intervals: tuple[tuple[str, str], ...]  # [lo, hi) of each shown child, as decimal text
    elided_before: int  # siblings hidden to the left of the shown ones
    elided_after: int


@dataclass(frozen=True)
class DecisionPath:
    """The full path of one (job, treeK decoder) output."""

    job: str
    decoder: str
    branching: int
    root: tuple[str, str]
    target: str
    value: str | None
    cell: tuple[str, str] | None
    levels: tuple[PathLevel, ...]


def _text(number: Decimal) -> str:
    # Grid bounds print as plain decimals (no exponent): 1E+4 -> "10000", 0.30 stays "0.30".
    return f"{number:f}"


def _index(bound: Decimal, lower: Decimal, eps: Decimal, where: str) -> int:
    q = (bound - lower) / eps
    if q != q.to_integral_value():
        raise SelectionError(f"{where}: bound {bound} is not on the grid L={lower}, eps={eps}")
    return int(q)


def decision_path(record: dict[str, Any], max_siblings: int = 3) -> DecisionPath:
    """Rebuild the levels of a tree decoder's trace from its outputs.jsonl record.

    Uses each step's ``parent``/``k`` when present, else derives them from the previous
    interval and K (so traces with only ``interval`` also work).
    """
    decoder = str(record.get("decoder"))
    branching = tree_branching(decoder)
    job = str(record.get("job"))
    if branching is None:
        raise SelectionError(f"decoder {decoder!r} is not an interval tree; pass a treeK decoder")
    lower, eps = parse_decimal(record["L"]), parse_decimal(record["eps"])
    n_cells = int(record["N"])
    a, b = 0, n_cells
    steps = sorted(record.get("trace") or [], key=lambda s: s.get("round", 0))
    levels: list[PathLevel] = []
    for step in steps:
        where = f"job {job} {decoder} round {step.get('round')}"
        if "interval" not in step:
            raise SelectionError(f"{where}: trace step has no 'interval'")
        if "parent" in step:
            a = _index(parse_decimal(step["parent"][0]), lower, eps, where)
            b = _index(parse_decimal(step["parent"][1]), lower, eps, where)
        k = int(step.get("k") or min(branching, b - a))
        cuts = [a + (b - a) * j // k for j in range(k + 1)]
        start = _index(parse_decimal(step["interval"][0]), lower, eps, where)
        if start not in cuts[:-1]:
            raise SelectionError(
                f"{where}: interval {step['interval']} is not a child of its parent"
            )
        chosen = cuts.index(start)
        width = min(k, max_siblings + 1)
        # The chosen child with one sibling before it and the rest after, when there is room.
        first = max(0, min(chosen - 1, k - width))
        shown = tuple(range(first, first + width))
        levels.append(
            PathLevel(
                round=int(step.get("round", len(levels) + 1)),
                parent=(_text(lower + eps * a), _text(lower + eps * b)),
                k=k,
                chosen=chosen,
                shown=shown,
                intervals=tuple(
                    (_text(lower + eps * cuts[j]), _text(lower + eps * cuts[j + 1])) for j in shown
                ),
                elided_before=first,
                elided_after=k - first - width,
            )
        )
        a, b = cuts[chosen], cuts[chosen + 1]
    cell = record.get("cell")
    return DecisionPath(
        job=job,
        decoder=decoder,
        branching=branching,
        # lower + eps·0 carries eps's decimals, so the root reads [0.00, 1.00) like its children.
        root=(_text(lower + eps * 0), _text(lower + eps * n_cells)),
        target=str(record["target"]),
        value=None if record.get("value") is None else str(record["value"]),
        cell=(str(cell[0]), str(cell[1])) if isinstance(cell, list) and len(cell) == 2 else None,
        levels=tuple(levels),
    )
