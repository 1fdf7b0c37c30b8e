"""A comparison's decisions as values: a cell's verdict, the release gate (no I/O).

Each is decided once, in ``analysis.statistics`` (``comparison.compare_runs``), and kept;
rendering shows them and the command line turns the gate into its exit status.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["CellKey", "ReleaseGate", "Verdict", "verdict"]


class Verdict(StrEnum):
    """A cell's verdict at the comparison's alpha, Holm-corrected over its cells."""

    BETTER = "better"
    WORSE = "worse"
    UNCLEAR = "no clear difference"


def verdict(p_holm: float, delta: float, alpha: float, lower_is_better: bool) -> Verdict | None:
    """Better, worse or no clear difference; None when the cell has no p-value."""
    if math.isnan(p_holm):
        return None
    if p_holm >= alpha or delta == 0 or math.isnan(delta):
        return Verdict.UNCLEAR
    return Verdict.BETTER if (delta < 0) == lower_is_better else Verdict.WORSE


@dataclass(frozen=True, order=True)
class CellKey:
    """One later model against the baseline on one suite × decoder × condition."""

    suite: str
    model: str
    decoder: str
    condition: str

    def __str__(self) -> str:
        return f"{self.suite} · {self.model} · {self.decoder} · {self.condition}"


@dataclass(frozen=True)
class ReleaseGate:
    """``compare --fail-on-worse --margin M``: the cells shown worse than the baseline by
    more than ``margin`` (the test at the shifted null, Holm over the cells, at alpha)."""

    margin: float
    failed: tuple[CellKey, ...]

    @property
    def passed(self) -> bool:
        """No cell fails the gate."""
        return not self.failed

    def fails(self, cell: CellKey) -> bool:
        """Whether ``cell`` fails the gate."""
        return cell in self.failed
