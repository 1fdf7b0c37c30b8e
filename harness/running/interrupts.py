"""Ctrl-C and SIGTERM during a session: stop sending, drain what is in flight, then stop.

A request already sent is paid for, so the first signal stops the run (``Scheduler.stop``)
and lets the attempts in flight finish for up to ``drain_s`` seconds, each reply recorded;
only then, or at a second signal, are the rest cut off (``abandoned``: what a resume may pay
for again). One ``Interrupts`` serves one invocation (a run, a resume, a whole comparison):
``watching`` installs the handlers once around it (main thread only; the ones before come
back after), and each session ``attach``-es the scheduler now sending, so a signal between
two cells stops the comparison before the next cell sends anything.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

import anyio

from harness.errors import ConfigError
from harness.running.scheduler import Scheduler

DRAIN_S = 5.0  # default --drain-seconds: a few of the longest replies seen in practice
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Interrupts:
    """What Ctrl-C and SIGTERM did to one invocation (``signum`` None: none came)."""

    drain_s: float = DRAIN_S  # how long the attempts in flight may finish after the first
    signum: int | None = None
    received: int = 0  # signals so far: the second cuts off what is in flight
    in_flight: int = 0  # attempts in flight in the attached session at the first signal
    _session: tuple[Scheduler, anyio.CancelScope] | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)  # the attached session is stopped
    _watched: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if not self.drain_s >= 0:  # also NaN
            raise ConfigError(f"--drain-seconds must be >= 0; got {self.drain_s}")

    @property
    def name(self) -> str:
        """The first signal's name (``SIGINT``, ``SIGTERM``)."""
        return signal.Signals(self.signum or signal.SIGINT).name

    def receive(self, signum: int) -> None:
        """Handle one signal: the first stops the attached session, the second cuts it off."""
        self.received += 1
        if self.signum is None:
            self.signum = int(signum)
        self._apply()

    @contextmanager
    def attach(self, scheduler: Scheduler, hard: anyio.CancelScope) -> Iterator[None]:
        """Make ``scheduler`` the session a signal stops; ``hard`` is the cancel scope around
        it, cancelled when the drain ends. A signal that came before is applied at once."""
        self._session, self._stopped = (scheduler, hard), False
        try:
            self._apply()
            yield
        finally:
            self._session = None

    def _apply(self) -> None:
        if self._session is None or self.signum is None:
            return  # nothing sending: the caller checks ``signum`` before it sends again
        scheduler, hard = self._session
        if not self._stopped:
            self._stopped = True
            self.in_flight = scheduler.caller.sending
            scheduler.stop(f"interrupted by {self.name}")
            hard.deadline = anyio.current_time() + self.drain_s
        if self.received > 1:
            hard.cancel()  # a second signal: stop at once


def can_watch() -> bool:
    """Whether this thread may install signal handlers (only the main thread may)."""
    return threading.current_thread() is threading.main_thread()


@asynccontextmanager
async def watching(interrupts: Interrupts | None) -> AsyncIterator[None]:
    """Turn SIGINT and SIGTERM into ``interrupts.receive`` for the duration of the block.

    Nothing when ``interrupts`` is None, already watched (a comparison watches around its
    cells' sessions) or off the main thread. The handlers are in place before the block
    runs; the ones before come back after it.
    """
    if interrupts is None or interrupts._watched or not can_watch():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    try:
        async with feeding(interrupts, *SIGNALS):
            interrupts._watched = True
            try:
                yield
            finally:
                interrupts._watched = False
    finally:
        # asyncio puts back the defaults (SIG_DFL for SIGTERM: a silent death), not these.
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)


@asynccontextmanager
async def feeding(
    interrupts: Interrupts, *signals: signal.Signals, unblock: bool = False
) -> AsyncIterator[None]:
    """Each of ``signals`` fed to ``interrupts.receive`` while the block runs (``watching``,
    and a pool worker's SIGUSR1); ``unblock``: unblock them once the receiver is in place
    (blocked since a fork, a signal sent before then waits for it)."""
    with anyio.open_signal_receiver(*signals) as received:
        if unblock:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, set(signals))
        async with anyio.create_task_group() as tg:

            async def receive() -> None:
                async for signum in received:
                    interrupts.receive(signum)

            tg.start_soon(receive)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
