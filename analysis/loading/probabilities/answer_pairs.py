"""The order pairs of the Probabilities join, matched and scored in NumPy, a batch at a time.

Each answered question at a shared step (``order_pairs.pair_steps``) arrives as its slot,
label set and outcome id, in log order, as the join's chunks of rows come (``add_many``).
The two orders' answers to one shared question (consecutive arrivals of one pair id, as a
pending-then-partner reading matches them) are matched, their renormalised probabilities
put in sorted label order as float32, averaged and scored; an answer whose partner has not
come yet waits in a table by pair id. Pure logic, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from analysis.loading.columns.compact import narrow
from analysis.loading.columns.row_chunks import joined

__all__ = ["CHUNK", "Answers", "LabelSets", "PairRows", "PairScorer"]

CHUNK = 1 << 16  # answers matched at once (the temporaries: a few MB)


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
    """The scored pairs: pair id, whether the first order's and the second order's pick is
    the true label (1, 0), and t when the averaged distribution's t-way top includes it
    (else 0: it counts 1/t)."""

    pair_id: np.ndarray
    first_right: np.ndarray
    second_right: np.ndarray
    averaged_ties: np.ndarray
    without_truth: int  # matched pairs whose options differ or whose truth is unknown


class Answers(Protocol):
    """Per-outcome columns of the answers (``outcome_table.OutcomeTable``)."""

    def take(self, name: str, ids: np.ndarray) -> np.ndarray:
        """Column ``name`` (``picked``, ``true``, ``total``) at outcome ``ids``."""
        ...

    def raw_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The raw probabilities of outcomes ``ids``, flat, and each one's width."""
        ...


class PairScorer:
    """Answers at shared steps in, scored order pairs out (``add_many``, ``result``).

    An answer waiting for its partner is held as three small ints in a table indexed by
    pair id (its outcome, label set and side: 9 bytes a pair), not as its probabilities:
    the other order's answers may come much later (at 100× up to 325,000 answers waited at
    once, whose float vectors and scoring temporaries took ~150 MB and grew with the run).
    """

    def __init__(self, sets: LabelSets, answers: Answers, pairs: int = 0) -> None:
        self.sets, self.answers = sets, answers
        self.pending_outcome = np.empty(0, np.int32)  # per pair id; -1: none waiting
        self.pending_set = np.empty(0, np.int32)
        self.pending_side = np.empty(0, np.int8)
        self.found: list[tuple[np.ndarray, ...]] = []
        self.without = 0
        # Sized once when the pair ids are known (6.5 million at 1000×): grown by doubling,
        # the old table and one twice its size were held at once.
        self._grow(pairs)

    def add_many(self, slot: np.ndarray, label_set: np.ndarray, outcome: np.ndarray) -> None:
        """Answers in arrival order: their ``slot`` (2·pair id + side), label set id and
        outcome id; matched ``CHUNK`` at a time."""
        for lo in range(0, len(slot), CHUNK):
            self._match(
                slot[lo : lo + CHUNK].astype(np.int64),
                label_set[lo : lo + CHUNK].astype(np.int32),
                outcome[lo : lo + CHUNK].astype(np.int32),
            )

    def _grow(self, size: int) -> None:
        if size > len(self.pending_outcome):
            size = max(size, 2 * len(self.pending_outcome))
            grown = np.full(size, -1, np.int32)
            grown[: len(self.pending_outcome)] = self.pending_outcome
            self.pending_outcome = grown
            self.pending_set = np.resize(self.pending_set, size)
            self.pending_side = np.resize(self.pending_side, size)

    def _match(self, slot: np.ndarray, label_set: np.ndarray, outcome: np.ndarray) -> None:
        """Arrivals 1 and 2 of a pair id make a pair, then 3 and 4 (a repeat past depth
        63); an answer left over waits in the table for the next batch."""
        if not len(slot):
            return
        pair_id = slot >> 1
        self._grow(int(pair_id.max()) + 1)
        order = np.argsort(pair_id, kind="stable")  # rows are in arrival order already
        ids = pair_id[order]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        sizes = np.diff(np.r_[starts, len(ids)])
        waiting = self.pending_outcome[ids] >= 0  # an earlier batch's answer is arrival 1
        place = np.arange(len(ids)) - np.repeat(starts, sizes) + waiting
        late = np.flatnonzero(place % 2 == 1)  # sorted positions of the second of a pair
        from_table = (place[late] == 1) & waiting[late]
        before = order[np.maximum(late - 1, 0)]
        late_rows, late_ids = order[late], ids[late]
        early_set = np.where(from_table, self.pending_set[late_ids], label_set[before])
        early_side = np.where(from_table, self.pending_side[late_ids], slot[before] & 1)
        early_outcome = np.where(from_table, self.pending_outcome[late_ids], outcome[before])
        # What waits now: the last arrival of each pair id whose arrivals are odd in number.
        ends = starts + sizes - 1
        odd = (place[ends] % 2) == 0
        self.pending_outcome[ids[ends]] = np.where(odd, outcome[order[ends]], -1)
        self.pending_set[ids[ends]] = label_set[order[ends]]
        self.pending_side[ids[ends]] = slot[order[ends]] & 1
        by_arrival = np.argsort(late_rows, kind="stable")
        self._score(
            late_ids[by_arrival],
            (label_set[late_rows], outcome[late_rows], slot[late_rows] & 1),
            (early_set, early_outcome, early_side),
            by_arrival,
        )

    def _score(
        self,
        pair_id: np.ndarray,
        late: tuple[np.ndarray, np.ndarray, np.ndarray],
        early: tuple[np.ndarray, np.ndarray, np.ndarray],
        by_arrival: np.ndarray,
    ) -> None:
        """Score the matched pairs (in the order their second answer arrived)."""
        (late_set, late_outcome, late_side), (early_set, early_outcome, _) = (
            tuple(column[by_arrival] for column in side) for side in (late, early)
        )
        _, rank, set_start, _ = self.sets.tables()
        sorted_of = np.array(self.sets.sorted_of or [0], np.int64)
        true = self.answers.take("true", late_outcome)
        scored = (sorted_of[early_set] == sorted_of[late_set]) & (true >= 0)
        self.without += int(len(scored) - np.count_nonzero(scored))
        late_first = late_side[scored] == 0
        sides = (late_set[scored], early_set[scored]), (late_outcome[scored], early_outcome[scored])
        first = [np.where(late_first, here, there) for here, there in sides]  # set, outcome
        second = [np.where(late_first, there, here) for here, there in sides]
        true = rank[set_start[late_set[scored]] + true[scored]]  # its place in sorted labels

        def right(label_set: np.ndarray, outcome: np.ndarray) -> np.ndarray:
            picked = self.answers.take("picked", outcome)
            return (rank[set_start[label_set] + picked] == true).astype(np.int8)

        # Small ints, not floats: the pairs are held until the read ends (6 million at 1000×).
        self.found.append(
            (
                narrow(pair_id[scored]),
                right(*first),
                right(*second),
                narrow(_averaged_ties(self._vectors(*first), self._vectors(*second), true)),
            )
        )

    def _vectors(self, label_set: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each answer's renormalised probabilities as float32, in sorted label order, flat;
        and each one's width."""
        perm, _, set_start, _ = self.sets.tables()
        raw, width = self.answers.raw_of(outcome)
        total = self.answers.take("total", outcome)
        owner = np.repeat(np.arange(len(outcome)), width)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(width) - width, width)
        at = (np.cumsum(width) - width)[owner] + perm[set_start[label_set][owner] + j]
        return (raw[at] / total[owner]).astype(np.float32), width

    def result(self) -> PairRows:
        """Every pair scored (answers still waiting for a partner are dropped)."""
        self.pending_outcome = np.empty(0, np.int32)
        self.pending_set = np.empty(0, np.int32)
        self.pending_side = np.empty(0, np.int8)
        parts, self.found = self.found, []
        columns = [list(column) for column in zip(*parts, strict=True)] or [[], [], [], []]
        del parts
        # One column at a time, each piece freed once copied (``row_chunks.joined``).
        pair_id, first, second, averaged = (
            joined(pieces, np.result_type(*pieces) if pieces else np.dtype(np.int8))
            for pieces in columns
        )
        return PairRows(pair_id, first, second, averaged, without_truth=self.without)


def _averaged_ties(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray], true: np.ndarray
) -> np.ndarray:
    """t when the averaged distribution's t-way top includes the true label, else 0
    (``first`` and ``second``: flat float32 vectors of equal widths, per pair)."""
    (a, size), (b, _) = first, second
    if not len(size):
        return np.empty(0, np.int64)
    averaged = (a.astype(np.float64) + b.astype(np.float64)) / 2
    starts = np.cumsum(size) - size
    # float32 noise is ~1e-7; inputs with 2 decimals differ by at least ~0.002 when they do.
    top = np.maximum.reduceat(averaged, starts) - 1e-6
    picks = averaged >= np.repeat(top, size)
    count = np.add.reduceat(picks.astype(np.int64), starts)
    return np.where(picks[starts + true], count, 0)
