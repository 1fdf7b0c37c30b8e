"""Where a ``compare --sequential`` comparison's rule stopped asking, for ``list`` and ``status``.

Its cells are left with the families of the looks never taken pending, on purpose. Which
look stopped it is the rule's answer (analysis's): the comparison folder's ``summary.json``
records it (``sequential``: the looks taken, each cell's stop and reason), written when the
looks stop. It is believed only when it agrees with the plan in ``compare.json`` and is
not older than the cells: every cell stopped (decided or futile; "open" while the rule
still asks) before the last look, and the requests it counts are those the cells' totals
hold now. Otherwise (no summary yet, interrupted between looks, asked again since) the
comparison is simply incomplete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from runfolder.comparison import ComparisonRecord, look_sizes
from runfolder.totals import read_totals, totals_current

SUMMARY = "summary.json"  # a comparison's summary (written by analysis when its runs end)
_STOPPED = frozenset({"decided", "futile"})  # a cell's reasons once the rule stopped it


@dataclass(frozen=True)
class SequentialStop:
    """A sequential comparison the rule stopped at ``look`` of ``looks``."""

    look: int
    looks: int

    def line(self) -> str:
        """What ``list`` says of the comparison instead of INCOMPLETE."""
        return f"stopped at look {self.look} of {self.looks} (sequential)"

    def cell_line(self) -> str:
        """What it says of each cell: its pending jobs were left by the rule."""
        return f"{self.line()}: pending families left unasked by its rule"


def _summary(folder: Path) -> Mapping[str, Any] | None:
    try:
        data = orjson.loads((folder / SUMMARY).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    found = data.get("sequential") if isinstance(data, dict) else None
    return found if isinstance(found, dict) else None


def _answered(folder: Path, record: ComparisonRecord) -> int | None:
    """The requests every cell's totals count, None unless each has current totals."""
    total = 0
    for cell in record["cells"]:
        totals = read_totals(folder / cell["folder"])
        if totals is None or not totals_current(folder / cell["folder"], totals):
            return None
        total += totals["requests"]
    return total


def sequential_stop(folder: Path, record: ComparisonRecord) -> SequentialStop | None:
    """The stop of the sequential comparison in ``folder`` (``record``: its ``compare.json``);
    None when it is not sequential or its rule has not stopped it before the last look."""
    plan = record["options"].get("sequential")
    if not isinstance(plan, Mapping) or not (said := _summary(folder)):
        return None
    try:
        orders = list(plan["order"].values())
        sizes = look_sizes(len(orders[0]), int(plan["looks"]))
        look, looks = int(said["looks_taken"]), int(said["looks"])
        reasons = {str(cell["reason"]) for cell in said["cells"]}
        agrees = (
            len(orders) == 1
            and looks == len(sizes)
            and 1 <= look < looks
            and said["families_asked"] == sizes[look - 1]
            and bool(reasons)
            and reasons <= _STOPPED
            and said["requests"] == _answered(folder, record)
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None
    return SequentialStop(look, looks) if agrees else None
