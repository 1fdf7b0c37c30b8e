"""The ONE retry policy: how long to wait after a failed attempt, and when to stop.

``build_retrying`` is the only place a tenacity ``AsyncRetrying`` is built. Its predicate
matches ``TransientError`` and nothing else, so cancellation, ``AuthError``, other
``BackendError``s and programming errors are never retried. ``sleep`` and ``clock`` are
injectable so that tests never wait.

Two rules beyond attempts and time:

- A 429 says "slow down", not "this request is bad": it is retried after the server's wait
  and never counts toward ``max_attempts``, nor does its wait count toward ``budget_s``. The
  run-wide ceiling on such waits is the pacer's (``Pacer.max_wait_s``).
- While nothing has been answered yet (``probing``), the policy is ``probe()``: three attempts
  and short waits. A wrong ``--base-url`` (nothing listening, an HTML page) then trips the
  early-failure breaker within seconds instead of after minutes of patient retries; once
  any exchange is answered the full policy applies, to retries already under way too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type
from tenacity.stop import stop_base

from harness.backends.base import DEFAULT_MAX_ATTEMPTS
from harness.errors import ConfigError, TransientError

Sleep = Callable[[float], Awaitable[Any]]
Clock = Callable[[], float]


class ServerWait(Protocol):
    """Anything that may carry the server's own wait (a failure, a classification)."""

    @property
    def wait_s(self) -> float | None:
        """Seconds the server asked to wait (``Retry-After``), or None."""
        ...


PROBE_ATTEMPTS = 3  # attempts per exchange before anything was answered
PROBE_BUDGET_S = 10.0
PROBE_MAX_WAIT_S = 1.0


def rate_limited(error: BaseException | None) -> bool:
    """Whether a failure is a 429 (retried without counting as an attempt)."""
    return isinstance(error, TransientError) and error.kind == "rate_limited"


@dataclass(frozen=True)
class RetrySettings:
    """How patient one exchange is. Defaults are more patient than the SDK's (2 retries,
    30 s) because a batch run would rather wait than leave a job for ``resume``."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    budget_s: float = 120.0  # total time for one exchange, waits included
    initial_wait_s: float = 0.5
    max_wait_s: float = 8.0
    jitter: float = 0.25  # +-25% of the backoff, as the SDK does
    max_retry_after_s: float = 60.0  # ignore absurd server waits beyond this

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1; got {self.max_attempts}")
        if self.budget_s <= 0 or self.initial_wait_s < 0 or self.max_wait_s < 0:
            raise ConfigError("budget_s must be positive and waits must not be negative")

    def probe(self) -> RetrySettings:
        """The policy while no exchange has been answered yet (module docstring)."""
        return replace(
            self,
            max_attempts=min(self.max_attempts, PROBE_ATTEMPTS),
            budget_s=min(self.budget_s, PROBE_BUDGET_S),
            initial_wait_s=min(self.initial_wait_s, PROBE_MAX_WAIT_S),
            max_wait_s=min(self.max_wait_s, PROBE_MAX_WAIT_S),
        )

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff after failed attempt number ``attempt`` (1-based), jittered."""
        base = min(self.max_wait_s, self.initial_wait_s * 2.0 ** max(0, attempt - 1))
        return max(0.0, base * (1.0 + self.jitter * (2.0 * rng.random() - 1.0)))

    def wait_for(self, failure: ServerWait | None, attempt: int, rng: random.Random) -> float:
        """The wait before the next attempt: the server's ``Retry-After`` if any, else backoff."""
        if failure is not None and failure.wait_s is not None:
            return min(failure.wait_s, self.max_retry_after_s)
        return self.backoff(attempt, rng)


def build_retrying(
    settings: RetrySettings,
    *,
    sleep: Sleep = anyio.sleep,
    clock: Clock = time.monotonic,
    rng: random.Random | None = None,
    start: float | None = None,
    probing: Callable[[], bool] | None = None,
    paused: Callable[[], float] | None = None,
) -> AsyncRetrying:
    """The ONE tenacity policy: retry ``TransientError`` only, backoff or ``Retry-After``;
    one per exchange (tenacity keeps per-call state). The time budget counts from ``start``
    on ``clock``, less 429 waits and what ``paused`` reports (the exchange's waits in the
    pacer); while ``probing()`` (nothing answered yet) the ``probe()`` policy applies."""
    rand = rng or random.Random()
    began = clock() if start is None else start
    counted = 0  # failed attempts other than 429s
    rate_waits = 0.0  # seconds of waits after 429s, not charged to the budget

    def current() -> RetrySettings:
        return settings.probe() if probing is not None and probing() else settings

    # tenacity calls ``wait`` and then ``stop`` once after every failed attempt.
    def wait(state: RetryCallState) -> float:
        nonlocal counted, rate_waits
        exc = state.outcome.exception() if state.outcome is not None else None
        failure = exc if isinstance(exc, TransientError) else None
        if rate_limited(failure):
            delay = current().wait_for(failure, max(counted, 1), rand)
            rate_waits += delay
            return delay
        counted += 1
        return current().wait_for(failure, counted, rand)

    class Exhausted(stop_base):
        def __call__(self, state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome is not None else None
            if rate_limited(exc):
                return False  # the pacer's run-wide ceiling bounds 429s, not the exchange
            limits = current()
            # Stop BEFORE a wait that would end past the budget, measured on the injected clock.
            elsewhere = rate_waits + (paused() if paused is not None else 0.0)
            spent = clock() - began - elsewhere + (state.upcoming_sleep or 0.0)
            return counted >= limits.max_attempts or spent >= limits.budget_s

    return AsyncRetrying(
        sleep=sleep,
        stop=Exhausted(),
        wait=wait,
        retry=retry_if_exception_type(TransientError),
        reraise=True,
    )
