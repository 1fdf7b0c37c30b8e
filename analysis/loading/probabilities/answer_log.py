"""What the Probabilities join keeps: the units, the question rows and the order pairs.

Per answered question with probabilities the log keeps four small ints (unit, depth,
first-in-request flag, outcome id: 8 bytes on the simulator, 13.7 million questions at 1000×); what a table reads per question (selected
and true probability, whether the pick holds y, entropy, options) is a column over the
distinct outcomes (``outcome_table``), read through the outcome ids (``AnswerLog.per_question``)
so that no float column over every question is ever built. On the simulator the outcomes
are a few thousand; on a real model nearly every answer is its own outcome, and the
outcome columns (27 bytes each) then grow with the questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .chain_units import ChainLog, empty_chain_log

__all__ = ["BLOCK", "AnswerCounts", "AnswerLog", "gathered"]

BLOCK = 1 << 20  # rows gathered at once: an index into a column is cast to int64 first


def gathered(column: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``column[index]``, a block of ``index`` at a time: NumPy casts a narrow index to a
    whole int64 copy first (110 MB for the 13.7 million questions of a 1000× run)."""
    if len(index) <= BLOCK:
        return column[index]
    found = np.empty(len(index), column.dtype)
    for at in range(0, len(index), BLOCK):
        found[at : at + BLOCK] = column[index[at : at + BLOCK]]
    return found


@dataclass(frozen=True)
class AnswerCounts:
    """What the join found among the answers to the units' questions."""

    requests_present: bool
    answered: int  # answers to a unit's question, first per (unit, step)
    with_probabilities: int  # of those: probabilities read and renormalised
    without_probabilities: int  # no ``probabilities`` object
    unusable: int  # probabilities summing to 0, or a label count that does not fit the step
    choice_mismatch: int  # selected label differs from the trace: not used
    duplicates: int  # a second answer to the same (unit, step): not used
    off_by_more_than_001: int  # raw sums outside [0.99, 1.01] (before renormalising)
    pairs_without_truth: int  # questions both orders shared after both left y's interval
    raw_sum_min: float
    raw_sum_max: float


@dataclass(frozen=True, eq=False)
class AnswerLog:
    """Interval-path units and, per answered question with probabilities, one row.

    ``units`` holds the unit columns of ``interval_paths.PathTable`` (codes into
    ``names``); the steps themselves are dropped once joined. ``pair_first``,
    ``pair_second`` and ``pair_depth`` list every question both option orders shared.
    Question columns (``q_*``): unit, depth, whether it is the first of identical questions
    in its request (pooled rows), and its outcome. Outcome columns (``o_*``): options,
    renormalised probability of the selected option and of the option holding y (NaN when
    none does), whether the selected interval holds y (1, 0; -1 when no option does), the
    entropy in bits (the raw sums are only tallied, in ``counts``).
    Pair columns (``pair_id``, ``pair_*_right`` and ``pair_averaged_ties``): the shared
    questions that both orders answered with probabilities while an option still held y:
    whether each order's selected label is the true one (1, 0), and whether the averaged
    distribution's argmax is: t for a t-way tie that includes it, else 0 (it counts 1/t,
    ``pair_averaged_right``). Kept as small ints: 6 million pairs at 1000×.
    """

    units: dict[str, np.ndarray]
    names: dict[str, Sequence[str]]  # tuples (the job names may be CompactNames)
    pair_first: np.ndarray
    pair_second: np.ndarray
    pair_depth: np.ndarray
    outputs_read: int  # distinct ok outputs
    not_intervals: tuple[tuple[str, int], ...]  # (decoder, ok outputs) not interval choices
    q_unit: np.ndarray
    q_depth: np.ndarray
    q_first: np.ndarray  # the first of identical questions in its request (pooled rows)
    q_outcome: np.ndarray  # an index into the o_* columns
    o_options: np.ndarray
    o_selected: np.ndarray
    o_true: np.ndarray
    o_holds: np.ndarray
    o_entropy: np.ndarray
    # The renormalised probabilities in interval order (``option_order``), flat; each
    # outcome's start there, the selected option's index (-1: labels not 0 .. k−1) and
    # the true option's (-1: none holds y, or labels not 0 .. k−1).
    o_p: np.ndarray
    o_p_start: np.ndarray
    o_chosen: np.ndarray
    o_truth: np.ndarray
    pair_id: np.ndarray
    pair_first_right: np.ndarray
    pair_second_right: np.ndarray
    pair_averaged_ties: np.ndarray
    counts: AnswerCounts
    # Digits, bits and threshold outputs and their answers (``chain_units``).
    chains: ChainLog = field(default_factory=empty_chain_log)

    def __len__(self) -> int:
        return len(self.units["job"])

    @property
    def has_probabilities(self) -> bool:
        """True when at least one interval question came back with probabilities."""
        return len(self.q_unit) > 0

    def per_question(self, name: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Outcome column ``name`` (options, selected, true, holds, entropy) at question
        ``rows`` (all questions when None: a full column, for small logs and tests)."""
        column: np.ndarray = getattr(self, f"o_{name}")
        return gathered(column, self.q_outcome if rows is None else self.q_outcome[rows])

    def pair_averaged_at(self, rows: np.ndarray | None = None) -> np.ndarray:
        """Whether the averaged distribution's pick is right at pair ``rows`` (all: None):
        1/t for a t-way tie that includes the true label, else 0."""
        ties = self.pair_averaged_ties if rows is None else self.pair_averaged_ties[rows]
        found = np.zeros(len(ties))
        np.divide(1.0, ties, out=found, where=ties > 0)
        return found

    @property
    def pair_averaged_right(self) -> np.ndarray:
        """Every pair's ``pair_averaged_at``."""
        return self.pair_averaged_at()

    @property
    def q_selected(self) -> np.ndarray:
        """Every question's selected probability (a full column: ``per_question`` reads rows)."""
        return self.per_question("selected")

    @property
    def q_true(self) -> np.ndarray:
        """Every question's probability of the option holding y (NaN: none)."""
        return self.per_question("true")

    @property
    def q_holds(self) -> np.ndarray:
        """Every question's 1 (the pick holds y), 0, or -1 (no option does)."""
        return self.per_question("holds")

    @property
    def q_entropy(self) -> np.ndarray:
        """Every question's entropy in bits."""
        return self.per_question("entropy")

    def keys(self) -> list[tuple[str, str]]:
        """(job, decoder) of every unit, in unit order."""
        jobs, decoders = self.names["job"], self.names["decoder"]
        return [
            (jobs[j], decoders[d])
            for j, d in zip(self.units["job"].tolist(), self.units["decoder"].tolist(), strict=True)
        ]
