"""The order pairs of the Probabilities join, scored at once in NumPy after the pass.

Each answered question at a shared step (``order_pairs.pair_steps``) leaves its raw
probabilities in a flat array while requests.jsonl streams past; here the two orders'
answers to each shared question are matched (consecutive arrivals of one pair id, as a
pending-then-partner reading would match them), put in sorted label order as float32,
averaged, and scored. Pure logic, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LabelSets", "PairRows", "score_pairs"]


class LabelSets:
    """Criteria label tuples seen so far, each once: its labels' positions, its sorting
    permutation and the id of its sorted form (two orders share a question only when the
    sorted labels agree)."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, ...], tuple[int, dict[str, int]]] = {}
        self.sorted_ids: dict[tuple[str, ...], int] = {}
        self.perm: list[np.ndarray] = []  # per set id: the positions in sorted label order
        self.rank: list[np.ndarray] = []  # per set id: each position's place when sorted
        self.sorted_of: list[int] = []

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Flat (permutations, ranks, each set's start in them, each set's width)."""
        width = np.array([len(p) for p in self.perm] or [0], np.int64)
        start = (np.cumsum(width) - width).astype(np.int64)
        if not self.perm:
            return np.empty(0, np.int64), np.empty(0, np.int64), start, width
        return np.concatenate(self.perm), np.concatenate(self.rank), start, width

    def get(self, labels: tuple[str, ...]) -> tuple[int, dict[str, int]]:
        """(set id, label -> position) of ``labels``."""
        found = self.ids.get(labels)
        if found is None:
            order = sorted(range(len(labels)), key=labels.__getitem__)
            key = tuple(labels[i] for i in order)
            self.sorted_of.append(self.sorted_ids.setdefault(key, len(self.sorted_ids)))
            perm = np.array(order, np.int64)
            rank = np.empty(len(order), np.int64)
            rank[perm] = np.arange(len(order))
            self.perm.append(perm)
            self.rank.append(rank)
            found = self.ids[labels] = (len(self.perm) - 1, {s: i for i, s in enumerate(labels)})
        return found


@dataclass(frozen=True)
class PairRows:
    """The rows that scored pairs: pair id, and whether the first order's, the second
    order's and the averaged distribution's pick is the true label (1/t for a t-way tie)."""

    pair_id: np.ndarray
    first_right: np.ndarray
    second_right: np.ndarray
    averaged_right: np.ndarray
    without_truth: int  # matched pairs whose options differ or whose truth is unknown


def score_pairs(columns: dict[str, np.ndarray], values: np.ndarray, sets: LabelSets) -> PairRows:
    """Score the order pairs among the answered rows in ``columns`` (arrival order).

    ``columns``: ``slot`` (2·pair id + side), ``set`` (label set id), ``offset`` (start of
    the row's raw probabilities in ``values``), ``total`` (their exact sum), ``choice``
    and ``true`` (positions in the row's labels; ``true`` -1 when no option holds y).
    """
    slot = columns["slot"].astype(np.int64)
    pair_id = slot >> 1
    rows = np.argsort(pair_id, kind="stable")  # each pair id's arrivals, in arrival order
    ids = pair_id[rows]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else np.empty(0, int)
    place = np.arange(len(ids)) - np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
    # Arrivals 1 and 2 of a pair id make a pair, then 3 and 4 (a repeat past depth 63).
    head = np.flatnonzero((place % 2 == 0) & (np.r_[ids[1:] == ids[:-1], False]))
    early, late = rows[head], rows[head + 1]
    sorted_of = np.array(sets.sorted_of or [0], np.int64)
    kind = columns["set"].astype(np.int64)
    same = sorted_of[kind[early]] == sorted_of[kind[late]]
    scored = same & (columns["true"][late] >= 0)
    without = int(len(early) - np.count_nonzero(scored))
    early, late = early[scored], late[scored]
    # Reported in the order the second of each pair arrived.
    by_arrival = np.argsort(late, kind="stable")
    early, late = early[by_arrival], late[by_arrival]
    side = slot[late] & 1
    first = np.where(side == 0, late, early)
    second = np.where(side == 0, early, late)
    perm, rank, set_start, set_width = sets.tables()

    def sorted_place(row: np.ndarray, position: np.ndarray) -> np.ndarray:
        return rank[set_start[kind[row]] + position.astype(np.int64)]

    true = sorted_place(late, columns["true"][late])
    first_right = (sorted_place(first, columns["choice"][first]) == true).astype(np.float64)
    second_right = (sorted_place(second, columns["choice"][second]) == true).astype(np.float64)
    tables = (perm, set_start, set_width)
    averaged = _averaged_right(columns, values, tables, first, second, true)
    return PairRows(
        pair_id=pair_id[late],
        first_right=first_right,
        second_right=second_right,
        averaged_right=averaged,
        without_truth=without,
    )


def _sorted_vectors(
    columns: dict[str, np.ndarray],
    values: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    row: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's probabilities in sorted label order, renormalised, as float32 (flat), and
    each row's option count."""
    perm, set_start, set_width = tables
    kind = columns["set"].astype(np.int64)[row]
    width = set_width[kind]
    owner = np.repeat(np.arange(len(row)), width)
    j = np.arange(len(owner)) - np.repeat(np.cumsum(width) - width, width)
    at = columns["offset"].astype(np.int64)[row][owner] + perm[set_start[kind][owner] + j]
    return (values[at] / columns["total"][row][owner]).astype(np.float32), width


def _averaged_right(
    columns: dict[str, np.ndarray],
    values: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray],
    first: np.ndarray,
    second: np.ndarray,
    true: np.ndarray,
) -> np.ndarray:
    """1/t when the averaged distribution's t-way top includes the true label, else 0."""
    if not len(first):
        return np.empty(0, np.float64)
    a, width = _sorted_vectors(columns, values, tables, first)
    b, _ = _sorted_vectors(columns, values, tables, second)
    averaged = (a.astype(np.float64) + b.astype(np.float64)) / 2
    starts = (np.cumsum(width) - width).astype(np.int64)
    # float32 noise is ~1e-7; inputs with 2 decimals differ by at least ~0.002 when they do.
    top = np.maximum.reduceat(averaged, starts) - 1e-6
    picks = averaged >= np.repeat(top, width)
    count = np.add.reduceat(picks.astype(np.int64), starts)
    hit = picks[starts + true]
    return np.where(hit, 1.0 / count, 0.0)
