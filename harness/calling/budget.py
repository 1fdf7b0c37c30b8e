"""Caps, cost reservation and the early-failure breaker: what a run may still spend.

``reserve`` is asked before every exchange and raises ``BudgetExhausted`` once a cap says
stop; the run then ends cleanly and ``resume`` can continue it. With a spend cap, each
exchange in flight reserves what it may cost, so that requests sent together cannot
overshoot the cap: the most a request of its size has cost so far, or the price's estimate
(about three bytes of body a token). ``failed`` is the breaker: if the first
``early_failure_limit`` exchanges all fail, the server is wrong, not unlucky.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from harness.calling.limits import Limits
from harness.errors import BackendError, BudgetExhausted
from harness.progress import Counters

# Failed exchanges (each after its retries) with none answered yet before the run gives up.
EARLY_FAILURE_LIMIT = 8


class Reservation(NamedTuple):
    """What one exchange in flight holds of the spend cap."""

    size: int  # the body's serialised bytes (0 without a spend cap)
    usd: float


_NOTHING = Reservation(0, 0.0)


class Budget:
    """One per run: counts exchanges sent, holds reservations, and trips the breaker."""

    def __init__(
        self,
        limits: Limits,
        counters: Counters,
        price_per_million: float | None = None,
        *,
        early_failure_limit: int = EARLY_FAILURE_LIMIT,
    ) -> None:
        """``counters`` holds the run's recorded cost so far, earlier sessions included."""
        self.limits = limits
        self.counters = counters
        self.price = price_per_million
        self.early_failure_limit = early_failure_limit
        self.sent = 0  # exchanges started by this invocation
        self._reserved = 0.0
        self._cost_per_byte = 0.0
        self._answered_any = False
        self._early_failures = 0

    def reserve(self, body: Mapping[str, Any]) -> Reservation:
        """Admit one more exchange, or raise ``BudgetExhausted`` naming the cap."""
        limits = self.limits
        if limits.max_requests is not None and self.sent >= limits.max_requests:
            raise BudgetExhausted(f"request cap reached ({limits.max_requests:,} requests)")
        reservation = _NOTHING
        if limits.max_cost_usd is not None:
            size = len(orjson.dumps(body))  # the bytes sent, as the server counts them
            estimate = size / 3 * (self.price or 0.0) / 1e6
            usd = max(estimate, self._cost_per_byte * size)
            if self.counters.cost_usd + self._reserved + usd > limits.max_cost_usd:
                raise BudgetExhausted(f"spend cap reached (USD {limits.max_cost_usd:g})")
            self._reserved += usd
            reservation = Reservation(size, usd)
        self.sent += 1
        return reservation

    def release(self, reservation: Reservation, cost_usd: float | None) -> None:
        """Give a reservation back once its exchange is over (its cost is then recorded)."""
        if reservation is _NOTHING:
            return
        self._reserved -= reservation.usd
        if cost_usd is not None and reservation.size:
            self._cost_per_byte = max(self._cost_per_byte, cost_usd / reservation.size)

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
