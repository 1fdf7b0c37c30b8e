"""A worker process of a run in several processes (``harness.spreading.pool``): its share of the jobs,
its lines handed to the parent, which writes the run folder."""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from harness.calling import Budget, Limits, Pacer
from harness.errors import NumericJevError, RequestCapReached
from harness.progress import Counters
from harness.protocol.cases import JobSpec
from harness.running.folder import RunPlan
from harness.running.interrupts import Interrupts, feeding
from harness.running.jobs import Job
from harness.running.replay import jobs_of
from harness.running.session import in_own_loop
from harness.running.wiring import Wired
from runfolder import OUTPUTS, REQUESTS, RunFolderError, dumps_line

BLOCK_BYTES = 1 << 18  # a worker hands its lines over in blocks of about this size
# Blocked in the parent while it forks; a worker unblocks each once it is handled.
FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1}


@dataclass
class Part:
    """One worker's share of the run: its plan (its own part of the limits in it), its jobs
    (those replayed, then the specs never asked), the run its lines belong to, and how long
    what is in flight may drain after the parent's first signal."""

    index: int
    plan: RunPlan
    started: list[Job]
    fresh: list[JobSpec]
    run_id: str
    folder: Path
    drain_s: float


@dataclass(frozen=True)
class Remote:
    """How a Ray shard's worker differs from a forked one: the run-wide pacer, and lines
    sent in smaller blocks (a lost node loses what it had not sent)."""

    pacer: Pacer
    block_bytes: int


@dataclass(frozen=True)
class Done:
    """What a worker says when its share is over."""

    counters: Counters
    stopped: str | None
    fatal: str | None
    sent: int
    attempts: int
    drained: int
    abandoned: int


class Lines:
    """One worker's lines of both logs, in the order written, sent to the parent in blocks,
    each without its ``seq``: the parent numbers lines in the order it writes them."""

    def __init__(self, conn: Any, counters: Counters, block_bytes: int = BLOCK_BYTES) -> None:
        self._conn = conn  # anything with send(message): a pipe, or a Ray shard's stream
        self._block_bytes = block_bytes
        self._counters = counters
        self._block: list[tuple[bool, bytes]] = []
        self._size = 0
        self.requests = Sink(self, False, REQUESTS)
        self.outputs = Sink(self, True, OUTPUTS)

    def add(self, output: bool, record: Mapping[str, Any], name: str) -> None:
        unnumbered = dict(record)
        unnumbered.pop("seq", None)
        # Sent without its closing brace and newline: the parent adds ',"seq":N}\n'.
        line = dumps_line(unnumbered, name)[:-2]
        self._block.append((output, line))
        self._size += len(line)

    def send(self, *, full: bool) -> None:
        """Hand the block over (``full``: only once it holds ``block_bytes``), with the
        worker's counters as they are now (the parent shows their sum)."""
        if self._block and (not full or self._size >= self._block_bytes):
            self._conn.send(("lines", self._block, self._counters))
            self._block, self._size = [], 0


class Sink:
    """One log as the worker's recorder sees it (``harness.running.recorder.LineSink``)."""

    position = 0  # the log is the parent's

    def __init__(self, lines: Lines, output: bool, name: str) -> None:
        self._lines, self._output, self._name = lines, output, name

    def write(self, record: Mapping[str, Any]) -> None:
        """Take one record."""
        self._lines.add(self._output, record, self._name)

    def flush(self) -> None:
        """Hand the block over once it is full."""
        self._lines.send(full=True)

    def close(self) -> None:
        """Hand over what is left."""
        self._lines.send(full=False)


class SharedCap(Budget):
    """A budget whose request cap counts every worker's requests (one shared counter)."""

    def __init__(self, shared: Any, limits: Limits, counters: Counters, price: float | None):
        super().__init__(limits, counters, price)
        self._shared = shared  # multiprocessing.Value("q"): requests admitted by all workers

    def admit(self) -> None:
        """Admit one more exchange under the run's request cap (all workers together)."""
        cap = self.limits.max_requests
        if cap is not None:
            with self._shared.get_lock():
                if self._shared.value >= cap:
                    raise RequestCapReached(f"request cap reached ({cap:,} requests)")
                self._shared.value += 1
        self.sent += 1


async def work(part: Part, shared: Any, conn: Any, remote: Remote | None = None) -> Done:
    """Run one worker's share, its lines sent to the parent. ``remote``: a Ray shard's
    settings (``harness.spreading.raylaunch``), which has no parent process to signal it."""
    plan = part.plan
    limits = plan.limits
    counters = Counters()
    lines = Lines(conn, counters, BLOCK_BYTES if remote is None else remote.block_bytes)
    price = plan.price_per_million
    budget = (
        Budget(limits, counters, price)
        if shared is None  # a Ray shard: its own part of the request cap
        else SharedCap(shared, limits, counters, price)
    )
    sinks = (lines.requests, lines.outputs)
    pacer = None if remote is None else remote.pacer
    interrupts = Interrupts(part.drain_s)
    try:
        wired = Wired.of(
            part.folder, part.run_id, plan, counters, sinks=sinks, budget=budget, pacer=pacer
        )
        # A forked worker gets its parent's signals as SIGUSR1 (``harness.spreading.pool``).
        signals = nullcontext() if remote else feeding(interrupts, signal.SIGUSR1, unblock=True)
        await wired.run(jobs_of(plan.suite, part.started, part.fresh), interrupts, signals)
    finally:
        with anyio.CancelScope(shield=True):
            await plan.backend.aclose()
    told = interrupts.signum is not None  # the parent says why (its signal, a failure)
    caller, scheduler = wired.caller, wired.scheduler
    drained = max(interrupts.in_flight - caller.abandoned, 0) if told else 0
    return Done(
        counters,
        None if told else scheduler.stopped,
        scheduler.fatal,
        counters.requests,
        caller.sent,
        drained,
        caller.abandoned,
    )


def die_with(parent: int) -> None:
    """Linux: have the kernel SIGKILL this worker when its parent dies (a SIGKILLed run
    leaves no orphan; ``resume`` then finds the lock free)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: a killed parent may leave workers running
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def worker_main(part: Part, shared: Any, conn: Connection, parent: int) -> None:
    """A worker process: its share of the jobs, then one last word to the parent."""
    die_with(parent)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)  # the parent decides (module docstring)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})

    async def share() -> Done:
        return await work(part, shared, conn)

    try:
        last_word(conn.send, share)
    finally:
        conn.close()


def last_word(
    send: Callable[[tuple[Any, ...]], None], share: Callable[[], Awaitable[Done]]
) -> None:
    """Run one share (a worker's, a Ray shard's) in its own event loop, then say how it
    ended: ``done``, an ``error`` the user can act on (one line), or a ``crash`` (a bug,
    with its traceback)."""
    try:
        send(("done", in_own_loop(share)()))
    except (NumericJevError, RunFolderError) as exc:  # one line the user can act on
        send(("error", str(exc)))
    except BaseException:
        send(("crash", traceback.format_exc()))
