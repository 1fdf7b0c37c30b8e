"""Explicit sets: the index bits asked as membership in listed sets of actual grid values.

Paper, Appendix "Exploratory Records": "Explicit-set questions list the actual grid values
assigned to each bit-defined set, avoiding a request for binary encoding itself." For the
bit of weight w of the grid index, set B lists the grid values whose index has that bit set
and set A the rest: on the integer grid 0..15 the weight-1 question offers
"x is one of 0, 2, ..., 14" against "x is one of 1, 3, ..., 15".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.protocol.decoders.base import Answer, Decoded, OneRoundBits, Question
from harness.protocol.grid import MAX_OPTIONS, Grid, GridError, fmt
from harness.protocol.prompts import SET_LABELS, SETS, set_criterion

# Each option lists half the grid; beyond this a description stops being a readable list.
MAX_VALUES = MAX_OPTIONS + 1


@dataclass
class SetsDecoder(OneRoundBits):
    """One independent two-set question per index bit, all in one round."""

    grid: Grid
    subject: str
    name: str = "sets"
    bits: dict[int, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        if self.grid.n > MAX_VALUES:
            raise GridError(
                f"explicit sets list every grid value; N={self.grid.n} is more than "
                f"{MAX_VALUES}: use a coarser grid"
            )
        count = max(1, (self.grid.n - 1).bit_length())
        self.weights = [1 << i for i in reversed(range(count))]

    def _question(self, weight: int) -> Question:
        g = self.grid
        parts = ([g.bound(i) for i in range(g.n) if (i // weight) % 2 == bit] for bit in (0, 1))
        criteria = tuple(
            (label, set_criterion(values)) for label, values in zip(SET_LABELS, parts, strict=True)
        )
        return Question(f"s{weight}", f"{self.subject} {SETS}", criteria)

    def ready(self) -> list[Question]:
        """Every unanswered set question (they are independent)."""
        return [self._question(w) for w in self.weights if w not in self.bits]

    def give(self, key: str, answer: Answer) -> None:
        """Take one set; ``key`` is ``s<weight>``, label B means the bit is set."""
        self.bits[int(key[1:])] = SET_LABELS.index(answer.choice)

    def result(self) -> Decoded:
        """``L + eps*q`` from the selected sets; codes above N-1 are kept, not clipped."""
        q = sum(self.set_weights())
        choice = "".join(SET_LABELS[self.bits[w]] for w in self.weights)
        return self.decoded(q, choice, {"index": q, "value": fmt(self.grid.bound(q))})
