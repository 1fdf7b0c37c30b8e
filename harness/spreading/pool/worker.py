"""A worker process of a run in several processes (``harness.spreading.pool``): its share of the jobs,
its lines handed to the parent, which writes the run folder."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from harness.backends.oracle import Oracle
from harness.cache import open_cache
from harness.calling import Budget, Caller, Limits, Pacer
from harness.errors import NumericJevError, RequestCapReached, first_error
from harness.progress import Counters, NoProgress
from harness.protocol.cases import JobSpec
from harness.running.folder import RunPlan
from harness.running.interrupts import Interrupts
from harness.running.jobs import Job
from harness.running.recorder import Recorder
from harness.running.replay import jobs_of
from harness.running.scheduler import Scheduler
from harness.running.session import in_own_loop
from runfolder import OUTPUTS, REQUESTS, RunFolderError, dumps_line

BLOCK_BYTES = 1 << 18  # a worker hands its lines over in blocks of about this size
# Blocked in the parent while it forks; a worker unblocks each once it is handled.
FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1}


@dataclass
class Part:
    """One worker's share of the run."""

    index: int
    count: int
    limits: Limits
    started: list[Job]
    fresh: list[JobSpec]


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
    """One worker's lines of both logs, in the order written, sent to the parent in blocks.

    The recorder numbers each record (``seq``, its last key); the parent numbers lines in
    the order it writes them, so the worker sends each line without it.
    """

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


async def forward_usr1(
    interrupts: Interrupts, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """The parent's signals, forwarded as SIGUSR1, stop this worker as a signal stops a
    one-process run (``harness.running.interrupts``): the first drains, a second cuts off."""
    with anyio.open_signal_receiver(signal.SIGUSR1) as received:
        # Blocked since the fork: a SIGUSR1 sent before this handler existed waits for it.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        task_status.started()
        async for signum in received:
            interrupts.receive(signum)


async def work(
    part: Part,
    plan: RunPlan,
    folder: Path,
    run_id: str,
    drain_s: float,
    shared: Any,
    conn: Any,
    remote: Remote | None = None,
) -> Done:
    """Run one worker's share, its lines sent to the parent. ``remote``: a Ray shard's
    settings (``harness.spreading.raylaunch``), which has no parent process to signal it."""
    backend, limits = plan.backend, part.limits
    counters = Counters()
    lines = Lines(conn, counters, BLOCK_BYTES if remote is None else remote.block_bytes)
    oracle = isinstance(backend, Oracle)
    # Before any file is opened: a refused cache file (another schema) leaves nothing open.
    # The plan's settings, passed here as an argument (a fork, a Ray task): not the environment.
    cache = open_cache(backend.describe(), run_id, plan.settings.cache)
    recorder = Recorder(
        folder,
        run_id,
        counters,
        NoProgress(),
        simulated=backend.simulated,
        oracle=oracle,
        sinks=(lines.requests, lines.outputs),
    )
    price = plan.price_per_million
    budget = (
        Budget(limits, counters, price)
        if shared is None  # a Ray shard: its own part of the request cap
        else SharedCap(shared, limits, counters, price)
    )
    pacer = (
        Pacer(limits.concurrency, rps=limits.rps, max_wait_s=limits.max_wait_s)
        if remote is None
        else remote.pacer
    )
    caller = Caller(
        backend,
        pacer,
        plan.retry,
        price_per_million=plan.price_per_million,
        budget=budget,
        probe=True,
        cache=cache,
    )
    scheduler = Scheduler(caller, budget, recorder, workers=limits.concurrency)
    interrupts = Interrupts(drain_s)
    try:
        with first_error():
            async with anyio.create_task_group() as tg:
                if remote is None:
                    await tg.start(forward_usr1, interrupts)
                hard = anyio.CancelScope()  # cut off what is still in flight
                with hard, interrupts.attach(scheduler, hard):
                    await scheduler.run(jobs_of(plan.suite, part.started, part.fresh))
                tg.cancel_scope.cancel()
    finally:
        recorder.close()
        if cache is not None:
            cache.close()  # first: its last commit is counted in the summary's CPU
            print(cache.summary(), file=sys.stderr)
        with anyio.CancelScope(shield=True):
            await backend.aclose()
    told = interrupts.signum is not None  # the parent says why (its signal, a failure)
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


def worker_main(
    part: Part,
    plan: RunPlan,
    folder: Path,
    run_id: str,
    drain_s: float,
    shared: Any,
    conn: Connection,
    parent: int,
) -> None:
    """A worker process: its share of the jobs, then one last word to the parent."""
    die_with(parent)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)  # the parent decides (module docstring)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        done = in_own_loop(work)(part, plan, folder, run_id, drain_s, shared, conn)
        conn.send(("done", done))
    except (NumericJevError, RunFolderError) as exc:  # one line the user can act on
        conn.send(("error", str(exc)))
    except BaseException:
        conn.send(("crash", traceback.format_exc()))
    finally:
        conn.close()
