"""Caps, spend reservations and the early-failure breaker: what a run may still spend.

- ``admit`` is asked just before an exchange is first sent (a cache hit is not counted) and
  raises ``RequestCapReached`` once ``--max-requests`` (per invocation) is reached.
- With ``--max-cost-usd`` every ATTEMPT first takes a ``Hold`` on what it may cost; it is
  sent only if recorded cost + holds in flight + its own hold fit under the cap, else it
  waits while others hold, and the run stops when nothing is held and it still does not fit.
- ``failed`` is the breaker: if the first ``early_failure_limit`` exchanges all fail, the
  server is wrong, not unlucky.

The bound (``bound``): ONE TOKEN PER BYTE of the serialised body at the run's input price
(a byte-level BPE token covers at least one byte), and once answers come back at least the
highest cost per byte and per attempt seen (a server's prompt template is invisible to it).
Why and what it measured: docs/reliability.md ("Spend caps hold"). A spend cap with no
price is refused before the run (``harness.backends.pricing.require_price``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import anyio
import orjson

from harness.calling.limits import Limits
from harness.errors import BackendError, BudgetExhausted, RequestCapReached
from harness.progress import Counters

# Failed exchanges (each after its retries) with none answered yet before the run gives up.
EARLY_FAILURE_LIMIT = 8


class Hold(NamedTuple):
    """What one attempt in flight holds of the spend cap."""

    size: int  # the body's serialised bytes
    usd: float


class Budget:
    """One per run: counts exchanges sent, holds spend reservations, trips the breaker."""

    def __init__(
        self,
        limits: Limits,
        counters: Counters,
        price_per_million: float | None = None,
        *,
        early_failure_limit: int = EARLY_FAILURE_LIMIT,
    ) -> None:
        """``counters`` holds the run's recorded cost so far, earlier sessions included
        (the recorder adds each attempt's cost as it ends); ``price_per_million`` bounds
        each attempt's cost (None only without a spend cap: ``pricing.require_price``)."""
        self.limits = limits
        self.counters = counters
        self.price = price_per_million or 0.0
        self.early_failure_limit = early_failure_limit
        self.spending = limits.max_cost_usd is not None  # holds are taken only with a spend cap
        self.sent = 0  # exchanges sent to the server by this invocation (cache hits are not)
        self.reserved = 0.0  # held by attempts in flight
        self._held = 0
        self._cost_per_byte = 0.0  # the most an attempt has cost per body byte
        self._most = 0.0  # the most one attempt has cost
        self._answered_any = False
        self._early_failures = 0
        self._room: anyio.Event | None = None

    def admit(self) -> None:
        """Admit one more exchange to be sent under the request cap, or raise
        ``RequestCapReached``."""
        cap = self.limits.max_requests
        if cap is not None and self.sent >= cap:
            raise RequestCapReached(f"request cap reached ({cap:,} requests)")
        self.sent += 1

    @staticmethod
    def size_of(body: Mapping[str, Any]) -> int:
        """The bytes a body is sent as (what the bound counts)."""
        return len(orjson.dumps(body))

    def bound(self, size: int) -> float:
        """The most an attempt with a body of ``size`` bytes may cost (module docstring)."""
        return max(size * self.price / 1e6, size * self._cost_per_byte, self._most)

    def try_hold(self, size: int) -> Hold | None:
        """Hold one attempt's bound if it fits; None if it may fit once others end.

        Raises ``BudgetExhausted`` when nothing else is held and it still does not fit.
        """
        usd = self.bound(size)
        cap = self.limits.max_cost_usd
        assert cap is not None, "holds are taken only with a spend cap"
        if self.counters.cost_usd + self.reserved + usd <= cap:
            self.reserved += usd
            self._held += 1
            return Hold(size, usd)
        if self._held == 0:
            raise BudgetExhausted(
                f"spend cap reached: USD {self.counters.cost_usd:.6f} recorded of the cap of "
                f"USD {cap:g}, and the next request may cost up to USD {usd:.6f}"
            )
        return None

    async def hold(self, size: int) -> Hold:
        """Hold one attempt's bound, waiting while attempts in flight may make room."""
        while True:
            held = self.try_hold(size)
            if held is not None:
                return held
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    def settle(self, held: Hold, cost_usd: float | None) -> None:
        """Give a hold back once its attempt is over (its cost is recorded by then)."""
        self.reserved = max(0.0, self.reserved - held.usd)
        self._held -= 1
        if cost_usd is not None and held.size:
            self._cost_per_byte = max(self._cost_per_byte, cost_usd / held.size)
            self._most = max(self._most, cost_usd)
        if self._room is not None:
            room, self._room = self._room, None
            room.set()

    def answered(self) -> None:
        """An exchange was answered: the server works, so the breaker is off for good."""
        self._answered_any = True

    def failed(self, error: BackendError) -> str | None:
        """Count an exchange that failed after its retries; the breaker's message if it trips."""
        if self._answered_any:
            return None
        self._early_failures += 1
        if self._early_failures < self.early_failure_limit:
            return None
        # Nothing has worked yet: a wrong URL or model, not bad luck.
        return (
            f"the first {self._early_failures} requests all failed after retries, the last "
            f"with {error.kind}: {error}; check --model and --base-url (resume once the "
            "server answers)"
        )
