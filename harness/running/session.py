"""Running a suite, and resuming a run, from code: sync and async entry points.

``start_run`` / ``start_run_async`` create a run folder and run every job of a suite against
a model; ``resume_run`` / ``resume_run_async`` continue a run folder where it stopped,
rebuilding its model and limits from its manifest, sending only what was never answered.
The async forms run inside a caller's event loop (a notebook, a service); the sync forms
are the same functions in their own event loop (``in_own_loop``).

Each session holds the folder's lock, records itself in ``sessions.jsonl`` (with the seal of
the manifest it runs under), and wires one ``Caller`` (retries, validation, timing),
``Pacer``, ``Budget`` and ``Recorder`` around the scheduler. With ``interrupts`` (the
command line), SIGINT and SIGTERM stop the session after draining what is in flight
(``harness.running.interrupts``). Nothing here prints: the command line words a ``RunResult``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, replace
from functools import partial, wraps
from pathlib import Path
from typing import ParamSpec, TypeVar, Unpack

import anyio

from harness.backends import Backend, ModelSpec, make_backend
from harness.backends.oracle import Oracle
from harness.cache import open_cache
from harness.calling import Budget, Caller, Limits, Pacer, RetrySettings
from harness.errors import RunFolderError, first_error
from harness.progress import Counters, NoProgress, Progress, TqdmProgress
from harness.protocol.cases import Suite
from harness.running.check import oracle_for
from harness.running.folder import (
    LimitChanges,
    Opened,
    RunPlan,
    create_run_folder,
    limits_of,
    model_spec_of,
    open_for_resume,
    record_session,
    recorded_cache,
    server_change,
)
from harness.running.interrupts import Interrupts, watching
from harness.running.jobs import Job
from harness.running.naming import default_run_folder, folder_model_name
from harness.running.recorder import ORACLE_MODELS, SIMULATOR_MODELS, Recorder
from harness.running.refusals import check_before_writing
from harness.running.replay import LogState, job_queue, read_logs
from harness.running.scheduler import Scheduler
from harness.running.settings import RunSettings
from harness.running.sharding import shard_count, shard_from_manifest
from runfolder import Manifest, RunLock


@dataclass(frozen=True)
class RunResult:
    """How a run or resume ended: the folder, the totals, and why it stopped early if it did."""

    folder: Path
    counters: Counters  # the run's totals, earlier sessions included
    simulated: bool  # answered by the built-in simulator (or a server naming itself sim)
    stopped: str | None = None  # why it stopped before every job ran (a cap, a fatal error)
    fatal: str | None = None  # an error every request would meet (a refused key, a wrong URL)
    warnings: tuple[str, ...] = ()  # what resume let through or repaired (also sent on_warning)
    oracle: bool = False  # answered with exact labels (the oracle): a check, not a model
    sent: int = 0  # requests answered in this invocation (the request cap counts these)
    attempts: int = 0  # requests (attempts) this invocation sent, answered or not
    interrupted: int | None = None  # the signal that stopped it (SIGINT, SIGTERM), if one did
    drained: int = 0  # attempts in flight at the signal that finished and were recorded
    abandoned: int = 0  # attempts still in flight when the drain ran out (never recorded)

    @property
    def pending(self) -> int:
        """Jobs neither done nor failed."""
        c = self.counters
        return max(c.jobs_total - c.jobs_done - c.jobs_failed, 0)

    @property
    def complete(self) -> bool:
        """True when every job of the suite is done."""
        return self.counters.jobs_done == self.counters.jobs_total


Warn = Callable[[str], None]
Started = Callable[[Path], None]
Queue = tuple[Iterator[Job], int]  # jobs to run, and how many
# A progress display, or True for a tqdm bar of this run (False: none).
Display = bool | Progress
P = ParamSpec("P")
T = TypeVar("T")


def _ignore(message: str) -> None:
    """Discard a warning (the default: the result carries them too)."""


def _ignore_folder(folder: Path) -> None:
    """Nothing to announce (the default)."""


def _plan(
    suite: Suite,
    model: ModelSpec | Backend,
    limits: Limits,
    retry: RetrySettings | None,
    settings: RunSettings | None = None,
) -> RunPlan:
    """The backend and policies a run uses; a bad model is refused before any folder exists."""
    if isinstance(model, ModelSpec):
        # The connection pool follows the run's concurrency (Limits: it lives there only);
        # the oracle also knows the targets no state reveals (historical recall).
        targets = oracle_for(suite).known if model.name == "oracle" else None
        backend = make_backend(model, targets, concurrency=limits.concurrency)
        price = model.price_per_million
        retry = retry or RetrySettings(max_attempts=model.max_attempts)
    else:
        backend, price = model, None
    if price is None:
        price = backend.price_per_million
    return RunPlan(
        suite, backend, limits, price, retry or RetrySettings(), settings=settings or RunSettings()
    )


async def start_run_async(
    suite: Suite,
    model: ModelSpec | Backend | None = None,
    limits: Limits | None = None,
    *,
    folder: Path | None = None,
    retry: RetrySettings | None = None,
    progress: Display = False,
    on_start: Started = _ignore_folder,
    run_id: str | None = None,
    interrupts: Interrupts | None = None,
    settings: RunSettings | None = None,
    families: frozenset[int] | None = None,
) -> RunResult:
    """Create a run folder for ``suite`` and run every job against ``model``.

    ``model`` is a ``ModelSpec`` (default: the built-in sim) or a ``Backend`` of your own
    (the session closes it when it ends);
    ``folder`` defaults to ``runs/<suite>-<model>-<UTC time>`` (made unique); ``retry``
    replaces the retry policy (default: ``RetrySettings`` with the spec's ``max_attempts``),
    and resume keeps it. ``on_start`` is told the folder once its manifest is written,
    before the first request; ``run_id`` replaces the folder's name as the run's id.
    Raises ``ConfigError`` or ``RunFolderError`` before anything is written when the model
    or the folder is unusable. ``interrupts``: SIGINT and SIGTERM stop the run after
    draining the requests in flight for up to ``interrupts.drain_s`` seconds (main thread
    only; ``harness.running.interrupts``). ``settings``: the request cache's mode and the
    logs' form (default: ``RunSettings()``). ``families``: ask only these families' jobs.
    """
    limits = limits or Limits()
    model = model or ModelSpec()
    plan = _plan(suite, model, limits, retry, settings)
    name = folder_model_name(model) if isinstance(model, ModelSpec) else plan.backend.name
    async with _closing(plan.backend):
        check_before_writing(plan)  # before any folder exists
        folder, lock, manifest = new_run_folder(folder, plan, name, run_id)
        try:
            on_start(folder)
            record_session(folder, "run", manifest.to_dict(), plan, [])
            queue = job_queue(suite, LogState(), plan.backend.name, plan.shard, families)
            return await _execute(
                folder, manifest.run_id, plan, LogState(), queue, progress, interrupts
            )
        finally:
            lock.release()


def new_run_folder(
    folder: Path | None, plan: RunPlan, name: str, run_id: str | None
) -> tuple[Path, RunLock, Manifest]:
    """Create ``folder`` (None: ``runs/<suite>-<name>-<UTC time>``, made unique) with the
    plan's manifest, locked: the caller releases the lock. A folder reserved here and left
    empty by a refusal is removed."""
    reserved = folder is None
    folder = folder or default_run_folder(plan.suite.name, name)
    lock = RunLock(folder)
    try:
        return folder, lock, create_run_folder(folder, plan, lock, run_id)
    except BaseException:
        if reserved:  # the empty folder reserved for this run: nothing was written
            with suppress(OSError):
                folder.rmdir()
        raise


async def resume_run_async(
    folder: Path,
    *,
    base_url: str | None = None,
    price_per_million: float | None = None,
    allow_mismatch: bool = False,
    progress: Display = False,
    on_warning: Warn = _ignore,
    interrupts: Interrupts | None = None,
    families: frozenset[int] | None = None,
    cache: str | None = None,
    **limits: Unpack[LimitChanges],
) -> RunResult:
    """Continue the run in ``folder``: replay what was answered, send what was not.

    ``limits`` (``concurrency``, ``rps``, ``max_requests``, ``max_cost_usd``,
    ``max_wait_s``) replace the run's own for this session (``LimitChanges``);
    ``price_per_million`` replaces the run's price (each request line records its own
    cost). Refuses (``ManifestMismatch``, one line naming each difference) a manifest
    edited since its last session, a server (``base_url``) other than the run's, or cases
    or code that changed since the run started, unless ``allow_mismatch``: then each
    difference goes to ``on_warning`` and into ``sessions.jsonl`` before anything is sent,
    as does each torn log tail cut. ``interrupts`` and ``families``: as ``start_run_async``;
    ``cache``: the request cache's mode (default: ``RunSettings``'s; the logs keep their form).
    """
    warn = Warnings(on_warning)
    opened, plan = resume_plan(folder, base_url, price_per_million, allow_mismatch, limits, cache)
    manifest, suite = opened.manifest, opened.suite
    async with _closing(plan.backend):
        problems = resume_problems(opened, plan, allow_mismatch, warn)
        with RunLock(folder):
            state = read_logs(folder, suite.decoders, manifest.run_id)
            # Replays what was answered: a job this code would ask differently is refused now.
            queue = job_queue(suite, state, plan.backend.name, plan.shard, families)
            for repair in state.repairs():
                warn(repair)
            # Recorded once the logs have been read: a resume refused above leaves no trace.
            record_session(folder, "resume", opened.raw, plan, problems)
            result = await _execute(
                folder, manifest.run_id, plan, state, queue, progress, interrupts
            )
    return replace(result, warnings=tuple(warn))


class Warnings(list[str]):
    """A resume's warnings: kept for its result, and each passed on as it comes."""

    def __init__(self, on_warning: Warn) -> None:
        super().__init__()
        self._on_warning = on_warning

    def __call__(self, message: str) -> None:
        self.append(message)
        self._on_warning(message)


def resume_plan(
    folder: Path,
    base_url: str | None,
    price_per_million: float | None,
    allow_mismatch: bool,
    limits: LimitChanges,
    cache: str | None = None,
) -> tuple[Opened, RunPlan]:
    """The checked folder and the plan a resume of it runs (``resume_run_async``'s
    arguments); refuses the parent of shards. The plan's backend is the caller's to close."""
    opened = open_for_resume(folder, allow_mismatch)
    manifest = opened.manifest
    if shard_count(manifest) is not None:
        raise RunFolderError(
            f"{folder} is the parent of {shard_count(manifest)} shards: resume them with "
            f"numericjev resume {folder} (all, here) or numericjev resume {folder}/shards/K"
        )
    spec, retry = model_spec_of(manifest, base_url=base_url, where=f"{folder}/manifest.json")
    if price_per_million is not None:
        spec = replace(spec, price_per_million=price_per_million)
    cache = cache or recorded_cache(manifest.extra)  # the run's own choice, unless told
    settings = RunSettings() if cache is None else RunSettings(cache=cache)
    plan = _plan(opened.suite, spec, limits_of(manifest, **limits), retry, settings)
    return opened, replace(plan, shard=shard_from_manifest(manifest))


def resume_problems(opened: Opened, plan: RunPlan, allow_mismatch: bool, warn: Warn) -> list[str]:
    """What ``--allow-mismatch`` lets through (each sent to ``warn``), the server included;
    refuses a price the plan lacks, or a request cache that cannot be opened."""
    check_before_writing(plan)
    problems = list(opened.problems)
    change = server_change(opened.manifest, plan, allow_mismatch)
    problems += [change] if change else []
    for problem in problems:
        warn(f"{problem} (continuing: --allow-mismatch)")
    return problems


def in_own_loop(function: Callable[P, Awaitable[T]]) -> Callable[P, T]:
    """The blocking form of an async entry point: ``function`` run in its own event loop
    (``start_run`` is ``start_run_async`` so; the one kind of place ``anyio.run`` is called).
    """

    @wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return anyio.run(partial(function, *args, **kwargs))

    blocking.__name__ = function.__name__.removesuffix("_async")
    blocking.__qualname__ = function.__qualname__.removesuffix("_async")
    blocking.__doc__ = f"``{function.__name__}`` in its own event loop."
    return blocking


start_run = in_own_loop(start_run_async)
resume_run = in_own_loop(resume_run_async)


@asynccontextmanager
async def _closing(backend: Backend) -> AsyncIterator[None]:
    """Close ``backend``'s connections however the session ends, cancellation included."""
    try:
        yield
    finally:
        with anyio.CancelScope(shield=True):
            await backend.aclose()


async def _execute(
    folder: Path,
    run_id: str,
    plan: RunPlan,
    state: LogState,
    queue: Queue,
    progress: Display,
    interrupts: Interrupts | None,
) -> RunResult:
    """Run the ``queue`` of unfinished jobs; the caller holds the lock."""
    suite, backend, limits = plan.suite, plan.backend, plan.limits
    jobs, pending = queue
    counters = state.counters
    counters.jobs_total = plan.jobs_total()
    counters.jobs_done = len(state.finished)
    oracle = isinstance(backend, Oracle)
    before = counters.requests
    # Before any file is opened: a refused cache file (another schema) leaves nothing open.
    cache = open_cache(backend.describe(), run_id, plan.settings.cache)
    display: Progress = NoProgress()
    if not isinstance(progress, bool):
        display = progress
    elif progress and pending:
        mark = " (oracle: exact labels)" if oracle else " (simulated)" if backend.simulated else ""
        if plan.shard:
            mark += f" · shard {plan.shard.index}/{plan.shard.count}"
        display = TqdmProgress(
            counters.jobs_total, counters.jobs_done, suite.name + " · " + backend.name + mark
        )
    recorder = Recorder(
        folder,
        run_id,
        counters,
        display,
        simulated=backend.simulated,
        oracle=oracle,
        requests_end=state.requests_end,
        outputs_end=state.outputs_end,
        next_seq=state.next_seq,
    )
    budget = Budget(limits, counters, plan.price_per_million)
    caller = Caller(
        backend,
        plan.pacer or Pacer(limits.concurrency, rps=limits.rps, max_wait_s=limits.max_wait_s),
        plan.retry,
        price_per_million=plan.price_per_million,
        budget=budget,
        probe=True,
        cache=cache,
    )
    # One worker per allowed request in flight.
    scheduler = Scheduler(caller, budget, recorder, workers=limits.concurrency)
    interrupt = interrupts or Interrupts()  # none given: signals are left alone
    hard = anyio.CancelScope()  # cut off what is still in flight (interrupts, a failed write)

    def write_failed() -> None:
        # Answers in flight could not be recorded either: nothing more is sent or awaited.
        scheduler.stop("a record could not be written")
        hard.cancel()

    recorder.on_failure = write_failed
    try:
        with first_error():
            async with watching(interrupts):
                with hard, interrupt.attach(scheduler, hard):
                    await scheduler.run(jobs)
    finally:
        # Also on Ctrl-C and cancellation: ``numericjev list`` reads these, not the log. They
        # are a summary of the log, never the record: a disk that refuses them loses nothing.
        with suppress(OSError):
            recorder.save_totals()
        recorder.close()
        display.close()
        if cache is not None:
            cache.close()  # first: its last commit is counted in the summary's CPU
            print(cache.summary(), file=sys.stderr)
    if recorder.failure is not None:  # reported by a flush between tasks, or by the last one
        raise recorder.failure
    served = set(counters.models)
    simulated = backend.simulated or bool(served & SIMULATOR_MODELS)
    oracle = oracle or bool(served & ORACLE_MODELS)
    return RunResult(
        folder,
        counters,
        simulated,
        scheduler.stopped,
        scheduler.fatal,
        oracle=oracle,
        sent=counters.requests - before,
        attempts=caller.sent,
        interrupted=interrupt.signum,
        drained=max(interrupt.in_flight - caller.abandoned, 0),
        abandoned=caller.abandoned,
    )
