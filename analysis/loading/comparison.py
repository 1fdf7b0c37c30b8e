"""A comparison folder loaded: its ``compare.json`` and the run folder of each cell."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runfolder import MANIFEST, ComparisonRecord, load_comparison, read_totals

from .run import Run, load_run

__all__ = ["Cell", "ComparisonRuns", "load_comparison_runs"]


@dataclass(frozen=True, eq=False)
class Cell:
    """One model × suite of a comparison; ``run`` is None when it has not started."""

    suite: str
    model: str  # the model spec as given (``sim:seed=7``)
    folder: Path
    run: Run | None
    requests: int = 0  # answered, as the sessions' totals.json count them (0: none yet)
    cost_usd: float = 0.0


@dataclass(frozen=True, eq=False)
class ComparisonRuns:
    """What a comparison summary reads: the record and every cell's run."""

    folder: Path
    record: ComparisonRecord
    cells: tuple[Cell, ...]

    @property
    def models(self) -> tuple[str, ...]:
        """Model specs, the baseline first."""
        return tuple(self.record["models"])

    @property
    def suites(self) -> tuple[str, ...]:
        """Suites in the order the comparison ran them."""
        return tuple(self.record["suites"])

    def summary_option(self, key: str, default: Any) -> Any:
        """A summary setting recorded by ``compare`` (``metric``, ``bootstrap``)."""
        summary = self.record["options"].get("summary")
        return summary.get(key, default) if isinstance(summary, dict) else default


def load_comparison_runs(folder: Path | str, probabilities: bool = False) -> ComparisonRuns:
    """Read ``compare.json`` and load the run folder of every cell that has started (with
    ``probabilities``, each run's answers too: ``Run.answers``)."""
    folder = Path(folder)
    record = load_comparison(folder)
    cells = []
    for cell in record["cells"]:
        path = folder / cell["folder"]
        found = (path / MANIFEST).is_file()
        run = load_run(path, probabilities=probabilities) if found else None
        totals = read_totals(path)
        requests, cost = (totals["requests"], totals["cost_usd"]) if totals else (0, 0.0)
        cells.append(Cell(cell["suite"], cell["model"], path, run, requests, cost))
    return ComparisonRuns(folder, record, tuple(cells))
