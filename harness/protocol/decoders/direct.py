"""Direct choice: one question listing every grid value."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from harness.protocol.decoders.base import Answer, Decoded, Question
from harness.protocol.grid import Grid, check_options, fmt
from harness.protocol.prompts import DIRECT


@cache
def value_criteria(grid: Grid) -> tuple[tuple[str, str], ...]:
    """Label ``i`` -> the grid value ``L + i*eps`` (built once per grid)."""
    return tuple((str(i), fmt(grid.bound(i))) for i in range(grid.n))


@cache
def direct_question(grid: Grid, subject: str) -> Question:
    """The one direct-choice question of a grid (the same for every job on it)."""
    return Question("1", f"{subject} {DIRECT}", value_criteria(grid))


@dataclass
class DirectDecoder:
    """Select the value among all N grid values in one round."""

    grid: Grid
    subject: str
    name: str = "direct"
    _choice: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        check_options(self.grid.n, "direct choice over the whole grid")

    def ready(self) -> list[Question]:
        """The single question, until answered."""
        if self._choice is not None:
            return []
        return [direct_question(self.grid, self.subject)]

    def give(self, key: str, answer: Answer) -> None:
        """Take the selected grid index."""
        self._choice = answer.choice

    @property
    def done(self) -> bool:
        """Finished after one answer."""
        return self._choice is not None

    def depths(self) -> tuple[int, int]:
        """Always one round."""
        return 1, 1

    def result(self) -> Decoded:
        """The chosen grid value."""
        assert self._choice is not None
        i = int(self._choice)
        cell = (self.grid.bound(i), self.grid.bound(i + 1))
        trace = ({"round": 1, "choice": self._choice, "value": self.grid.bound_text(i)},)
        return Decoded(cell[0], cell, 1, trace, grid_index=i)
