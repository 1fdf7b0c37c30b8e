"""The ONE pacing object of a run: an AIMD window, ``--rps``, and the server's ``Retry-After``.

Every attempt, first or retry, takes a place here before it is sent and gives it back when
its reply (or failure) is in. Three things can hold it back:

- the window: attempts in flight, at most ``limit``. A 429 halves it (not below 1) at most
  once per window generation, so a burst of 429s from attempts already in flight counts as
  one signal, as in TCP; each success adds one back, up to ``max_limit``.
- a run-wide pause: a 429's ``Retry-After`` moves a shared "not before" time that every new
  attempt waits for, instead of each job hammering the server on its own schedule.
- the pace: with ``rps``, attempts start at least ``1/rps`` seconds apart.

What bounds 429s is a run-wide ceiling on the time they paused the run (``max_wait_s``,
``--max-wait-seconds``; docs/reliability.md): ``waited_s`` is the length of the union of the
pauses (64 attempts told to wait the same second count one second).

While none of them applies (an in-process model, or a server that never says 429),
``try_acquire`` takes a place without awaiting anything: the common path costs a comparison.
"""

from __future__ import annotations

import math
import time
from collections import deque

import anyio

from harness.calling.policy import Clock, Sleep


class Pacer:
    """Admits attempts into flight; fed by the caller with every success and every 429."""

    def __init__(
        self,
        max_limit: int,
        *,
        rps: float | None = None,
        default_pause_s: float = 1.0,
        max_wait_s: float | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = anyio.sleep,
    ) -> None:
        """``max_wait_s``: the ceiling on the time 429s may pause the run (None: none)."""
        if max_limit < 1:
            raise ValueError(f"concurrency must be at least 1; got {max_limit}")
        self.max_limit = max_limit
        self.default_pause_s = default_pause_s
        self.interval = 1.0 / rps if rps else 0.0
        self.not_before = 0.0  # on ``clock``: no attempt starts before this
        self.max_wait_s = max_wait_s
        self.waited_s = 0.0  # how long 429s have paused the run (the union of the pauses)
        self.exhausted: str | None = None  # why the run must stop rather than wait on
        self._clock = clock
        self._sleep = sleep
        self._window = float(max_limit)
        self.limit = max_limit  # attempts allowed in flight now
        # Bumped by every decrease; an attempt reports the generation it started in.
        self.generation = 0
        self.in_flight = 0  # attempts holding a place now
        self._next_start = -math.inf  # the pace's next free start time
        self._waiters: deque[anyio.Event] = deque()

    def pause_remaining(self) -> float:
        """Seconds until new attempts may start (0 when not paused)."""
        return max(0.0, self.not_before - self._clock())

    def on_success(self) -> None:
        """Additive increase after an answered attempt."""
        if self._window < self.max_limit:
            self._window = min(float(self.max_limit), self._window + 1.0)
            self._set_limit()

    def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Multiplicative decrease and a run-wide pause after a 429 from ``generation``."""
        pause = self.default_pause_s if wait_s is None else wait_s
        now = self._clock()
        until = max(self.not_before, now + pause)
        added = until - max(self.not_before, now)  # only what extends the current pause
        ceiling = self.max_wait_s
        if ceiling is not None and self.waited_s + added > ceiling:
            self.exhausted = (
                f"429 replies have paused the run {self.waited_s:.0f} s and the server asks "
                f"for {pause:g} s more, past the ceiling of {ceiling:g} s (--max-wait-seconds)"
            )
        else:
            self.waited_s += added
            self.not_before = until
        if generation == self.generation:
            self._window = max(1.0, self._window / 2.0)
            self.generation += 1
            self._set_limit()

    def try_acquire(self) -> int | None:
        """Take a place at once if nothing holds attempts back; the generation, else None."""
        if self.in_flight < self.limit and not self.interval and not self.not_before:
            self.in_flight += 1
            return self.generation
        return None

    async def acquire(self) -> int:
        """Take a place: wait for room in the window, then any pause and the pace."""
        while self.in_flight >= self.limit:
            woken = anyio.Event()
            self._waiters.append(woken)
            try:
                await woken.wait()
            except BaseException:
                if woken.is_set():
                    self._wake()  # pass the wake-up on: this attempt will not use it
                else:
                    self._waiters.remove(woken)
                raise
        self.in_flight += 1
        try:
            if self.not_before:
                await self._wait_pause()
            if self.interval:
                await self._pace()
        except BaseException:
            self.release()
            raise
        return self.generation

    def release(self) -> None:
        """Give a place back (after the attempt's reply or failure)."""
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _set_limit(self) -> None:
        self.limit = max(1, int(self._window))
        if self._waiters:
            self._wake()  # a larger window lets waiters in; a smaller one revokes nothing

    def _wake(self) -> None:
        room = self.limit - self.in_flight
        while room > 0 and self._waiters:
            self._waiters.popleft().set()
            room -= 1

    async def _wait_pause(self) -> None:
        # Sleep again only if a new 429 moved the pause while we slept; this also keeps an
        # injected no-op sleep (tests) from spinning until the real clock catches up.
        seen = None
        while (delay := self.pause_remaining()) > 0 and self.not_before != seen:
            seen = self.not_before
            await self._sleep(delay)

    async def _pace(self) -> None:
        now = self._clock()
        start = max(now, self._next_start)
        self._next_start = start + self.interval
        if start > now:
            await self._sleep(start - now)
