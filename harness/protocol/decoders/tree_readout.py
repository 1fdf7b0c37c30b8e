"""``tree{K}_mean`` and ``tree{K}_median``: Algorithm 1's questions, a probability read-out
(docs/protocol.md, "Mean and median").

The questions and the path are exactly the greedy tree's; only the read-out at the last level
changes. On the final question's parent cells ``i`` (option ``j`` is ``[t_j, t_{j+1})``):

    mass m_i = p_j / (t_{j+1} - t_j)   for t_j <= i < t_{j+1}
    mean     = sum_i m_i (L + i eps)                      (exact, a Fraction)
    median   = the smallest L + i eps whose cumulative mass reaches 1/2 (a grid value)

An answer without probabilities falls back to the greedy read-out, recorded as
``extra["readout"] = "greedy"`` with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from harness.protocol.decoders.base import Answer, Decoded
from harness.protocol.decoders.probabilities import (
    decimal_text,
    option_distribution,
    round_to_places,
    tidy,
)
from harness.protocol.decoders.tree import TreeDecoder
from harness.protocol.grid import fmt, partition

READOUTS = ("mean", "median")


@dataclass
class TreeReadoutDecoder(TreeDecoder):
    """The greedy tree with the mean or median of the final question's distribution."""

    readout: str = "mean"
    last: Answer | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}; got {self.readout!r}")
        self.name = self.name or f"tree{self.k}_{self.readout}"
        super().__post_init__()

    def give(self, key: str, answer: Answer) -> None:
        """Move into the chosen part, keeping the answer for the read-out."""
        super().give(key, answer)
        self.last = answer

    def cell_masses(self) -> tuple[int, list[Fraction], list[Fraction]] | None:
        """``(a, masses per cell of [a, b), masses per option)`` of the final question.

        None when no question was asked or its answer carries no probabilities.
        """
        if not self.trace or self.last is None:
            return None
        _, _, _, a, b, k = self.trace[-1]
        cuts = partition(a, b, k)
        p = option_distribution(self.last, [str(j) for j in range(len(cuts) - 1)])
        if p is None:
            return None
        cells = [
            p[j] / (cuts[j + 1] - cuts[j])
            for j in range(len(p))
            for _ in range(cuts[j], cuts[j + 1])
        ]
        return a, cells, list(p)

    def result(self) -> Decoded:
        """The mean (rounded to the grid's places) or median of the final question's cells."""
        greedy = super().result()
        found = self.cell_masses()
        if found is None:
            reason = "no question asked" if not self.trace else "no probabilities"
            return greedy._replace(extra={"readout": "greedy", "fallback": reason})
        a, cells, options = found
        g = self.grid
        extra: dict[str, Any] = {
            "readout": self.readout,
            "greedy": fmt(greedy.value),
            "masses": [tidy(p) for p in options],
        }
        if self.readout == "mean":
            lo, eps = Fraction(g.lo), Fraction(g.eps)
            mean = sum((m * (lo + eps * (a + i)) for i, m in enumerate(cells)), Fraction(0))
            value: Decimal = round_to_places(mean, g.places)
            extra["mean"] = decimal_text(mean, g.places + 6)
            index = g.index_of(Fraction(value))
        else:
            total = Fraction(0)
            index = a + len(cells) - 1
            for i, m in enumerate(cells):
                total += m
                if 2 * total >= 1:
                    index = a + i
                    break
            value = g.bound(index)
        cell = (g.bound(index), g.bound(index + 1))
        # A mean rounded to the grid's places need not be a cell's lower bound: no index.
        return greedy._replace(value=value, cell=cell, extra=extra, grid_index=None)
