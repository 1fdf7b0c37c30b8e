"""The run's stop switch: once thrown, no attempt starts and every wait ends at once.

A run stops for a cap, a fatal error, or a signal. What is already sent is left to finish
(its reply is recorded; an interrupted session bounds that with ``--drain-seconds``), but
nothing new may go out: ``Caller`` checks ``stopping`` before every attempt, and each place
an attempt can wait (for a place in the pacer's window, a ``Retry-After``, a backoff, room
under the spend cap) waits inside ``waiting()``, whose cancel scope ``stop`` cancels. Such an
attempt raises ``Stopping``; the scheduler leaves its job pending for ``resume``.

Only waits take a cancel scope; an attempt that starts at once costs one attribute check.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio

from harness.errors import Stopping


class StopSwitch:
    """Thrown once per run; ``reason`` says why."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def stopping(self) -> bool:
        """True once the run stops sending."""
        return self.reason is not None

    def stop(self, reason: str) -> None:
        """Stop sending (the first reason is kept) and end every wait in progress."""
        if self.reason is None:
            self.reason = reason
        for scope in list(self._scopes):
            scope.cancel()

    def check(self) -> None:
        """Raise ``Stopping`` if the run is stopping."""
        if self.reason is not None:
            raise Stopping(self.reason)

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """A wait that ``stop`` ends at once, raising ``Stopping``.

        A wait whose wake-up was already due when the switch was thrown may end normally;
        callers check ``stopping`` again before sending (``Caller._admit``).
        """
        self.check()
        with anyio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                yield
            finally:
                self._scopes.discard(scope)
        if scope.cancelled_caught:
            raise Stopping(self.reason or "stopping")
