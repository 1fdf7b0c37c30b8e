"""Ctrl-C and SIGTERM during a session: stop sending, drain what is in flight, then stop.

A request already sent is paid for whether or not anyone reads the reply. So the first
SIGINT or SIGTERM does not cancel the run: it stops it (``Scheduler.stop``), so nothing new
is sent and every wait ends, and lets the attempts in flight finish for up to
``drain_s`` seconds (``--drain-seconds``), each reply recorded as it comes, as in any run.
Only then, or at a second signal, are the attempts still in flight cut off (``abandoned``:
those are the ones a resume may pay for again, as after a SIGKILL).

Signal handlers can be installed only in the main thread, so a session run from another
thread (or with ``signals=False``) leaves signals alone.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass

import anyio
from anyio.abc import TaskStatus

from harness.scheduler import Scheduler

DRAIN_S = 5.0  # default --drain-seconds: a few of the longest replies seen in practice
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Interrupt:
    """What the signals did to one session (``signum`` None: none came)."""

    signum: int | None = None
    in_flight: int = 0  # attempts in flight when the first signal came


def can_watch() -> bool:
    """Whether this thread may install signal handlers (only the main thread may)."""
    return threading.current_thread() is threading.main_thread()


async def watch_signals(
    scheduler: Scheduler,
    hard: anyio.CancelScope,
    drain_s: float,
    interrupt: Interrupt,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Turn SIGINT and SIGTERM into a drained stop; cancel ``hard`` when the drain ends.

    ``hard`` is the cancel scope around the scheduler. Started with ``TaskGroup.start`` so
    the handlers are in place before the first request is sent.
    """
    with anyio.open_signal_receiver(*SIGNALS) as received:
        task_status.started()
        async for signum in received:
            if interrupt.signum is None:
                interrupt.signum = int(signum)
                interrupt.in_flight = scheduler.caller.sending
                name = signal.Signals(signum).name
                scheduler.stop(f"interrupted by {name}")
                hard.deadline = anyio.current_time() + drain_s
            else:
                hard.cancel()  # a second signal: stop at once
