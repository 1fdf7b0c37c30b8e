"""The anyio scheduler: many jobs advance at once, one batched request per job per round.

Workers (one per allowed request in flight) take jobs from a seeded, shuffled queue and run
each to its end; jobs are built lazily, so memory grows with the concurrency, not the suite.
Each round the ``Budget`` admits the request, the ``Caller`` gets its answers (retrying,
pacing, validating and timing attempts), and the ``Recorder`` writes every attempt as it
ends and each job's outputs when it is done. The scheduler keeps only the workers and the
advance loop, and says why it stopped early, if it did.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import anyio
import anyio.lowlevel

from harness.calling import Budget, Caller
from harness.errors import AuthError, BackendError, BudgetExhausted
from harness.jobs import Job
from harness.recorder import Recorder
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

    async def run(self, jobs: Iterator[Job]) -> None:
        """Advance every job until done, failed, or a cap or fatal error stops the run."""
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
        while self.stopped is None:
            step = job.next_request(model)
            if step is None:
                recorder.finished(job, None)
                return
            body, qmap = step
            try:
                reservation = budget.reserve(body)
            except BudgetExhausted as exc:
                self.stopped = self.stopped or str(exc)
                return
            try:
                answered = await caller.call(body, partial(recorder.attempt, job, body, qmap))
            except BackendError as exc:
                budget.release(reservation, None)
                self._failed(job, exc)
                return
            except BaseException:
                budget.release(reservation, None)
                raise
            budget.release(reservation, answered.cost_usd)
            budget.answered()
            assert answered.answers is not None  # an answered attempt carries its answers
            job.apply(qmap, answered.answers, answered.refused)

    def _failed(self, job: Job, exc: BackendError) -> None:
        """A request failed after its retries (each attempt is already in the log)."""
        if isinstance(exc, AuthError):
            self.fatal = str(exc)
            self.stopped = "the server refused the credentials"
            return
        breaker = self.budget.failed(exc)
        if breaker is not None:
            self.fatal = breaker
            self.stopped = "no request has succeeded"
        self.recorder.finished(job, error_kind(exc.kind))
