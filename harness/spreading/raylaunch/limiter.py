"""The run-wide rate limit of a Ray run: one ``RateLimiter`` actor, a ``RemotePacer`` per shard.

When many machines share one API key, only a coordinator sees the key's real limit. Here
the coordinator is one Ray actor holding the run's ``Pacer`` (AIMD window, ``--rps`` and
the server's ``Retry-After`` pause, all run-wide); every shard's caller asks it before each
attempt through a ``RemotePacer`` and reports each success and each 429 back. It counts
the places each shard holds, so that a shard lost with its node gives them back
(``forget``) instead of shrinking the window for the rest of the run.
"""

from __future__ import annotations

from typing import Any

from harness.calling import Pacer

# One limiter serves every shard's attempts at once; each waiting acquire holds a slot.
LIMITER_CONCURRENCY = 100_000


class RateLimiter:
    """The run-wide pacer, as a Ray async actor (its methods run on the actor's event loop)."""

    def __init__(self, max_limit: int, rps: float | None) -> None:
        self.max_limit = max_limit
        self.rps = rps
        self._pacer: Pacer | None = None
        self.acquired = 0  # attempts admitted (for the launcher's report and the tests)
        self.rate_limited = 0
        self._held: dict[str, int] = {}  # places held by each shard (its owner name)
        self._forgotten: set[str] = set()  # shards lost: what they are still granted goes back

    def _get(self) -> Pacer:
        if self._pacer is None:  # made on the actor's loop, where its events will wait
            self._pacer = Pacer(self.max_limit, rps=self.rps)
        return self._pacer

    async def acquire(self, owner: str = "") -> int:
        """A place in the run-wide window for ``owner``, after any pause and the pace; its
        generation."""
        pacer = self._get()
        generation = await pacer.acquire()
        self.acquired += 1
        if owner in self._forgotten:  # granted to a shard already lost: back at once
            pacer.release()
        else:
            self._held[owner] = self._held.get(owner, 0) + 1
        return generation

    async def release(self, after: object = None, owner: str = "") -> None:
        """Give a place of ``owner``'s back. ``after``: an acquire's reference, which Ray
        resolves first (a shard that stopped waiting gives back the place its acquire will
        still get)."""
        held = self._held.get(owner, 0)
        if held <= 0:
            return  # forgotten already (its shard was lost)
        self._held[owner] = held - 1
        self._get().release()

    async def forget(self, owner: str) -> int:
        """``owner`` was lost: give back every place it held (and any it is yet granted);
        how many."""
        self._forgotten.add(owner)
        held = self._held.pop(owner, 0)
        for _ in range(held):
            self._get().release()
        return held

    async def on_success(self) -> None:
        """Additive increase."""
        self._get().on_success()

    async def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Halve the run-wide window and pause every shard."""
        self.rate_limited += 1
        self._get().on_rate_limited(generation, wait_s)

    async def state(self) -> dict[str, Any]:
        """The window, pause and counts now."""
        pacer = self._get()
        return {
            "limit": pacer.limit,
            "generation": pacer.generation,
            "in_flight": pacer.in_flight,
            "pause_s": pacer.pause_remaining(),
            "acquired": self.acquired,
            "rate_limited": self.rate_limited,
        }


class RemotePacer(Pacer):
    """A shard's pacer that asks the run's ``RateLimiter`` actor (``limiter``: anything whose
    methods' ``.remote(...)`` return awaitables) as ``owner``; releases and reports are not
    waited for."""

    def __init__(self, limiter: Any, max_limit: int, owner: str = "") -> None:
        super().__init__(max_limit)
        self._limiter = limiter
        self._owner = owner

    def try_acquire(self) -> int | None:
        """Never at once: every attempt asks the coordinator."""
        return None

    async def acquire(self) -> int:
        """A place from the coordinator (waits for the run-wide window, pause and pace)."""
        ref = self._limiter.acquire.remote(self._owner)
        try:
            generation = int(await ref)
        except BaseException:
            # Cancelled while waiting: the coordinator will still grant the place; give it
            # back once it has (Ray runs the release after ``ref`` resolves).
            self._limiter.release.remote(ref, self._owner)
            raise
        self.in_flight += 1
        return generation

    def release(self) -> None:
        """Give the place back to the coordinator."""
        self.in_flight -= 1
        self._limiter.release.remote(None, self._owner)

    def on_success(self) -> None:
        """Tell the coordinator."""
        self._limiter.on_success.remote()

    def on_rate_limited(self, generation: int, wait_s: float | None) -> None:
        """Tell the coordinator: it halves the run-wide window and pauses every shard."""
        self._limiter.on_rate_limited.remote(generation, wait_s)
