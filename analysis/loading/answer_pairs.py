"""The order pairs of the Probabilities join, matched and scored in NumPy, a chunk at a time.

Each answered question at a shared step (``order_pairs.pair_steps``) leaves its raw
probabilities in a buffer as the join's chunks of rows arrive (``add_many``). Every ``CHUNK`` probabilities,
the buffer is put in sorted label order as float32 and added to the answers still waiting
for their partner; the two orders' answers to one shared question (consecutive arrivals of
one pair id, as a pending-then-partner reading matches them) are averaged and scored, and
only the unmatched ones are kept. Pure logic, no I/O.
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass

import numpy as np

__all__ = ["CHUNK", "LabelSets", "PairRows", "PairScorer"]

CHUNK = 1 << 18  # probabilities (of answers at shared steps) between two matchings: 2 MB


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

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Flat (permutations, ranks), each set's start in them, and each set's width."""
        width = np.array([len(p) for p in self.perm] or [0], np.int64)
        start = (np.cumsum(width) - width).astype(np.int64)
        if not self.perm:
            return np.empty(0, np.int64), np.empty(0, np.int64), start, width
        return np.concatenate(self.perm), np.concatenate(self.rank), start, width


@dataclass(frozen=True)
class PairRows:
    """The scored pairs: pair id, and whether the first order's, the second order's and the
    averaged distribution's pick is the true label (1/t for a t-way tie that includes it)."""

    pair_id: np.ndarray
    first_right: np.ndarray
    second_right: np.ndarray
    averaged_right: np.ndarray
    without_truth: int  # matched pairs whose options differ or whose truth is unknown


_INTS = ("slot", "set", "choice", "true")


class PairScorer:
    """Answers at shared steps in, scored order pairs out (``add_many``, ``result``)."""

    def __init__(self, sets: LabelSets) -> None:
        self.sets = sets
        self.buffer = {name: array("q") for name in _INTS}
        self.totals, self.raw, self.widths = array("d"), array("d"), array("q")
        # Waiting answers: slot, sorted set id, choice and true label's sorted place, width,
        # arrival number; and their float32 vectors, flat, in sorted label order.
        self.waiting = {name: np.empty(0, np.int64) for name in (*_INTS, "width", "arrival")}
        self.vectors = np.empty(0, np.float32)
        self.arrived = 0
        self.found: list[tuple[np.ndarray, ...]] = []
        self.without = 0

    def add_many(
        self,
        ints: dict[str, np.ndarray],
        totals: np.ndarray,
        raw: np.ndarray,
        widths: np.ndarray,
    ) -> None:
        """Answers in arrival order: ``ints`` slot, label set id, choice and true label
        (positions in its labels; true -1: no option holds y) per answer, and their raw
        probabilities flat (``widths`` each). Matched ``CHUNK`` probabilities at a time:
        a whole batch at once took 0.5 GB at 100× (the scoring's temporaries)."""
        ends = np.cumsum(widths)
        cuts = np.searchsorted(ends, np.arange(CHUNK, int(ends[-1]) if len(ends) else 0, CHUNK))
        bounds = [0, *np.unique(cuts + 1).tolist(), len(widths)]
        for lo, hi in itertools.pairwise(bounds):
            if lo >= hi:
                continue
            start, end = int(ends[lo] - widths[lo]), int(ends[hi - 1])
            for name in _INTS:
                column = np.ascontiguousarray(ints[name][lo:hi], np.int64)
                self.buffer[name].frombytes(column.tobytes())
            self.totals.frombytes(np.ascontiguousarray(totals[lo:hi], np.float64).tobytes())
            self.widths.frombytes(np.ascontiguousarray(widths[lo:hi], np.int64).tobytes())
            self.raw.frombytes(np.ascontiguousarray(raw[start:end], np.float64).tobytes())
            if len(self.raw) >= CHUNK:
                self.match()

    def match(self) -> None:
        """Move the buffer to the waiting answers; score and drop every matched pair."""
        fresh = {name: np.frombuffer(column, np.int64) for name, column in self.buffer.items()}
        width = np.frombuffer(self.widths, np.int64)
        perm, rank, set_start, _ = self.sets.tables()
        kind = fresh["set"]
        owner = np.repeat(np.arange(len(kind)), width)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(width) - width, width)
        at = (np.cumsum(width) - width)[owner] + perm[set_start[kind][owner] + j]
        totals = np.frombuffer(self.totals, np.float64)
        vectors = (np.frombuffer(self.raw, np.float64)[at] / totals[owner]).astype(np.float32)
        true = fresh["true"]
        sorted_true = np.where(true >= 0, rank[set_start[kind] + np.maximum(true, 0)], -1)
        waiting = self.waiting
        added = {
            "slot": fresh["slot"],
            "set": np.array(self.sets.sorted_of or [0], np.int64)[kind],
            "choice": rank[set_start[kind] + fresh["choice"]],
            "true": sorted_true,
            "width": width.copy(),
            "arrival": self.arrived + np.arange(len(kind)),
        }
        self.arrived += len(kind)
        rows = {name: np.concatenate([waiting[name], added[name]]) for name in waiting}
        self.vectors = np.concatenate([self.vectors, vectors])
        self.buffer = {name: array("q") for name in _INTS}
        self.totals, self.raw, self.widths = array("d"), array("d"), array("q")
        self._score(rows)

    def _score(self, rows: dict[str, np.ndarray]) -> None:
        pair_id = rows["slot"] >> 1
        order = np.argsort(pair_id, kind="stable")  # rows are in arrival order already
        ids = pair_id[order]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]) if len(ids) else order[:0]
        place = np.arange(len(ids)) - np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
        # Arrivals 1 and 2 of a pair id make a pair, then 3 and 4 (a repeat past depth 63).
        head = np.flatnonzero((place % 2 == 0) & np.r_[ids[1:] == ids[:-1], False])
        early, late = order[head], order[head + 1]
        matched = np.zeros(len(ids), bool)
        matched[early] = matched[late] = True
        scored = (rows["set"][early] == rows["set"][late]) & (rows["true"][late] >= 0)
        self.without += int(len(early) - np.count_nonzero(scored))
        early, late = early[scored], late[scored]
        by_arrival = np.argsort(rows["arrival"][late], kind="stable")
        early, late = early[by_arrival], late[by_arrival]
        late_first = (rows["slot"][late] & 1) == 0
        first = np.where(late_first, late, early)
        second = np.where(late_first, early, late)
        true = rows["true"][late]
        width = rows["width"]
        offset = np.cumsum(width) - width
        self.found.append(
            (
                pair_id[late],
                (rows["choice"][first] == true).astype(np.float64),
                (rows["choice"][second] == true).astype(np.float64),
                _averaged_right(self.vectors, offset, width, first, second, true),
            )
        )
        keep = ~matched
        spans = np.repeat(keep, width)
        self.waiting = {name: column[keep] for name, column in rows.items()}
        self.vectors = self.vectors[spans]

    def result(self) -> PairRows:
        """Every pair scored (answers still waiting for a partner are dropped)."""
        self.match()
        self.waiting, self.vectors = {}, np.empty(0, np.float32)
        pair_id, first, second, averaged = (
            np.concatenate(parts) for parts in zip(*self.found, strict=True)
        )
        self.found = []
        return PairRows(pair_id, first, second, averaged, without_truth=self.without)


def _averaged_right(
    vectors: np.ndarray,
    offset: np.ndarray,
    width: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    true: np.ndarray,
) -> np.ndarray:
    """1/t when the averaged distribution's t-way top includes the true label, else 0."""
    if not len(first):
        return np.empty(0, np.float64)
    size = width[first]
    owner = np.repeat(np.arange(len(first)), size)
    j = np.arange(len(owner)) - np.repeat(np.cumsum(size) - size, size)
    a = vectors[offset[first][owner] + j].astype(np.float64)
    b = vectors[offset[second][owner] + j].astype(np.float64)
    averaged = (a + b) / 2
    starts = np.cumsum(size) - size
    # float32 noise is ~1e-7; inputs with 2 decimals differ by at least ~0.002 when they do.
    top = np.maximum.reduceat(averaged, starts) - 1e-6
    picks = averaged >= np.repeat(top, size)
    count = np.add.reduceat(picks.astype(np.int64), starts)
    return np.where(picks[starts + true], 1.0 / count, 0.0)
