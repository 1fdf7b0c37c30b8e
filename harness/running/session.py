"""Running a suite, and resuming a run, from code: one ``run`` and one ``resume``.

Where the jobs are answered is an argument, the ``placement`` (as Inspect AI's ``eval`` takes
its parallelism): here by default, else ``harness.spreading``'s. Each session holds the
folder's lock, records itself in ``sessions.jsonl`` and is wired in one place (``Wired``),
whichever process answers. Nothing here prints but the request cache's summary: the command
line words a ``RunResult``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field, replace
from functools import partial, wraps
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypedDict, TypeVar, Unpack, cast

import anyio

from harness.backends import Backend, ModelSpec, make_backend
from harness.backends.oracle import Oracle
from harness.calling import Limits, RetrySettings
from harness.errors import RunFolderError
from harness.progress import Counters, Progress
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
    run_price,
    server_change,
)
from harness.running.interrupts import Interrupts, watching
from harness.running.naming import default_run_folder, folder_model_name
from harness.running.recorder import ORACLE_MODELS, SIMULATOR_MODELS
from harness.running.refusals import check_before_writing
from harness.running.replay import JobLists, LogState, job_lists, jobs_of, read_logs
from harness.running.settings import RunSettings
from harness.running.sharding import shard_count, shard_from_manifest
from harness.running.wiring import Wired, display_for
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
    lost: tuple[str, ...] = ()  # Ray: shards lost with their node (started again or left)
    limiter: Mapping[str, Any] | None = None  # Ray: what the run-wide rate limiter saw

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
# A progress display, or True for a tqdm bar of this run (False: none).
Display = bool | Progress
P = ParamSpec("P")
T = TypeVar("T")


def _ignore(_told: object) -> None:
    """Discard a warning or a folder's announcement (the default: the result carries both)."""


@dataclass(frozen=True)
class Start:
    """What ``run`` was asked: ``suite`` against ``model`` within ``limits``.

    ``model`` is a ``ModelSpec`` (default: the built-in sim) or a ``Backend`` of your own
    (the session closes it when it ends); ``folder`` defaults to
    ``runs/<suite>-<model>-<UTC time>`` (made unique); ``retry`` replaces the retry policy
    (default: ``RetrySettings`` with the spec's ``max_attempts``), and resume keeps it.
    ``on_start`` is told the folder once its manifest is written, before the first request;
    ``run_id`` replaces the run's new id. ``interrupts``: SIGINT and SIGTERM stop the run
    after draining the requests in flight for up to ``interrupts.drain_s`` seconds (main
    thread only; ``harness.running.interrupts``). ``settings``: the request cache's mode and
    the logs' form. ``families``: ask only these families' jobs.
    """

    suite: Suite
    model: ModelSpec | Backend = field(default_factory=ModelSpec)
    limits: Limits = field(default_factory=Limits)
    folder: Path | None = None
    retry: RetrySettings | None = None
    progress: Display = False
    on_start: Started = _ignore
    run_id: str | None = None
    interrupts: Interrupts | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    families: frozenset[int] | None = None

    def plan(self, limits: Limits | None = None) -> RunPlan:
        """The backend and policies the run uses (``limits``: a part's own, default the
        run's); a bad model is refused before any folder exists."""
        model, limits, retry = self.model, limits or self.limits, self.retry
        if isinstance(model, ModelSpec):
            # The connection pool follows the run's concurrency (Limits: it lives there only);
            # the oracle also knows the targets no state reveals (historical recall).
            targets = oracle_for(self.suite).known if model.name == "oracle" else None
            backend = make_backend(model, targets, transport=model.transport(limits.concurrency))
            retry = retry or RetrySettings(max_attempts=model.max_attempts)
        else:
            backend = model
        retry = retry or RetrySettings()
        price = run_price(model if isinstance(model, ModelSpec) else None, backend)
        return RunPlan(self.suite, backend, limits, price, retry, settings=self.settings)

    @property
    def name(self) -> str:
        """The model's part of a default folder name."""
        model = self.model
        return folder_model_name(model) if isinstance(model, ModelSpec) else model.name


class RunOptions(TypedDict, total=False):
    """``run``'s keyword options: ``Start``'s fields, documented there."""

    folder: Path | None
    retry: RetrySettings | None
    progress: Display
    on_start: Started
    run_id: str | None
    interrupts: Interrupts | None
    settings: RunSettings
    families: frozenset[int] | None


class ResumeOptions(LimitChanges, total=False):
    """``resume``'s keyword options: ``Resume``'s fields (the limits flat), documented there."""

    base_url: str | None
    price_per_million: float | None
    allow_mismatch: bool
    progress: Display
    on_warning: Warn
    interrupts: Interrupts | None
    families: frozenset[int] | None
    cache: str | None


@dataclass(frozen=True)
class Resume:
    """What ``resume`` was asked: continue the run in ``folder``.

    ``limits`` (``concurrency``, ``rps``, ``max_requests``, ``max_cost_usd``, ``max_wait_s``)
    replace the run's own for this session (``LimitChanges``); ``price_per_million``
    replaces the run's price (each request line records its own cost). Refuses
    (``ManifestMismatch``, one line naming each difference) a manifest edited since its last
    session, a server (``base_url``) other than the run's, or cases or code that changed
    since the run started, unless ``allow_mismatch``: then each difference goes to
    ``on_warning`` and into ``sessions.jsonl`` before anything is sent, as does each torn
    log tail cut. ``interrupts`` and ``families``: as ``Start``'s; ``cache``: the request
    cache's mode (default: the run's own; the logs keep their form).
    """

    folder: Path
    base_url: str | None = None
    price_per_million: float | None = None
    allow_mismatch: bool = False
    progress: Display = False
    on_warning: Warn = _ignore
    interrupts: Interrupts | None = None
    families: frozenset[int] | None = None
    cache: str | None = None
    limits: LimitChanges = field(default_factory=lambda: LimitChanges())

    def again(self, manifest: Manifest, suite: Suite) -> Start:
        """The run ``manifest`` records (of ``suite``), as it is started again: its model and
        retry policy (``base_url`` replacing its server), its limits (this order's replacing
        them), its request cache's mode unless this order names one."""
        spec, retry = model_spec_of(manifest, base_url=self.base_url)
        cache = self.cache or recorded_cache(manifest.extra)  # the run's own, unless told
        settings = RunSettings() if cache is None else RunSettings(cache=cache)
        limits = limits_of(manifest, **self.limits)
        return Start(suite, spec, limits, retry=retry, settings=settings)

    @classmethod
    def of(cls, folder: Path, options: ResumeOptions) -> Resume:
        """The order from ``resume``'s keyword options (the limits gathered)."""
        given: dict[str, Any] = dict(options)
        limits = {k: given.pop(k) for k in LimitChanges.__annotations__ if k in given}
        return cls(folder, limits=cast(LimitChanges, limits), **given)


class Placement(Protocol):
    """Where a run's jobs are answered, as ``run`` and ``resume`` take it (default: here, in
    this process). ``harness.spreading`` has the others: ``Pool`` (forked processes, this one
    writing), ``Shards`` (one shard of many, or all here) and ``Ray`` (actors on a cluster).
    Only here asks a subset of ``families``; ``interrupts`` reach a run here or in a ``Pool``.
    """

    def start(self, order: Start) -> RunResult:
        """Create the run folder and run every job of ``order``."""
        ...

    def resume(self, order: Resume) -> RunResult:
        """Continue the run in ``order.folder``."""
        ...


def run(
    suite: Suite,
    model: ModelSpec | Backend | None = None,
    limits: Limits | None = None,
    *,
    placement: Placement | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """Create a run folder for ``suite`` and run every job against ``model`` (``Start``
    documents the options), answered where ``placement`` says (default: here).

    Raises ``ConfigError`` or ``RunFolderError`` before anything is written when the model,
    the folder or the placement is unusable.
    """
    order = Start(suite, model or ModelSpec(), limits or Limits(), **options)
    return placement.start(order) if placement else in_own_loop(_start)(order)


async def run_async(
    suite: Suite,
    model: ModelSpec | Backend | None = None,
    limits: Limits | None = None,
    **options: Unpack[RunOptions],
) -> RunResult:
    """``run`` inside a running event loop (a notebook, a service), answered in this
    process (the other placements fork or start Ray, outside any loop)."""
    return await _start(Start(suite, model or ModelSpec(), limits or Limits(), **options))


def resume(
    folder: Path, *, placement: Placement | None = None, **options: Unpack[ResumeOptions]
) -> RunResult:
    """Continue the run in ``folder``: replay what was answered, send what was not
    (``Resume`` documents the options), answered where ``placement`` says (default: here).
    """
    order = Resume.of(folder, options)
    return placement.resume(order) if placement else in_own_loop(_resume)(order)


async def resume_async(folder: Path, **options: Unpack[ResumeOptions]) -> RunResult:
    """``resume`` inside a running event loop, answered in this process."""
    return await _resume(Resume.of(folder, options))


async def _start(order: Start) -> RunResult:
    """``run`` here: the folder made, then its jobs in this event loop."""
    plan = order.plan()
    async with _closing(plan.backend):
        check_before_writing(plan)  # before any folder exists
        with new_session(order, plan) as (folder, run_id):
            lists = job_lists(order.suite, LogState(), plan.backend.name, None, order.families)
            return await _execute(
                folder, run_id, plan, LogState(), lists, order.progress, order.interrupts
            )


@contextmanager
def new_session(
    order: Start, plan: RunPlan, extra: dict[str, Any] | None = None
) -> Iterator[tuple[Path, str]]:
    """The new run folder of ``order`` (None: ``runs/<suite>-<model>-<UTC time>``, made
    unique) with the plan's manifest written (``extra``: fields it adds, a shard's), announced
    to ``on_start`` and this session recorded, and the run's id; locked until the block ends.
    The plan's refusals are the caller's, before; a folder reserved here and left empty by a
    refusal is removed."""
    folder = order.folder or default_run_folder(plan.suite.name, order.name)
    lock = RunLock(folder)
    try:
        manifest = create_run_folder(folder, plan, lock, order.run_id, extra=extra)
    except BaseException:
        if order.folder is None:  # the empty folder reserved for this run: nothing was written
            with suppress(OSError):
                folder.rmdir()
        raise
    try:
        order.on_start(folder)
        record_session(folder, "run", manifest.to_dict(), plan, [])
        yield folder, manifest.run_id
    finally:
        lock.release()


async def _resume(order: Resume) -> RunResult:
    """``resume`` here: the checks, then the unfinished jobs in this event loop."""
    opened, plan = resume_plan(order)
    async with _closing(plan.backend):
        with resumed(order, opened, plan, order.families) as (state, lists, warn):
            result = await _execute(
                order.folder, opened.manifest.run_id, plan, state, lists, order.progress,
                order.interrupts,
            )  # fmt: skip
    return replace(result, warnings=tuple(warn))


@contextmanager
def resumed(
    order: Resume, opened: Opened, plan: RunPlan, families: frozenset[int] | None
) -> Iterator[tuple[LogState, JobLists, Warnings]]:
    """Under the folder's lock: what ``--allow-mismatch`` lets through (the server included),
    the logs read, the unfinished jobs (of ``families``, None: all) replayed from them (a job
    this code would ask differently is refused now), the repairs said and this session
    recorded: a resume refused before (a price the plan lacks, a request cache that cannot
    be opened) leaves no trace. Yields the logs' state, the jobs and the warnings (each
    passed on as it comes)."""
    warn = Warnings(order.on_warning)
    check_before_writing(plan)
    change = server_change(opened.manifest, plan, order.allow_mismatch)
    problems = [*opened.problems, *([change] if change else [])]
    for problem in problems:
        warn(f"{problem} (continuing: --allow-mismatch)")
    with RunLock(order.folder):
        state = read_logs(order.folder, opened.suite.decoders, opened.manifest.run_id)
        lists = job_lists(opened.suite, state, plan.backend.name, plan.shard, families)
        for repair in state.repairs():
            warn(repair)
        record_session(order.folder, "resume", opened.manifest.raw, plan, problems)
        yield state, lists, warn


class Warnings(list[str]):
    """A resume's warnings: kept for its result, and each passed on as it comes."""

    def __init__(self, on_warning: Warn) -> None:
        super().__init__()
        self._on_warning = on_warning

    def __call__(self, message: str) -> None:
        self.append(message)
        self._on_warning(message)


def resume_plan(order: Resume) -> tuple[Opened, RunPlan]:
    """The checked folder and the plan a resume of it runs; refuses the parent of shards.
    The plan's backend is the caller's to close."""
    folder = order.folder
    opened = open_for_resume(folder, order.allow_mismatch)
    manifest = opened.manifest
    if shard_count(manifest) is not None:
        raise RunFolderError(
            f"{folder} is the parent of {shard_count(manifest)} shards: resume them with "
            f"numericjev resume {folder} (all, here) or numericjev resume {folder}/shards/K"
        )
    again = order.again(manifest, opened.suite)
    if order.price_per_million is not None and isinstance(again.model, ModelSpec):
        again = replace(
            again, model=replace(again.model, price_per_million=order.price_per_million)
        )
    plan = again.plan()
    return opened, replace(plan, shard=shard_from_manifest(manifest))


def in_own_loop(function: Callable[P, Awaitable[T]]) -> Callable[P, T]:
    """The blocking form of an async entry point: ``function`` run in its own event loop
    (``run_comparison`` is ``run_comparison_async`` so; the one kind of place ``anyio.run``
    is called)."""

    @wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return anyio.run(partial(function, *args, **kwargs))

    blocking.__name__ = function.__name__.removesuffix("_async")
    blocking.__qualname__ = function.__qualname__.removesuffix("_async")
    blocking.__doc__ = f"``{function.__name__}`` in its own event loop."
    return blocking


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
    lists: JobLists,
    progress: Display,
    interrupts: Interrupts | None,
) -> RunResult:
    """Run the unfinished jobs (``job_lists``); the caller holds the lock."""
    backend = plan.backend
    started, fresh = lists
    counters = state.counters
    counters.jobs_total = plan.jobs_total()
    counters.jobs_done = len(state.finished)
    oracle = isinstance(backend, Oracle)
    before = counters.requests
    where = f"shard {plan.shard.index}/{plan.shard.count}" if plan.shard else ""
    display = partial(display_for, progress, plan, counters, bool(started or fresh), where)
    interrupt = interrupts or Interrupts()  # none given: signals are left alone
    wired = Wired.of(folder, run_id, plan, counters, display, state=state)
    await wired.run(jobs_of(plan.suite, started, fresh), interrupt, watching(interrupts))
    served = set(counters.models)
    simulated = backend.simulated or bool(served & SIMULATOR_MODELS)
    oracle = oracle or bool(served & ORACLE_MODELS)
    caller = wired.caller
    return RunResult(
        folder,
        counters,
        simulated,
        wired.scheduler.stopped,
        wired.scheduler.fatal,
        oracle=oracle,
        sent=counters.requests - before,
        attempts=caller.sent,
        interrupted=interrupt.signum,
        drained=max(interrupt.in_flight - caller.abandoned, 0),
        abandoned=caller.abandoned,
    )
