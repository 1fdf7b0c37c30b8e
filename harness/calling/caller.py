"""The Caller: between the scheduler and a backend, the same for every backend.

As Inspect's ``Model`` wraps a ``ModelAPI``: the backend makes ONE attempt and classifies
its own failures; the caller runs every attempt under the run's ``StopSwitch``, ``Budget``,
``Pacer`` and the ONE retry policy (``policy``), times each on its own (no waits included)
and hands each ``Attempt`` to ``on_attempt`` as soon as it is over (written at once, so none
is lost in a buffer). It validates a reply's answers (``read_answers``) before anything
reads them: a malformed answer is retried for every backend, its billed usage and cost
still recorded. A reply that carries no cost is priced at the run's ``pricing.Price``.

The first attempt is a plain await: the tenacity loop (tens of microseconds to build) is
entered only after a failure, so an answered exchange costs no more than one attempt.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import anyio

from harness.backends.base import Backend
from harness.backends.pricing import Price
from harness.calling.attempt import Attempt
from harness.calling.budget import Budget, Hold
from harness.calling.pacing import Pacer
from harness.calling.policy import Clock, RetrySettings, Sleep, build_retrying, rate_limited
from harness.calling.stop import StopSwitch
from harness.errors import BackendError, BudgetExhausted, RequestCapReached, TransientError
from harness.wire.answers import read_answers, refusal_summary
from harness.wire.encoded import encoded
from runfolder import ErrorKind, Usage


class RequestCache(Protocol):
    """What the caller asks of the request cache (``harness.cache.RequestCache``, a layer
    above: it builds ``Attempt``s)."""

    async def find(
        self, body: Mapping[str, Any], occasion: str = ""
    ) -> tuple[str | bytes, Attempt | None]:
        """The exchange's cache key, and its cached answer as an attempt costing 0, or None."""
        ...

    def save(self, key: str | bytes, attempt: Attempt) -> None:
        """Store a validated live answer (and give back its lease)."""
        ...

    async def claim(self, key: str | bytes, body: Mapping[str, Any]) -> Attempt | None:
        """After a miss: None once this process may ask it, or the answer another
        process was asking (waited for)."""
        ...

    def release(self, key: str | bytes, asked: bool = True) -> None:
        """Give back the key's lease: its exchange was not answered here (not ``asked``:
        the request cap stopped it before it was sent)."""
        ...


OnAttempt = Callable[[Attempt], None]


class _Exchange:
    """What one exchange's retries need to know about it."""

    __slots__ = ("paused", "size")

    def __init__(self, size: int) -> None:
        self.size = size  # body bytes, for the spend hold (0 without a spend cap)
        self.paused = 0.0  # seconds spent waiting for the pacer (not charged to its budget)


class Caller:
    """Asks one backend for one exchange's answers, attempt by attempt."""

    def __init__(
        self,
        backend: Backend,
        pacer: Pacer,
        retry: RetrySettings | None = None,
        *,
        price: Price | None = None,
        budget: Budget | None = None,
        probe: bool = False,
        sleep: Sleep = anyio.sleep,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        rng: random.Random | None = None,
        cache: RequestCache | None = None,
    ) -> None:
        """``budget`` holds spend per attempt (with a spend cap); ``probe``: retry under
        ``RetrySettings.probe()`` until an exchange is answered (a run does, so that a wrong
        server is found out in seconds); ``sleep``, ``clock`` (retry waits), ``wall`` (each
        attempt's ``t``) and ``rng`` are injected in tests; ``cache``: the request cache,
        asked before an exchange is sent and told every live answer."""
        self.backend = backend
        self.pacer = pacer
        self.retry = retry or RetrySettings()
        self.price = price
        self.budget = budget
        self.switch = StopSwitch()
        self.answered_any = not probe  # until then the probe() retry policy applies
        self.sending = 0  # attempts sent and not over yet
        self.sent = 0  # attempts sent in all
        self.abandoned = 0  # attempts cut off while sent (an interrupt's drain ran out)
        self._sleep = sleep
        self._clock = clock
        self._wall = wall
        self._rng = rng or random.Random()
        self.cache = cache
        self._encode = cache is not None and getattr(backend, "sends_body_json", False)

    async def call(
        self, body: Mapping[str, Any], on_attempt: OnAttempt, occasion: str = ""
    ) -> Attempt:
        """The answered attempt of one exchange (``answers`` validated, ``refused`` what the
        model declined), every attempt sent to ``on_attempt`` as it ends; ``occasion`` (job
        and round) keys the request cache with the body. Raises the last ``BackendError``
        past the retry policy, ``BudgetExhausted`` (``RequestCapReached`` before anything
        was sent) or ``Stopping``."""
        cache = self.cache
        if cache is None:
            return await self._live(body, on_attempt)
        if self._encode:  # serialised once: the cache keys the bytes the backend sends
            body = encoded(body)
        # A hit is sent nowhere and costs 0: it never reaches the pacer or the spend cap.
        key, hit = await cache.find(body, occasion)
        try:
            # A miss another process is asking now is waited for, not asked again.
            if hit is None:
                hit = await cache.claim(key, body)
            if hit is not None:
                self.answered_any = True
                on_attempt(hit)
                return hit
            answered = await self._live(body, on_attempt)
        except BaseException as exc:
            # Failed or cut off: the next process asks it.
            cache.release(key, asked=not isinstance(exc, RequestCapReached))
            raise
        cache.save(key, answered)  # stored, and its lease given back, as one
        return answered

    async def _live(self, body: Mapping[str, Any], on_attempt: OnAttempt) -> Attempt:
        """The exchange asked of the backend, retried under the policy."""
        budget = self.budget
        if budget is not None:
            # Counted here, not before the cache lookup: --max-requests counts requests sent.
            budget.admit()
        exchange = _Exchange(budget.size_of(body) if budget is not None and budget.spending else 0)
        started = self._clock()
        try:
            return await self._attempt(body, 1, on_attempt, exchange)
        except TransientError as error:
            if self.retry.max_attempts == 1 and not rate_limited(error):
                raise
            first = error
        # Outside the except block, so that later failures do not chain onto the first.
        return await self._retry(body, on_attempt, first, started, exchange)

    def _settle(self, held: Hold | None, cost: float | None) -> None:
        """Give back an attempt's hold under the spend cap (if it took one), with its cost."""
        if held is not None and self.budget is not None:
            self.budget.settle(held, cost)

    async def _wait(self, seconds: float) -> None:
        """A retry's wait, ended at once when the run stops."""
        with self.switch.waiting():
            await self._sleep(seconds)

    async def _retry(
        self,
        body: Mapping[str, Any],
        on_attempt: OnAttempt,
        first: TransientError,
        start: float,
        exchange: _Exchange,
    ) -> Attempt:
        retrying = build_retrying(
            self.retry,
            sleep=self._wait,
            clock=self._clock,
            rng=self._rng,
            start=start,
            probing=lambda: not self.answered_any,
            paused=lambda: exchange.paused,
        )
        pending: TransientError | None = first
        async for attempt in retrying:
            with attempt:
                if pending is not None:  # the policy sees the first failure like any other
                    error, pending = pending, None
                    raise error
                number = attempt.retry_state.attempt_number
                return await self._attempt(body, number, on_attempt, exchange)
        raise AssertionError("unreachable: tenacity returns or raises")

    async def _admit(self, exchange: _Exchange) -> tuple[int, Hold | None]:
        """A hold under the spend cap (if any), then a place in the pacer's window."""
        switch, budget, pacer = self.switch, self.budget, self.pacer
        switch.check()
        held = None
        if exchange.size:
            assert budget is not None
            held = budget.try_hold(exchange.size)
            if held is None:
                with switch.waiting():
                    held = await budget.hold(exchange.size)
        generation = pacer.try_acquire()
        if generation is None:
            began = self._clock()
            try:
                with switch.waiting():
                    generation = await pacer.acquire()
            except BaseException:
                self._settle(held, None)
                raise
            finally:
                exchange.paused += self._clock() - began
        if switch.stopping:  # a wait that ended as the run stopped: send nothing
            pacer.release()
            self._settle(held, None)
            switch.check()
        return generation, held

    async def _attempt(
        self, body: Mapping[str, Any], number: int, on_attempt: OnAttempt, exchange: _Exchange
    ) -> Attempt:
        pacer = self.pacer
        # The common case takes its place without a coroutine (one less per attempt): no
        # spend cap to hold under, the run going on, and room in the pacer's window.
        generation = None if exchange.size or self.switch.stopping else pacer.try_acquire()
        held: Hold | None = None
        if generation is None:
            generation, held = await self._admit(exchange)
        t = self._wall()
        t0 = time.perf_counter()
        self.sending += 1
        self.sent += 1
        try:
            reply = await self.backend.answer(body)
        except BackendError as error:
            latency = (time.perf_counter() - t0) * 1000.0
            self.sending -= 1
            pacer.release()
            limited = error.kind == "rate_limited"
            if limited:
                pacer.on_rate_limited(generation, error.wait_s)
            on_attempt(Attempt.failed(number, t, latency, error))
            self._settle(held, error.cost_usd)
            if limited and pacer.exhausted:
                raise BudgetExhausted(pacer.exhausted) from error
            raise
        except BaseException:
            self.sending -= 1
            if self.switch.stopping:
                self.abandoned += 1  # cancelled while sent: the reply was never read
            pacer.release()
            self._settle(held, None)
            raise
        latency = (time.perf_counter() - t0) * 1000.0
        self.sending -= 1
        pacer.release()
        usage: Usage | None = reply.usage or None  # type: ignore[assignment]
        cost = reply.cost_usd
        if cost is None and self.price is not None:
            cost = self.price.cost(usage)
        try:
            read = read_answers(body["questions"], reply.body)
        except BackendError as exc:
            malformed = TransientError(
                "malformed",
                f"malformed response (status {reply.status}) from {self.backend.name}: {exc}",
                status=reply.status,
                body=reply.body,
                request_id=reply.request_id,
                usage=usage,
                cost_usd=cost,  # a rejected 200 is still billed
                model=reply.model,
                sent=reply.sent,
            )
            on_attempt(Attempt.failed(number, t, latency, malformed))
            self._settle(held, cost)
            raise malformed from exc
        pacer.on_success()
        # Refused questions are final for this exchange: logged as kind "refusal", returned
        # with the other answers, never retried (see harness.wire.answers).
        refused = read.refused or None
        kind: ErrorKind | None = None
        message = None
        if refused is not None:
            kind, message = "refusal", refusal_summary(refused, len(body["questions"]))
        self.answered_any = True
        answered = Attempt(
            number, t, latency, reply.status, kind, message, reply.body, reply.model, usage,
            cost, reply.request_id, read.answers, refused, reply.sent, reply.request_json,
            reply.response_json,
        )  # fmt: skip
        on_attempt(answered)
        self._settle(held, cost)
        return answered
