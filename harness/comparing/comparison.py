"""A comparison: every model × suite, each an ordinary run folder, in one comparison folder.

``create_comparison`` checks every model and suite and writes ``compare.json`` before any
request; ``run_comparison`` runs (or continues) the cells one after another under one
progress bar and one ``Interrupts`` (docs/comparing.md, "The comparison folder", says why);
``describe_comparison`` is ``compare --dry-run``, which sends nothing.
Nothing here reads results: ``analysis`` summarises the cells' run folders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import anyio

from harness.backends import ModelSpec, make_backend, parse_model
from harness.calling import Limits
from harness.comparing.options import CompareOptions, with_orders
from harness.errors import ConfigError, RunFolderError
from harness.progress import CellProgress, Progress, TqdmProgress
from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite
from harness.running.check import preflight
from harness.running.dryrun import count, describe, dry_run_price
from harness.running.interrupts import Interrupts, watching
from harness.running.naming import cell_folder_name
from harness.running.refusals import probe_cache
from harness.running.session import RunResult, in_own_loop, resume_async, run_async
from runfolder import (
    MANIFEST,
    RUNS_ROOT,
    ComparisonCell,
    ComparisonRecord,
    job_status,
    load_comparison,
    new_run_id,
    read_totals,
    unique_folder,
    write_comparison,
)


@dataclass(frozen=True)
class ComparisonResult:
    """How a comparison run (or resume) ended."""

    folder: Path
    cells: tuple[RunResult | None, ...]  # how this invocation left each (None: done, untouched)
    stopped: str | None = None  # why it stopped before every cell ran to its end
    fatal: str | None = None  # an error every request of a cell would meet
    interrupted: int | None = None  # the signal that stopped it (SIGINT, SIGTERM), if one did

    @property
    def drained(self) -> int:
        """Attempts in flight at the signal that finished and were recorded."""
        return sum(run.drained for run in self.cells if run is not None)

    @property
    def abandoned(self) -> int:
        """Attempts still in flight when the drain ran out (never recorded)."""
        return sum(run.abandoned for run in self.cells if run is not None)

    @property
    def complete(self) -> bool:
        """Every cell ran every job (some jobs may have failed: see ``finished``)."""
        return self.stopped is None and self.fatal is None

    @property
    def finished(self) -> bool:
        """Every job of every cell is done."""
        return self.complete and all(run is None or run.complete for run in self.cells)


@dataclass(frozen=True)
class Cell:
    """One model × suite of a comparison: its record, suite, model spec, folder and run id."""

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


def _cells(folder: Path, record: ComparisonRecord, options: CompareOptions) -> list[Cell]:
    """Rebuild every cell (suite, model spec, folder) the record names."""
    suites = {s: load_suite(s, params=record["suite_params"].get(s, {})) for s in record["suites"]}
    specs = {m: parse_model(m, options.base(m)) for m in record["models"]}
    return [
        Cell(
            c,
            suites[c["suite"]],
            specs[c["model"]],
            folder / c["folder"],
            f"{record['comparison_id']}/{c['folder']}",
        )
        for c in record["cells"]
    ]


def _split_params(params: Mapping[str, str], suites: list[str]) -> dict[str, dict[str, str]]:
    """``SUITE.KEY=VALUE`` applies to one suite, ``KEY=VALUE`` to every suite listed."""
    found: dict[str, dict[str, str]] = {s: {} for s in suites}
    for key, value in params.items():
        suite, dot, name = key.rpartition(".")
        targets = [suite] if dot else suites
        if dot and suite not in found:
            raise ConfigError(f"--param {key}={value}: {suite!r} is not one of --suites")
        for target in targets:
            found[target][name] = value
    return {s: p for s, p in found.items() if p}


async def _check_models(specs: list[ModelSpec], modes: list[str]) -> None:
    """Build (and close) each model's backend, open its cache: a bad knob, key or cache fails here."""
    for spec, mode in zip(specs, modes, strict=True):
        probe_cache(backend := make_backend(spec), mode)  # its pool is made on first use
        await backend.aclose()


def create_comparison(
    models: list[str],
    suites: list[str],
    *,
    folder: Path | None = None,
    params: Mapping[str, str] | None = None,
    options: CompareOptions | None = None,
    cache: str | None = None,
) -> Path:
    """Check the models (the first the baseline) and suites, then write the folder's
    ``compare.json``; every problem is a ``ConfigError`` before the folder exists. Unless
    ``options.skip_check``, a served model needs each suite to pass the oracle check first.
    ``cache``: the request cache's mode where a profile sets none (``default_cache``)."""
    options = options or CompareOptions()
    if len(models) < 2:
        raise ConfigError(f"--models needs two or more models to compare; got {models}")
    for what, names in (("model", models), ("suite", suites)):
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ConfigError(f"{what} {twice[0]!r} is listed twice; list each once")
    if not suites:
        raise ConfigError("--suites needs at least one suite, e.g. --suites affine,exploratory")
    per_suite = _split_params(params or {}, suites)
    built = {s: load_suite(s, params=per_suite.get(s, {})) for s in suites}
    if options.sequential is not None:
        options = replace(options, sequential=with_orders(options.sequential, built))
    specs = [parse_model(m, options.base(m)) for m in models]
    anyio.run(_check_models, specs, [options.settings(m, None, cache).cache for m in models])
    if not options.skip_check and any(s.name not in ("sim", "oracle") for s in specs):
        for suite in built.values():
            preflight(suite)
    stamp = datetime.now(UTC)
    if folder is None:
        folder = unique_folder(RUNS_ROOT, "compare-" + stamp.strftime("%Y%m%d-%H%M%S"))
    elif folder.exists() and not folder.is_dir():
        raise RunFolderError(f"--out {folder} is a file, not a folder; choose another --out folder")
    elif folder.exists() and any(folder.iterdir()):
        if (folder / "compare.json").exists():
            raise RunFolderError(
                f"{folder} already holds a comparison; continue it with: numericjev resume {folder}"
            )
        raise RunFolderError(f"{folder} exists and is not empty; choose another --out folder")
    cells: list[ComparisonCell] = [
        {"suite": s, "model": m, "folder": cell_folder_name(s, i, spec)}
        for s in suites
        for i, (m, spec) in enumerate(zip(models, specs, strict=True), start=1)
    ]
    record: ComparisonRecord = {
        "format_version": 1,
        "comparison_id": new_run_id(folder.name),  # its cells' run ids begin with it
        "created_utc": stamp.isoformat(timespec="seconds"),
        "models": list(models),
        "suites": list(suites),
        "suite_params": per_suite,
        "cells": cells,
        "options": options.to_record(),
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_comparison(folder, record)
    return folder


async def run_comparison_async(
    folder: Path,
    *,
    max_requests: int | None = None,
    max_cost_usd: float | None = None,
    concurrency: int | None = None,
    rps: float | None = None,
    progress: bool = False,
    on_warning: Callable[[str], None] | None = None,
    interrupts: Interrupts | None = None,
    families: Mapping[str, frozenset[int]] | None = None,
    cache: str | None = None,
    default_cache: str | None = None,
) -> ComparisonResult:
    """Run (or continue) every cell of the comparison in ``folder``, in order; a cell
    stopped by a cap (``max_requests`` over this invocation, ``max_cost_usd`` over the
    comparison) or a fatal error stops it. ``concurrency``, ``rps`` and ``cache`` replace the
    recorded ones (a profile's too); ``default_cache`` is the mode where neither says.
    ``families``: per suite, ask only these families' jobs (a sequential look)."""
    record = load_comparison(folder)
    try:
        options = CompareOptions.from_record(record["options"])
    except (TypeError, ConfigError) as exc:
        where = f"{folder}/compare.json"
        raise RunFolderError(f"{where}: field 'options' is not usable: {exc}") from exc
    cells = _cells(folder, record, options)
    wanted = [wanted_jobs(c, families) for c in cells]
    jobs = [
        len(c.suite.jobs()) if w is None else len(w) for c, w in zip(cells, wanted, strict=True)
    ]
    done = [done_jobs(c, w) for c, w in zip(cells, wanted, strict=True)]
    pace = Pace(
        concurrency, rps, on_warning or (lambda message: None), interrupts, cache, default_cache
    )
    bar = (
        TqdmProgress(sum(jobs), sum(done), "compare")
        if progress and sum(done) < sum(jobs)
        else None
    )
    results: list[RunResult | None] = []
    sent = 0
    stopped = fatal = None
    try:
        async with watching(interrupts):
            for i, cell in enumerate(cells):
                name = cell.record["folder"]
                if done[i] == jobs[i]:
                    results.append(None)
                    continue
                remaining = None if max_requests is None else max_requests - sent
                if remaining is not None and remaining <= 0:
                    stopped = f"the request cap ({max_requests:,}) was reached before cell {name}"
                    break
                if interrupts is not None and interrupts.signum is not None:
                    stopped = f"interrupted by {interrupts.name} before cell {name}"
                    break
                cap = None
                if max_cost_usd is not None:  # less every other cell's recorded cost
                    totals = [read_totals(c.folder) for c in cells if c is not cell]
                    cap = max(max_cost_usd - sum(t["cost_usd"] for t in totals if t), 0.0)
                display: Progress | bool = False
                if bar is not None:
                    label = (
                        f"compare {i + 1}/{len(cells)} · {cell.suite.name} · {cell.record['model']}"
                    )
                    display = CellProgress(bar, sum(done) - done[i], label)
                only = None if families is None else families.get(cell.suite.name, frozenset())
                result = await run_cell(cell, options, remaining, cap, display, pace, only)
                results.append(result)
                done[i] = done_jobs(cell, wanted[i]) if families else result.counters.jobs_done
                sent += result.sent
                if result.stopped or result.fatal:
                    stopped = f"cell {name}: {result.stopped or result.fatal}"
                    fatal = result.fatal
                    break
    finally:
        if bar is not None:
            bar.close()
    signum = None if interrupts is None else interrupts.signum
    return ComparisonResult(folder, tuple(results), stopped, fatal, signum)


run_comparison = in_own_loop(run_comparison_async)


def describe_comparison(
    models: list[str],
    suites: list[str],
    params: Mapping[str, str],
    options: CompareOptions,
) -> list[str]:
    """The dry run's lines for every model x suite cell (``running.dryrun``), then totals."""
    if not suites:
        raise ConfigError("--suites needs at least one suite, e.g. --suites affine,exploratory")
    specs = [parse_model(m, options.base(m)) for m in models]  # a bad knob is refused here
    per_suite = _split_params(params, suites)
    lines = [f"dry run: nothing sent. {len(models)} models x {len(suites)} suites"]
    calls = 0
    cost: float | None = 0.0
    for name in suites:
        suite = load_suite(name, params=per_suite.get(name, {}))
        for model, spec in zip(models, specs, strict=True):
            price, counts = dry_run_price(spec), count(suite, spec)
            lines.append(f"cell {name} x {model}:")
            lines += [f"  {line}" for line in describe(suite, spec, price, counts)[1:]]
            calls += counts.http_calls
            cost = None if cost is None or price is None else cost + counts.cost(price)
    total = "unknown (a cell has no price)" if cost is None else f"USD {cost:.4f}"
    lines.append(f"all cells: {calls:,} HTTP calls on the exact path; cost {total}")
    return lines
