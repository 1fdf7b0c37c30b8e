"""One cell of a comparison: how it is started or resumed, and how much of it is done
(``harness.comparing.comparison`` runs the cells; a sequential look counts only its families)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.backends import ModelSpec
from harness.calling import Limits
from harness.comparing.options import CompareOptions
from harness.progress import Progress
from harness.protocol.cases import Suite
from harness.running.interrupts import Interrupts
from harness.running.session import RunResult, resume_async, run_async
from runfolder import MANIFEST, ComparisonCell, job_status


@dataclass(frozen=True)
class Cell:
    record: ComparisonCell
    suite: Suite
    spec: ModelSpec
    folder: Path
    run_id: str


def done_jobs(cell: Cell, wanted: frozenset[str] | None = None) -> int:
    """Jobs of the cell already done (0 before it starts), of ``wanted`` only if given."""
    if not (cell.folder / MANIFEST).is_file():
        return 0
    done = job_status(cell.folder, cell.suite.decoders)[0]
    return len(done if wanted is None else wanted.intersection(done))


def wanted_jobs(cell: Cell, families: Mapping[str, frozenset[int]] | None) -> frozenset[str] | None:
    """The ids of the cell's jobs in ``families`` (of its suite); None: every job."""
    if families is None:
        return None
    keep = families.get(cell.suite.name, frozenset())
    return frozenset(j.id for j in cell.suite.jobs() if j.case.family in keep)


def ignore(message: str) -> None:
    """Discard a warning."""


@dataclass(frozen=True)
class Pace:
    """What every cell of one invocation shares: its pace, warnings and interrupts."""

    concurrency: int | None
    rps: float | None
    on_warning: Callable[[str], None]
    interrupts: Interrupts | None
    cache: str | None = None  # a resume's --cache: replaces a profile's
    default_cache: str | None = None  # where neither the resume nor a profile says


async def run_cell(
    cell: Cell,
    options: CompareOptions,
    max_requests: int | None,
    max_cost_usd: float | None,
    display: Progress | bool,
    pace: Pace,
    families: frozenset[int] | None = None,
) -> RunResult:
    """Start ``cell``'s run, or resume it: ``families`` only (None: all), at the pace and
    with the settings of this invocation, of the model's profile, then of the options."""
    model = cell.record["model"]
    # Compressed from compare.json, so that cells a resume starts are compressed alike.
    settings = options.settings(model, pace.cache, pace.default_cache)
    if (cell.folder / MANIFEST).is_file():
        return await resume_async(
            cell.folder,
            progress=display,
            on_warning=pace.on_warning,
            interrupts=pace.interrupts,
            concurrency=pace.concurrency,
            rps=pace.rps,
            max_requests=max_requests,
            max_cost_usd=max_cost_usd,
            families=families,
            cache=settings.cache,
        )
    own = options.own(model)
    concurrency = own.get("concurrency", options.concurrency)
    concurrency = concurrency if pace.concurrency is None else pace.concurrency
    rps = own.get("rps", options.rps) if pace.rps is None else pace.rps
    limits = Limits(concurrency, rps, max_requests, max_cost_usd)
    return await run_async(
        cell.suite,
        cell.spec,
        limits,
        folder=cell.folder,
        progress=display,
        run_id=cell.run_id,
        interrupts=pace.interrupts,
        settings=settings,
        families=families,
    )
