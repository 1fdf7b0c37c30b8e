"""One session's parts wired around its scheduler, in one place for every placement: this
process (``harness.running.session``), a pool worker and a Ray shard (``harness.spreading``)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from harness.backends.oracle import Oracle
from harness.cache import RequestCache, open_cache
from harness.calling import Budget, Caller, Pacer
from harness.errors import first_error
from harness.progress import Counters, NoProgress, Progress, TqdmProgress
from harness.running.folder import RunPlan
from harness.running.interrupts import Interrupts
from harness.running.jobs import Job
from harness.running.recorder import LineSink, Recorder
from harness.running.replay import LogState
from harness.running.scheduler import Scheduler


@dataclass
class Wired:
    """One session's parts around its scheduler (the request cache, the recorder, the
    budget, the caller with its pacer), wired here for every placement: this process, a
    pool worker, a Ray shard."""

    cache: RequestCache | None
    recorder: Recorder
    caller: Caller
    scheduler: Scheduler

    @classmethod
    def of(
        cls,
        folder: Path,
        run_id: str,
        plan: RunPlan,
        counters: Counters,
        display: Callable[[], Progress] = NoProgress,
        *,
        state: LogState | None = None,
        sinks: tuple[LineSink, LineSink] | None = None,
        budget: Budget | None = None,
        pacer: Pacer | None = None,
    ) -> Wired:
        """The parts for ``plan``: the logs continued from ``state`` (or ``sinks``, a worker
        handing its lines over), ``budget`` and ``pacer`` replacing the run's own;
        ``display`` makes the progress display once the cache is open."""
        backend, limits, price = plan.backend, plan.limits, plan.price_per_million
        state = state or LogState()
        # Before any file is opened: a refused cache file (another schema) leaves nothing open.
        # The plan's settings, passed here as an argument (a fork, a Ray task): not the
        # environment.
        cache = open_cache(backend.describe(), run_id, plan.settings.cache)
        recorder = Recorder(
            folder, run_id, counters, display(), simulated=backend.simulated,
            oracle=isinstance(backend, Oracle), requests_end=state.requests_end,
            outputs_end=state.outputs_end, next_seq=state.next_seq, sinks=sinks,
        )  # fmt: skip
        budget = budget or Budget(limits, counters, price)
        pacer = pacer or Pacer(limits.concurrency, rps=limits.rps, max_wait_s=limits.max_wait_s)
        caller = Caller(
            backend, pacer, plan.retry, price=plan.price, budget=budget, probe=True,
            cache=cache,
        )  # fmt: skip
        # One worker per allowed request in flight.
        scheduler = Scheduler(caller, budget, recorder, workers=limits.concurrency)
        return cls(cache, recorder, caller, scheduler)

    async def run(
        self, jobs: Iterator[Job], interrupts: Interrupts, signals: AbstractAsyncContextManager[Any]
    ) -> None:
        """Run ``jobs`` while ``signals`` feeds ``interrupts``; then the logs closed (and, in
        the folder's writer, ``totals.json`` written) and the cache's summary said."""
        scheduler, recorder = self.scheduler, self.recorder
        hard = anyio.CancelScope()  # cut off what is still in flight (interrupts, a failed write)

        def write_failed() -> None:
            # Answers in flight could not be recorded either: nothing more is sent or awaited.
            scheduler.stop("a record could not be written")
            hard.cancel()

        recorder.on_failure = write_failed
        try:
            with first_error():
                async with signals:
                    with hard, interrupts.attach(scheduler, hard):
                        await scheduler.run(jobs)
        finally:
            # Also on Ctrl-C and cancellation: ``numericjev list`` reads these, not the log.
            if recorder.writes_folder:
                recorder.save_totals()
            recorder.close()
            recorder.progress.close()
            if self.cache is not None:
                self.cache.close()  # first: its last commit is counted in the summary's CPU
                print(self.cache.summary(), file=sys.stderr)
        failure = recorder.guard.failure  # reported by a flush between tasks, or by the last one
        if failure is not None:
            raise failure


def display_for(
    progress: bool | Progress, plan: RunPlan, counters: Counters, pending: bool, where: str = ""
) -> Progress:
    """The run's one progress bar while jobs are ``pending`` (or the caller's display, or
    none); ``where`` says what answers (a shard, N processes)."""
    if not isinstance(progress, bool):
        return progress
    if not (progress and pending):
        return NoProgress()
    backend = plan.backend
    oracle = isinstance(backend, Oracle)
    mark = " (oracle: exact labels)" if oracle else " (simulated)" if backend.simulated else ""
    label = f"{plan.suite.name} · {backend.name}{mark}" + (f" · {where}" if where else "")
    return TqdmProgress(counters.jobs_total, counters.jobs_done, label)
