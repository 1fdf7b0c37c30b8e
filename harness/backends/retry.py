"""Retry rules for HTTP backends: pure classification, ONE tenacity policy, one AIMD controller.

- ``classify(status, exc, headers)`` turns an HTTP status or a transport exception into a
  frozen ``Decision`` (retry? which log ``kind``? wait how long? stop the run?), following
  the table in ``docs/wire.md``. It does no I/O and reads no clock unless asked.
  ``error_excerpt`` says in one line what an error body says (FastAPI, OpenAI-style, HTML
  or plain text).
- ``build_retrying(settings, ...)`` is the only place a tenacity ``AsyncRetrying`` is built.
  Its predicate matches ``TransientError`` and nothing else, so cancellation, ``AuthError``
  and programming errors are never retried.
- ``RateController`` shares one additive-increase / multiplicative-decrease window between
  every request of a run: a 429 halves it and pauses the WHOLE run until the server's
  ``Retry-After``, instead of each job hammering the server on its own schedule.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import orjson
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
)
from tenacity.stop import stop_base

from harness.errors import BackendError

Sleep = Callable[[float], Awaitable[Any]]
Clock = Callable[[], float]

# Log kinds, one per row of wire.md's table (plus the two that come from the body).
RETRYABLE_KINDS = frozenset(
    {"rate_limited", "server_error", "overloaded", "timeout", "connection", "malformed"}
)


@dataclass(frozen=True)
class Decision:
    """What to do about one failed attempt."""

    retry: bool
    kind: str
    wait_s: float | None = None  # the server's own wait (Retry-After), if it gave one
    fatal: bool = False  # 401/403: every request would fail, so the run stops


class TransientError(BackendError):
    """A failed attempt worth retrying; the only exception the tenacity predicate matches."""

    def __init__(self, decision: Decision, message: str, *, status: int | None = None) -> None:
        super().__init__(decision.kind, message, status=status)
        self.decision = decision


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date).

    ``retry-after-ms`` wins when both are present (as in the official SDK). A date in the
    past gives 0; an unreadable value gives None (fall back to backoff). ``now`` is the
    current epoch time, injectable for tests.
    """
    if not headers:
        return None
    lower = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    text = lower.get("retry-after")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if math.isfinite(value):
        return max(0.0, value)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a naive parse means "-0000"
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _status_decision(status: int, headers: Mapping[str, str] | None, now: float | None) -> Decision:
    if 200 <= status < 300:
        return Decision(retry=False, kind="ok")
    if status in (401, 403):
        return Decision(retry=False, kind="auth", fatal=True)
    if status == 408:
        return Decision(retry=True, kind="timeout", wait_s=parse_retry_after(headers, now))
    if status == 429:
        return Decision(retry=True, kind="rate_limited", wait_s=parse_retry_after(headers, now))
    if status in (503, 529):
        return Decision(retry=True, kind="overloaded", wait_s=parse_retry_after(headers, now))
    if 500 <= status < 600:
        return Decision(retry=True, kind="server_error", wait_s=parse_retry_after(headers, now))
    if 300 <= status < 400:
        # httpx does not follow redirects for a POST; the base URL is wrong, not the request.
        return Decision(retry=False, kind="redirect")
    if 400 <= status < 500:
        return Decision(retry=False, kind="http_4xx")
    return Decision(retry=False, kind="malformed")


def classify(
    status: int | None,
    exc: BaseException | None,
    headers: Mapping[str, str] | None = None,
    *,
    now: float | None = None,
) -> Decision:
    """Classify one attempt's outcome: an HTTP ``status`` (with its headers) or an exception.

    Exceptions are matched by explicit type only: httpx timeouts and ``TimeoutError`` (from
    ``anyio.fail_after``) are "timeout", other httpx transport errors "connection", a body
    that is not JSON "malformed"; a ``BackendError`` keeps its own kind. Anything else,
    cancellation included, is not retried.
    """
    if exc is not None:
        if isinstance(exc, TransientError):
            return exc.decision
        if isinstance(exc, BackendError):
            fatal = exc.kind == "auth"
            return Decision(
                retry=exc.kind in RETRYABLE_KINDS and not fatal, kind=exc.kind, fatal=fatal
            )
        if isinstance(exc, httpx.TimeoutException | TimeoutError):
            return Decision(retry=True, kind="timeout")
        if isinstance(exc, httpx.UnsupportedProtocol):
            return Decision(retry=False, kind="connection")  # e.g. a base URL without http://
        if isinstance(exc, httpx.TransportError | ConnectionError):
            return Decision(retry=True, kind="connection")
        if isinstance(exc, orjson.JSONDecodeError):
            return Decision(retry=True, kind="malformed")
        if isinstance(exc, orjson.JSONEncodeError | TypeError):
            return Decision(retry=False, kind="bad_body")
        return Decision(retry=False, kind="unexpected")
    if status is None:
        return Decision(retry=False, kind="unexpected")
    return _status_decision(status, headers, now)


# What a failed response says, in one line for the log and the exception message.

EXCERPT_CHARS = 300  # wire.md: keep the first few hundred characters of an error body


def _html_title(text: str) -> str | None:
    match = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
    return " ".join(match.group(1).split())[:100] if match else None


def _detail_text(detail: Any) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, Mapping):  # TypeSafe: {"error_type": ..., "message": ...}
        kind = detail.get("error_type") or detail.get("type") or detail.get("code")
        message = detail.get("message") or detail.get("msg")
        if message is not None:
            return f"{kind}: {message}" if kind else str(message)
    if isinstance(detail, list):  # FastAPI validation list
        parts = []
        for item in detail[:5]:
            if isinstance(item, Mapping):
                loc = ".".join(str(p) for p in item.get("loc") or ())
                parts.append(f"{loc}: {item.get('msg')}" if loc else str(item.get("msg")))
            else:
                parts.append(str(item))
        return "; ".join(parts)
    return orjson.dumps(detail).decode()


def error_excerpt(status: int, content_type: str, text: str) -> str:
    """A one-line summary of an error body: FastAPI, OpenAI-style, HTML or plain text."""
    stripped = text.strip()
    head = stripped[:200].lower()
    if "html" in content_type.lower() or head.startswith(("<!doctype html", "<html")):
        title = _html_title(stripped)
        return f"HTML error page (status {status})" + (f": {title}" if title else "")
    summary: str | None = None
    try:
        parsed = orjson.loads(stripped) if stripped else None
    except orjson.JSONDecodeError:
        parsed = None
    if isinstance(parsed, Mapping):
        if "detail" in parsed:
            summary = _detail_text(parsed["detail"])
        elif "error" in parsed:
            error = parsed["error"]
            summary = _detail_text(error if not isinstance(error, Mapping) else dict(error))
    if summary is None:
        summary = stripped or "(empty body)"
    summary = " ".join(summary.split())
    return summary if len(summary) <= EXCERPT_CHARS else summary[: EXCERPT_CHARS - 3] + "..."


@dataclass(frozen=True)
class RetrySettings:
    """How patient one call is. Defaults are more patient than the SDK's (2 retries, 30 s)
    because a batch run would rather wait than leave a job for ``resume``."""

    max_attempts: int = 6
    budget_s: float = 120.0  # total time for one call, waits included
    initial_wait_s: float = 0.5
    max_wait_s: float = 8.0
    jitter: float = 0.25  # +-25% of the backoff, as the SDK does
    max_retry_after_s: float = 60.0  # ignore absurd server waits beyond this

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1; got {self.max_attempts}")
        if self.budget_s <= 0 or self.initial_wait_s < 0 or self.max_wait_s < 0:
            raise ValueError("budget_s must be positive and waits must not be negative")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff after failed attempt number ``attempt`` (1-based), jittered."""
        base = min(self.max_wait_s, self.initial_wait_s * 2.0 ** max(0, attempt - 1))
        return max(0.0, base * (1.0 + self.jitter * (2.0 * rng.random() - 1.0)))

    def wait_for(self, decision: Decision | None, attempt: int, rng: random.Random) -> float:
        """The wait before the next attempt: the server's ``Retry-After`` if any, else backoff."""
        if decision is not None and decision.wait_s is not None:
            return min(decision.wait_s, self.max_retry_after_s)
        return self.backoff(attempt, rng)


def build_retrying(
    settings: RetrySettings,
    *,
    sleep: Sleep = anyio.sleep,
    clock: Clock = time.monotonic,
    rng: random.Random | None = None,
    before_sleep: Callable[[RetryCallState], Any] | None = None,
) -> AsyncRetrying:
    """The ONE tenacity policy: retry ``TransientError`` only, backoff or ``Retry-After``.

    Build one per call (tenacity keeps per-call state on the object). ``sleep`` and
    ``clock`` are injectable so tests never wait; the budget counts from this call.
    """
    rand = rng or random.Random()
    start = clock()

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        decision = exc.decision if isinstance(exc, TransientError) else None
        return settings.wait_for(decision, state.attempt_number, rand)

    class OverBudget(stop_base):
        def __call__(self, state: RetryCallState) -> bool:
            # Stop BEFORE a wait that would end past the budget, measured on the injected clock.
            return clock() - start + (state.upcoming_sleep or 0.0) >= settings.budget_s

    return AsyncRetrying(
        sleep=sleep,
        stop=stop_any(stop_after_attempt(settings.max_attempts), OverBudget()),
        wait=wait,
        retry=retry_if_exception_type(TransientError),
        reraise=True,
        before_sleep=before_sleep,
    )


class RateController:
    """AIMD concurrency window plus a run-wide "not before" pause, shared by all requests.

    ``limit`` is the number of attempts allowed in flight now. A 429 halves it (not below 1)
    at most once per window generation, so a burst of 429s from requests already in flight
    counts as one signal, as in TCP; each success adds ``increase`` back, up to
    ``max_limit``. ``Retry-After`` moves a shared "not before" time that every new attempt
    waits for.
    """

    def __init__(
        self,
        max_limit: int,
        *,
        increase: float = 1.0,
        default_pause_s: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        if max_limit < 1:
            raise ValueError(f"concurrency must be at least 1; got {max_limit}")
        self.max_limit = max_limit
        self.increase = increase
        self.default_pause_s = default_pause_s
        self._clock = clock
        self._sleep = sleep
        self._window = float(max_limit)
        self._generation = 0
        self.not_before = 0.0
        self._limiter: anyio.CapacityLimiter | None = None

    @property
    def limit(self) -> int:
        """Attempts allowed in flight now (the scheduler may read it for its progress line)."""
        return max(1, int(self._window))

    @property
    def generation(self) -> int:
        """Bumped by every decrease; an attempt reports the generation it started in."""
        return self._generation

    def pause_remaining(self) -> float:
        """Seconds until new attempts may start (0 when not paused)."""
        return max(0.0, self.not_before - self._clock())

    def on_success(self) -> None:
        """Additive increase after a successful exchange."""
        self._window = min(float(self.max_limit), self._window + self.increase)
        self._sync()

    def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Multiplicative decrease and a run-wide pause after a 429 from ``generation``."""
        pause = self.default_pause_s if wait_s is None else wait_s
        self.not_before = max(self.not_before, self._clock() + pause)
        if generation == self._generation:
            self._window = max(1.0, self._window / 2.0)
            self._generation += 1
            self._sync()

    def _sync(self) -> None:
        if self._limiter is not None and self._limiter.total_tokens != self.limit:
            # Lowering total_tokens revokes nothing in flight; raising it wakes waiters.
            self._limiter.total_tokens = self.limit

    async def _wait_pause(self) -> None:
        # Sleep again only if a new 429 moved the pause while we slept; this also keeps an
        # injected no-op sleep (tests) from spinning until the real clock catches up.
        seen = None
        while (delay := self.pause_remaining()) > 0 and self.not_before != seen:
            seen = self.not_before
            await self._sleep(delay)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        """Hold one of ``limit`` slots, after any run-wide pause; yields the generation.

        Re-entrant within a task: when the scheduler uses this controller as its gate and
        the backend asks again for the same request, the inner call only waits out any
        pause, so one request never holds two slots (or deadlocks at a limit of 1).
        """
        held = _HELD.get()
        if self in held:
            await self._wait_pause()
            yield self._generation
            return
        if self._limiter is None:  # created lazily: anyio primitives want a running loop
            self._limiter = anyio.CapacityLimiter(self.limit)
        async with self._limiter:
            token = _HELD.set(held | {self})
            try:
                await self._wait_pause()
                yield self._generation
            finally:
                _HELD.reset(token)


# The controllers whose slot the current task holds (a task-local set, as anyio tasks copy
# the context when they start).
_HELD: ContextVar[frozenset[RateController]] = ContextVar("rate_slots_held", default=frozenset())
