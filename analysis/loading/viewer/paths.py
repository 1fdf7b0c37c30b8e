"""A tree decoder's recorded decision path, rebuilt level by level for drawing (no I/O).

Each level partitions only the selected parent (paper, Algorithm 1):
``k = min(K, b−a)``, ``t_j = a + floor((b−a)·j/k)``, child j = ``[L+eps·t_j, L+eps·t_{j+1})``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Any

from analysis.errors import SelectionError
from analysis.loading.columns.exact import parse_decimal
from analysis.loading.names import tree_branching

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
    # The child holding the target (None when the target is outside the parent), shown
    # even when it is far from the chosen one; siblings hidden between shown ones:
    target: int | None = None
    elided_between: int = 0
    # Probability the model returned for each shown child (None: none returned).
    probabilities: tuple[float | None, ...] = ()


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


def decision_path(
    record: dict[str, Any],
    max_siblings: int = 3,
    answers: dict[int, dict[str, float]] | None = None,
) -> DecisionPath:
    """Rebuild the levels of a tree decoder's trace from its outputs.jsonl record.

    Uses each step's ``parent``/``k`` when present, else derives them from the previous
    interval and K (so traces with only ``interval`` also work). ``answers`` maps a round
    to the probabilities returned per label (label ``j`` is child ``j``), from
    requests.jsonl; without it no probability is shown.
    """
    decoder = str(record.get("decoder"))
    branching = tree_branching(decoder)
    job = str(record.get("job"))
    if branching is None:
        raise SelectionError(f"decoder {decoder!r} is not an interval tree; pass a treeK decoder")
    lower, eps = parse_decimal(record["L"]), parse_decimal(record["eps"])
    n_cells = int(record["N"])
    # The cell holding the target (floor), so an off-grid target still marks its interval.
    with localcontext() as ctx:
        ctx.prec = 60
        target_index = int(
            ((parse_decimal(record["target"]) - lower) / eps).to_integral_value(ROUND_FLOOR)
        )
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
        target = None
        if a <= target_index < b:
            target = max(j for j in range(k) if cuts[j] <= target_index)
        between = 0
        if target is not None and target not in shown:
            between = target - shown[-1] - 1 if target > shown[-1] else first - target - 1
            shown = tuple(sorted((*shown, target)))
        level_round = int(step.get("round", len(levels) + 1))
        returned = (answers or {}).get(level_round)
        levels.append(
            PathLevel(
                round=level_round,
                parent=(_text(lower + eps * a), _text(lower + eps * b)),
                k=k,
                chosen=chosen,
                shown=shown,
                intervals=tuple(
                    (_text(lower + eps * cuts[j]), _text(lower + eps * cuts[j + 1])) for j in shown
                ),
                elided_before=min(first, shown[0]),
                elided_after=k - 1 - max(first + width - 1, shown[-1]),
                target=target,
                elided_between=between,
                probabilities=tuple(
                    None if returned is None else returned.get(str(j)) for j in shown
                ),
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
