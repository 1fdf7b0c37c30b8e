"""The ONE retry policy: how long to wait after a failed attempt, and when to stop.

``build_retrying`` is the only place a tenacity ``AsyncRetrying`` is built. Its predicate
matches ``TransientError`` and nothing else, so cancellation, ``AuthError``, other
``BackendError``s and programming errors are never retried. ``sleep`` and ``clock`` are
injectable so that tests never wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
)
from tenacity.stop import stop_base

from harness.errors import ConfigError, TransientError

Sleep = Callable[[float], Awaitable[Any]]
Clock = Callable[[], float]


class ServerWait(Protocol):
    """Anything that may carry the server's own wait (a failure, a classification)."""

    @property
    def wait_s(self) -> float | None:
        """Seconds the server asked to wait (``Retry-After``), or None."""
        ...


@dataclass(frozen=True)
class RetrySettings:
    """How patient one exchange is. Defaults are more patient than the SDK's (2 retries,
    30 s) because a batch run would rather wait than leave a job for ``resume``."""

    max_attempts: int = 6
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
    before_sleep: Callable[[RetryCallState], Any] | None = None,
) -> AsyncRetrying:
    """The ONE tenacity policy: retry ``TransientError`` only, backoff or ``Retry-After``.

    Build one per exchange (tenacity keeps per-call state on the object). The time budget
    counts from ``start`` on ``clock`` (default: now).
    """
    rand = rng or random.Random()
    began = clock() if start is None else start

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        failure = exc if isinstance(exc, TransientError) else None
        return settings.wait_for(failure, state.attempt_number, rand)

    class OverBudget(stop_base):
        def __call__(self, state: RetryCallState) -> bool:
            # Stop BEFORE a wait that would end past the budget, measured on the injected clock.
            return clock() - began + (state.upcoming_sleep or 0.0) >= settings.budget_s

    return AsyncRetrying(
        sleep=sleep,
        stop=stop_any(stop_after_attempt(settings.max_attempts), OverBudget()),
        wait=wait,
        retry=retry_if_exception_type(TransientError),
        reraise=True,
        before_sleep=before_sleep,
    )
