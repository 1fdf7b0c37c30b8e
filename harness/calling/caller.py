"""The Caller: between the scheduler and a backend, the same for every backend.

As Inspect's ``Model`` wraps a ``ModelAPI``: the backend makes ONE attempt and classifies
its own failures; the caller

- takes a place from the run's ``Pacer`` for every attempt and gives it back, feeding it
  each success and each 429 (with the server's ``Retry-After``);
- times every attempt on its own (start time and latency, no waits included);
- validates the answers of a reply with ``read_answers`` before anything reads them, so a
  malformed answer is a retryable ``TransientError("malformed")`` for every backend, and
  its billed usage and cost are still recorded; a refused question (the model declined it)
  is not malformed: the attempt is answered, logged with kind ``refusal``, and not retried;
- prices a reply that carries no cost with the run's price per million input tokens;
- hands every ``Attempt``, failed or answered, to ``on_attempt`` as soon as it is over (the
  scheduler writes it to the log at once, so an attempt is never lost in a buffer);
- retries ``TransientError`` under the ONE tenacity policy (``policy.build_retrying``).

The first attempt is a plain await: the tenacity loop (tens of microseconds to build) is
entered only after a failure, so an answered exchange costs no more than one attempt.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, cast

import anyio

from harness.backends.base import Backend
from harness.calling.attempt import Attempt
from harness.calling.pacing import Pacer
from harness.calling.policy import Clock, RetrySettings, Sleep, build_retrying
from harness.errors import BackendError, TransientError
from harness.wire.answers import read_answers, refusal_summary
from runfolder import ErrorKind, Usage

OnAttempt = Callable[[Attempt], None]


class Caller:
    """Asks one backend for one exchange's answers, attempt by attempt."""

    def __init__(
        self,
        backend: Backend,
        pacer: Pacer,
        retry: RetrySettings | None = None,
        *,
        price_per_million: float | None = None,
        sleep: Sleep = anyio.sleep,
        clock: Clock = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        """``sleep``, ``clock`` and ``rng`` drive the retry waits (injected in tests)."""
        self.backend = backend
        self.pacer = pacer
        self.retry = retry or RetrySettings()
        self.price = price_per_million
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()

    def describe(self) -> dict[str, Any]:
        """The retry policy, for the manifest."""
        return asdict(self.retry)

    async def call(self, body: Mapping[str, Any], on_attempt: OnAttempt) -> Attempt:
        """The answered attempt of one exchange (its ``answers`` validated; ``refused``
        holds any question the model declined).

        Every attempt goes to ``on_attempt`` as it ends. Raises the last attempt's
        ``BackendError`` when no attempt was answered within the retry policy.
        """
        started = self._clock()
        try:
            return await self._attempt(body, 1, on_attempt)
        except TransientError as error:
            if self.retry.max_attempts == 1:
                raise
            first = error
        # Outside the except block, so that later failures do not chain onto the first.
        return await self._retry(body, on_attempt, first, started)

    async def _retry(
        self, body: Mapping[str, Any], on_attempt: OnAttempt, first: TransientError, start: float
    ) -> Attempt:
        retrying = build_retrying(
            self.retry, sleep=self._sleep, clock=self._clock, rng=self._rng, start=start
        )
        pending: TransientError | None = first
        async for attempt in retrying:
            with attempt:
                if pending is not None:  # the policy sees the first failure like any other
                    error, pending = pending, None
                    raise error
                return await self._attempt(body, attempt.retry_state.attempt_number, on_attempt)
        raise AssertionError("unreachable: tenacity returns or raises")

    async def _attempt(
        self, body: Mapping[str, Any], number: int, on_attempt: OnAttempt
    ) -> Attempt:
        pacer = self.pacer
        generation = pacer.try_acquire()
        if generation is None:
            generation = await pacer.acquire()
        t = time.time()
        t0 = time.perf_counter()
        try:
            reply = await self.backend.answer(body)
        except BackendError as error:
            latency = (time.perf_counter() - t0) * 1000.0
            pacer.release()
            if error.kind == "rate_limited":
                pacer.on_rate_limited(generation, error.wait_s)
            on_attempt(Attempt.failed(number, t, latency, error))
            raise
        except BaseException:
            pacer.release()
            raise
        latency = (time.perf_counter() - t0) * 1000.0
        pacer.release()
        usage = cast("Usage | None", reply.usage or None)
        cost = reply.cost_usd
        if cost is None and self.price is not None:
            cost = (usage.get("input_tokens", 0) if usage else 0) * self.price / 1e6
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
            raise malformed from exc
        pacer.on_success()
        # Refused questions are final for this exchange: logged as kind "refusal", returned
        # with the other answers, never retried (see harness.wire.answers).
        refused = read.refused or None
        kind: ErrorKind | None = None
        message = None
        if refused is not None:
            kind, message = "refusal", refusal_summary(refused, len(body["questions"]))
        answered = Attempt(
            number, t, latency, reply.status, kind, message, reply.body, reply.model, usage,
            cost, reply.request_id, read.answers, refused, reply.sent,
        )  # fmt: skip
        on_attempt(answered)
        return answered
