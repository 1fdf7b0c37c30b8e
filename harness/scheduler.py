"""The anyio scheduler: many jobs advance at once, one batched request per job per round.

Workers (one per allowed request in flight) take jobs from a seeded, shuffled queue and run
each to its end; jobs are built lazily, so memory grows with the concurrency, not the suite.
Records go to one ``RunWriter`` whose methods are synchronous: in a single-threaded event
loop a synchronous write cannot interleave with another task's, and no answered exchange can
be stranded in a buffer when the run is cancelled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, cast

import anyio
import anyio.lowlevel

from harness.backends.base import Backend, Reply
from harness.errors import AuthError, BackendError
from harness.jobs import Job
from harness.progress import Counters, Progress
from harness.wire.answers import parse_answers
from runfolder import ErrorKind, ExchangeRecord, LimitsRecord, OutputRecord, Usage, error_kind

SIMULATED_MODELS = frozenset({"sim", "oracle"})  # what serve-sim names itself
# Failed requests (each after its retries) with none answered yet before the run gives up.
EARLY_FAILURE_LIMIT = 8


@dataclass(frozen=True)
class Limits:
    """What bounds a run: requests in flight, pace, and caps that stop it resumably."""

    concurrency: int = 64
    rps: float | None = None
    max_requests: int | None = None  # requests sent by this invocation
    max_cost_usd: float | None = None  # the run's total recorded cost, all sessions included

    def as_record(self) -> LimitsRecord:
        """The limits as the manifest and sessions.jsonl record them."""
        return {
            "concurrency": self.concurrency,
            "rps": self.rps,
            "max_requests": self.max_requests,
            "max_cost_usd": self.max_cost_usd,
        }


class Gate(Protocol):
    """Admits one request at a time into flight (concurrency, pace, run-wide back-off)."""

    def slot(self) -> AbstractAsyncContextManager[object]:
        """Hold a place for one request."""
        ...


class Writer(Protocol):
    """Where the scheduler's records go (``harness.run.RunWriter``)."""

    def request(self, record: ExchangeRecord) -> None:
        """One exchange attempt."""
        ...

    def outputs(self, records: list[OutputRecord]) -> None:
        """A finished (or failed) job's decoder outputs."""
        ...


@dataclass
class Outcome:
    """How the scheduler stopped."""

    stopped: str | None = None  # None: every job ran; else why it stopped early
    fatal: str | None = None  # an error that makes every request fail (bad key)


class Scheduler:
    """Runs jobs against one backend under ``Limits``."""

    def __init__(
        self,
        backend: Backend,
        gate: Gate,
        writer: Writer,
        limits: Limits,
        counters: Counters,
        progress: Progress,
        *,
        price_per_million: float | None = None,
    ) -> None:
        self.backend = backend
        self.gate = gate
        self.writer = writer
        self.limits = limits
        self.counters = counters
        self.progress = progress
        self.price = price_per_million
        self.outcome = Outcome()
        self._sent = 0
        self._reserved = 0.0
        self._cost_per_byte = 0.0
        self._answered_any = False
        self._early_failures = 0

    async def run(self, jobs: Iterator[Job]) -> Outcome:
        """Advance every job until done, failed, or a cap/fatal error stops the run."""
        workers = max(1, self.limits.concurrency)
        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(self._worker, jobs)
        self.progress.update(self.counters)
        return self.outcome

    async def _worker(self, jobs: Iterator[Job]) -> None:
        for job in jobs:
            if self.outcome.stopped:
                return
            await self._advance(job)
            # A place where cancellation lands and other workers get a turn, even when the
            # backend answers in process and never yields.
            await anyio.lowlevel.checkpoint()

    def _may_send(self, body_bytes: int) -> float | None:
        """The cost to reserve for one more request, or None when a cap says stop."""
        limits = self.limits
        if limits.max_requests is not None and self._sent >= limits.max_requests:
            self.outcome.stopped = f"request cap reached ({limits.max_requests:,} requests)"
            return None
        reserve = 0.0
        if limits.max_cost_usd is not None:
            # Reserve the most a request of this size has cost so far, or the price-table estimate,
            # so that requests in flight together cannot overshoot the cap.
            estimate = body_bytes / 3 * (self.price or 0.0) / 1e6
            reserve = max(estimate, self._cost_per_byte * body_bytes)
            if self.counters.cost_usd + self._reserved + reserve > limits.max_cost_usd:
                self.outcome.stopped = f"spend cap reached (USD {limits.max_cost_usd:g})"
                return None
        return reserve

    async def _advance(self, job: Job) -> None:
        model = self.backend.name
        while not self.outcome.stopped:
            step = job.next_request(model)
            if step is None:
                self._finish(job, failed=None)
                return
            body, qmap = step
            size = len(str(body)) if self.limits.max_cost_usd is not None else 0
            reserve = self._may_send(size)
            if reserve is None:
                return
            self._sent += 1
            self._reserved += reserve
            try:
                async with self.gate.slot():
                    started = time.time()
                    t0 = time.perf_counter()
                    try:
                        reply = await self.backend.answer(body)
                        answers = parse_answers(body["questions"], reply.body)
                    except BackendError as exc:
                        latency = (time.perf_counter() - t0) * 1000
                        self._record_failure(job, body, qmap, exc, started, latency)
                        if isinstance(exc, AuthError):
                            self.outcome.fatal = str(exc)
                            self.outcome.stopped = "the server refused the credentials"
                            return
                        if not self._answered_any:
                            self._early_failures += 1
                            if self._early_failures >= EARLY_FAILURE_LIMIT:
                                # Nothing has worked yet: a wrong URL or model, not bad luck.
                                self.outcome.fatal = (
                                    f"the first {self._early_failures} requests all failed "
                                    f"after retries, the last with {exc.kind}: {exc}; check "
                                    "--model and --base-url (resume once the server answers)"
                                )
                                self.outcome.stopped = "no request has succeeded"
                        self._finish(job, failed=error_kind(exc.kind))
                        return
                    latency = (time.perf_counter() - t0) * 1000
            finally:
                self._reserved -= reserve
            self._answered_any = True
            self._record_success(job, body, qmap, reply, started, latency, size)
            job.apply(qmap, answers)

    def _write_failed(
        self,
        job: Job,
        body: Mapping[str, Any],
        qmap: dict[str, str],
        started: float,
        failed: Mapping[str, Any],
    ) -> None:
        """Write a failed attempt (``failed`` as the backend reports attempts) and count it."""
        kind = error_kind(str(failed.get("kind") or "error"))
        # "job" comes first: resume filters raw lines on that prefix without parsing them.
        record: ExchangeRecord = {
            "job": job.id,
            "round": job.round + 1,
            "t": round(started, 3),
            "request": body,
            "qmap": qmap,
            "attempt": failed.get("attempt", 1),
            "latency_ms": failed.get("latency_ms"),
            "status": failed.get("status"),
            "response": failed.get("body"),
            "error": {"kind": kind, "message": failed.get("message") or ""},
            "model": None,
            "usage": None,
            "cost_usd": None,
            "request_id": failed.get("request_id"),
        }
        self.writer.request(record)
        c = self.counters
        c.errors += 1
        c.error_kinds[kind] = c.error_kinds.get(kind, 0) + 1

    def _record_success(
        self,
        job: Job,
        body: Mapping[str, Any],
        qmap: dict[str, str],
        reply: Reply,
        started: float,
        latency: float,
        size: int,
    ) -> None:
        retries = list(reply.extra.get("retries", ()))  # failed attempts before this one
        for number, failed in enumerate(retries, start=1):
            self._write_failed(job, body, qmap, started, {"attempt": number, **failed})
        usage = cast(Usage, dict(reply.usage or {}))  # the server's counts, as it sent them
        cost = reply.cost_usd
        if cost is None and self.price is not None:
            cost = usage.get("input_tokens", 0) * self.price / 1e6
        record: ExchangeRecord = {
            "job": job.id,
            "round": job.round + 1,
            "t": round(started, 3),
            "request": body,
            "qmap": qmap,
            "attempt": len(retries) + 1,
            "latency_ms": round(latency, 3),
            "status": reply.status,
            "response": reply.body,
            "error": None,
            "model": reply.model,
            "usage": usage or None,
            "cost_usd": cost,
            "request_id": reply.request_id,
        }
        self.writer.request(record)
        c = self.counters
        if reply.model:
            job.served.add(reply.model)
            c.models[reply.model] = c.models.get(reply.model, 0) + 1
        c.requests += 1
        c.input_tokens += int(usage.get("input_tokens", 0))
        c.output_tokens += int(usage.get("output_tokens", 0))
        if cost is None:
            c.cost_known = False
        else:
            c.cost_usd += cost
            if size:
                self._cost_per_byte = max(self._cost_per_byte, cost / size)
        self.progress.update(c)

    def _record_failure(
        self,
        job: Job,
        body: Mapping[str, Any],
        qmap: dict[str, str],
        exc: BackendError,
        started: float,
        latency: float,
    ) -> None:
        attempts = list(getattr(exc, "attempts", ()))
        for number, failed in enumerate(attempts[:-1], start=1):
            self._write_failed(job, body, qmap, started, {"attempt": number, **failed})
        last = {
            "attempt": max(1, len(attempts)),
            "latency_ms": round(latency, 3),
            "status": exc.status,
            "body": getattr(exc, "body", None),
            "kind": exc.kind,
            "message": str(exc),
            "request_id": getattr(exc, "request_id", None),
        }
        self._write_failed(job, body, qmap, started, last)
        self.progress.update(self.counters)

    def _finish(self, job: Job, failed: ErrorKind | None) -> None:
        # A System One server may itself be the simulator (numericjev serve-sim): trust the
        # served model's name as well as the backend's own label.
        simulated = bool(getattr(self.backend, "simulated", False)) or bool(
            job.served & SIMULATED_MODELS
        )
        records = job.outputs(simulated, error=failed)
        self.writer.outputs(records)
        c = self.counters
        if failed is None:
            c.jobs_done += 1
        else:
            c.jobs_failed += 1
        c.rounds = max(c.rounds, job.round)
        self.progress.update(c)


class SimpleGate:
    """Bounds requests in flight (or defers to ``inner``'s slots) and paces them to ``rps``.

    With an HTTP backend ``inner`` is its ``RateController``, so the AIMD window that 429s
    shrink bounds the whole run, not each job's retries separately.
    """

    def __init__(
        self,
        concurrency: int,
        rps: float | None = None,
        inner: Gate | None = None,
        *,
        workers_bound: bool = False,
    ) -> None:
        self.inner = inner
        self.limiter = anyio.CapacityLimiter(max(1, concurrency))
        self.interval = 1.0 / rps if rps else 0.0
        self._next = -math.inf
        # With no pace and no backend window the workers (one per allowed request) already
        # bound what is in flight; skipping the limiter saves two event-loop turns a request.
        self.free = inner is None and not self.interval and workers_bound

    def slot(self) -> AbstractAsyncContextManager[object]:
        """Hold a place for one request."""
        return _Slot(self)


class _Slot:
    """One request's place (a class, not @asynccontextmanager: this runs once per request)."""

    def __init__(self, gate: SimpleGate) -> None:
        self.gate = gate
        self.inner: AbstractAsyncContextManager[object] | None = None

    async def __aenter__(self) -> None:
        gate = self.gate
        if gate.free:
            return
        if gate.inner is not None:
            self.inner = gate.inner.slot()
            await self.inner.__aenter__()
        else:
            await gate.limiter.acquire()
        if gate.interval:
            now = anyio.current_time()
            start = max(now, gate._next)
            gate._next = start + gate.interval
            if start > now:
                await anyio.sleep(start - now)

    async def __aexit__(self, *exc: Any) -> None:
        if self.gate.free:
            return
        if self.inner is not None:
            await self.inner.__aexit__(*exc)
        else:
            self.gate.limiter.release()
