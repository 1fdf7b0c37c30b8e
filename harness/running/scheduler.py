"""The anyio scheduler: many jobs advance at once, one batched request per job per round.

Workers (one per allowed request in flight) take jobs from a seeded, shuffled queue and run
each to its end; jobs are built lazily, so memory grows with the concurrency, not the suite.
Each round the ``Budget`` admits the request, the ``Caller`` gets its answers (retrying,
pacing, holding spend, validating and timing attempts), and the ``Recorder`` writes every
attempt as it ends and each job's outputs when it is done.

A run stops early for a cap, a fatal error or an interrupt (``stop``): the run's
``StopSwitch`` is thrown, so no new attempt starts and every wait ends, while attempts
already sent finish and are recorded. A job cut short that way is left pending, never
failed, so ``resume`` asks it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import anyio
import anyio.lowlevel

from harness.calling import Budget, Caller
from harness.collector import fewer_collections
from harness.errors import (
    AuthError,
    BackendError,
    BudgetExhausted,
    RequestCapReached,
    Stopping,
)
from harness.running.jobs import Job
from harness.running.recorder import Recorder
from runfolder import error_kind


class Scheduler:
    """Runs jobs through one caller; ``stopped`` and ``fatal`` say how it ended."""

    def __init__(self, caller: Caller, budget: Budget, recorder: Recorder, *, workers: int) -> None:
        """``workers``: how many jobs advance at once (the concurrency)."""
        self.caller = caller
        self.budget = budget
        self.recorder = recorder
        self.workers = max(1, workers)
        self.model = caller.backend.name
        self.stopped: str | None = None  # None: every job ran; else why it stopped early
        self.fatal: str | None = None  # an error that makes every request fail (bad key)

    def stop(self, reason: str) -> None:
        """Stop the run: no new exchange or attempt starts; what is in flight finishes."""
        if self.stopped is None:
            self.stopped = reason
        self.caller.switch.stop(reason)

    async def run(self, jobs: Iterator[Job]) -> None:
        """Advance every job until done, failed, or a cap or fatal error stops the run."""
        with fewer_collections():  # see harness.collector: 10-15% of an HTTP run's CPU
            async with anyio.create_task_group() as tg:
                for _ in range(self.workers):
                    tg.start_soon(self._worker, jobs)

    async def _worker(self, jobs: Iterator[Job]) -> None:
        for job in jobs:
            if self.stopped:
                return
            await self._advance(job)
            # A place where cancellation lands and other workers get a turn, even when the
            # backend answers in process and never yields.
            await anyio.lowlevel.checkpoint()

    async def _advance(self, job: Job) -> None:
        caller, budget, recorder, model = self.caller, self.budget, self.recorder, self.model
        while True:
            step = job.next_request(model)
            if step is None:
                recorder.finished(job, None)  # also when its last answer came in a drain
                return
            if self.stopped is not None:
                return  # pending: resume asks it again
            body, qmap = step
            try:
                # The exchange's occasion (job, round) is part of its cache key: see harness.cache.
                on_attempt = partial(recorder.attempt, job, body, qmap)
                answered = await caller.call(body, on_attempt, f"{job.id}#{job.round}")
            except Stopping:
                return
            except RequestCapReached as exc:
                # Nothing new starts, but the switch stays: exchanges already admitted (in
                # a pacer wait, or retrying) are still sent, and hits still answer.
                self.stopped = self.stopped or str(exc)
                return
            except BudgetExhausted as exc:
                self.stop(str(exc))
                return
            except BackendError as exc:
                self._failed(job, exc)
                return
            budget.answered()
            assert answered.answers is not None  # an answered attempt carries its answers
            job.apply(qmap, answered.answers, answered.refused)
            # Dropped before the next await: kept in this frame, every worker's last parsed
            # reply stays alive while the others run, and with hundreds of workers that
            # memory no longer fits the CPU caches (bench_overhead: 8 us per exchange at
            # concurrency 256, 3 at 32).
            del answered

    def _failed(self, job: Job, exc: BackendError) -> None:
        """A request failed after its retries (each attempt is already in the log)."""
        if isinstance(exc, AuthError):
            self.fatal = str(exc)
            self.stop("the server refused the credentials")
            return
        breaker = self.budget.failed(exc)
        if breaker is not None:
            self.fatal = breaker
            self.stop("no request has succeeded")
        self.recorder.finished(job, error_kind(exc.kind))
