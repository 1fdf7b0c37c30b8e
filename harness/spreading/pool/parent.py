"""The parent of a run in several processes (``harness.spreading.pool``): the run folder's one writer."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from types import FrameType
from typing import Any

from harness.backends.oracle import Oracle
from harness.errors import WriteFailed
from harness.progress import Counters, Progress, summed
from harness.protocol.cases import JobSpec
from harness.running.folder import RunPlan
from harness.running.interrupts import Interrupts, can_watch
from harness.running.jobs import Job
from harness.running.recorder import ORACLE_MODELS, SIMULATOR_MODELS, WriteGuard
from harness.running.replay import LogState
from harness.running.session import Display, RunResult
from harness.running.wiring import display_for
from harness.spreading.pool.worker import FORWARDED, Done, Part, worker_main
from runfolder import OUTPUTS, REQUESTS, JsonlAppender

PIPE_BYTES = 1 << 20  # asked of the kernel for each pipe: a block goes in one write


class Writer:
    """The run folder's one writer: numbers the workers' lines and appends them. A write the
    OS refuses raises the run's ``WriteFailed`` (``WriteGuard``, as a one-process run's)."""

    def __init__(self, folder: Path, state: LogState) -> None:
        self.folder = folder
        self._requests = JsonlAppender(folder / REQUESTS, state.requests_end, buffered=True)
        self._outputs = JsonlAppender(folder / OUTPUTS, state.outputs_end, buffered=True)
        self.seq = state.next_seq
        self.guard = WriteGuard(folder)

    def write(self, block: Sequence[tuple[bool, bytes]]) -> None:
        """Number and append one worker's block (each line without its closing ``}``).
        A job's outputs reach the OS at once, the exchanges written before them first: what
        is on disk stays a prefix of the numbered records."""
        requests, outputs, guard = self._requests, self._outputs, self.guard
        seq, i, n = self.seq, 0, len(block)
        while i < n:
            output = block[i][0]
            parts: list[bytes] = []
            while i < n and block[i][0] == output:
                parts += (block[i][1], b',"seq":%d}\n' % seq)
                seq += 1
                i += 1
            if output:
                guard.flush((requests, REQUESTS))
                with guard.writing(OUTPUTS):
                    outputs.write_line(b"".join(parts))
                    outputs.flush()
            else:
                with guard.writing(REQUESTS):
                    requests.write_line(b"".join(parts))
        self.seq = seq

    def flush(self) -> None:
        """Hand both logs' lines to the OS (before the folder is read while the run goes)."""
        self.guard.flush((self._requests, REQUESTS), (self._outputs, OUTPUTS))

    def close(self, run_id: str, counters: Counters) -> None:
        """Flush both logs to disk and write ``totals.json`` (``WriteGuard.save_totals``)."""
        end = 0
        with suppress(WriteFailed), self.guard.writing(REQUESTS):
            end = self._requests.position  # a compressed log's last frame is written here
        self.guard.close(((self._requests, REQUESTS), (self._outputs, OUTPUTS)))
        self.guard.save_totals(run_id, counters, end)


@dataclass
class Gathered:
    """What the workers of a run (forked processes, or Ray shards) said, as its one writer
    takes it: their lines written, each one's latest counters (the display shows their sum
    over ``base``), their last words, the errors the user can act on and the first crash."""

    writer: Writer
    display: Progress
    base: Counters
    latest: dict[Any, Counters] = field(default_factory=dict)  # by sender
    done: list[Done] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crash: str | None = None  # a bug's traceback: raised here once the others stopped

    def take(self, sender: Any, name: str, message: tuple[Any, ...]) -> str:
        """Take one of ``sender``'s messages (``name`` heads its error); its kind."""
        kind, *rest = message
        if kind == "lines":
            self.writer.write(rest[0])
            self.latest[sender] = rest[1]
            self.display.update(self.counters())
        elif kind == "done":
            self.done.append(rest[0])
            self.latest[sender] = rest[0].counters
        elif kind == "error":
            self.errors.append(f"{name}: {rest[0]}")
        else:  # "crash": a bug
            self.crash = self.crash or rest[0]
        return str(kind)

    def counters(self) -> Counters:
        """The run's totals: ``base`` and every sender's latest."""
        return summed(self.base, list(self.latest.values()))

    def close(self, run_id: str) -> Counters:
        """Close the logs (``totals.json`` written: ``Writer.close``) and the display; the
        run's totals."""
        counters = self.counters()
        self.writer.close(run_id, counters)
        self.display.close()
        return counters

    def result(
        self, folder: Path, plan: RunPlan, counters: Counters, signum: int | None, what: str
    ) -> RunResult:
        """The run's result from its workers' last words; a crash is raised here, with its
        traceback (``what``: the kind of worker that failed)."""
        if self.crash is not None:
            raise RuntimeError(f"a {what} failed:\n{self.crash}")
        done, errors = self.done, self.errors
        stopped = next((d.stopped for d in done if d.stopped), None)
        if signum is not None:
            stopped = f"interrupted by {signal.Signals(signum).name}"
        fatal = next((d.fatal for d in done if d.fatal), None)
        if errors:
            fatal = fatal or "; ".join(errors)
            stopped = stopped or "a worker failed"
        served = set(counters.models)
        backend = plan.backend
        oracle = isinstance(backend, Oracle) or bool(served & ORACLE_MODELS)
        simulated = not oracle and (backend.simulated or bool(served & SIMULATOR_MODELS))
        return RunResult(
            folder,
            counters,
            simulated,
            stopped,
            fatal,
            oracle=oracle,
            sent=sum(d.sent for d in done),
            attempts=sum(d.attempts for d in done),
            interrupted=signum,
            drained=sum(d.drained for d in done),
            abandoned=sum(d.abandoned for d in done),
        )


def share(amount: int, count: int, index: int) -> int:
    """Part ``index`` of ``amount`` split as evenly as whole numbers allow."""
    return amount // count + (1 if index < amount % count else 0)


def parts(whole: Part, count: int, spent: float) -> list[Part]:
    """The ``whole`` run's share of each of ``count`` workers: every N-th job, with its part
    of the concurrency, the pace and what the run may still spend (``spent``: earlier
    sessions' recorded cost)."""
    parts = []
    plan, started, fresh = whole.plan, whole.started, whole.fresh
    limits = plan.limits
    cap = limits.max_cost_usd
    for k in range(count):
        own = replace(
            limits,
            concurrency=max(1, share(limits.concurrency, count, k)),
            rps=None if limits.rps is None else limits.rps / count,
            max_cost_usd=None if cap is None else max(cap - spent, 0.0) / count,
        )
        own_plan = replace(plan, limits=own)
        parts.append(
            replace(whole, index=k, plan=own_plan, started=started[k::count], fresh=fresh[k::count])
        )
    return parts


@dataclass
class Signals:
    """What the parent was sent (recorded in ``interrupts``), and the workers it tells."""

    interrupts: Interrupts
    pids: list[int] = field(default_factory=list)
    told: int = 0  # times the workers were told to stop (a worker's failure tells them once)

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts.receive(signum)  # nothing sends from this process: only recorded
        self.tell()

    def tell(self) -> None:
        """The first two ask the workers to drain, then to stop; a third kills them."""
        self.told += 1
        for pid in self.pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGUSR1 if self.told <= 2 else signal.SIGKILL)


def run_pool(
    folder: Path,
    run_id: str,
    plan: RunPlan,
    state: LogState,
    started: list[Job],
    fresh: list[JobSpec],
    *,
    processes: int,
    progress: Display = False,
    interrupts: Interrupts | None = None,
) -> RunResult:
    """Run the unfinished jobs (``started``, replayed, then ``fresh``) in ``processes``
    forked workers, this process writing the folder; the caller holds the lock.
    ``interrupts``: SIGINT and SIGTERM reach every worker (main thread only)."""
    base = state.counters
    base.jobs_total = plan.jobs_total()
    base.jobs_done = len(state.finished)
    processes = max(1, min(processes, len(started) + len(fresh)))
    context = multiprocessing.get_context("fork")  # no re-import: a worker starts at once
    shared = context.Value("q", 0)
    writer = Writer(folder, state)
    watching = interrupts is not None and can_watch()
    interrupts = interrupts or Interrupts()  # none given: signals are left alone
    finished: set[int] = set()  # workers that said they were done
    handler = Signals(interrupts)
    previous: dict[signal.Signals, Any] = {}
    # Signals wait until the workers exist, then reach the parent's handler (which forwards
    # them); the workers unblock them only once they ignore SIGINT and SIGTERM.
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    workers: dict[Connection, tuple[int, Any]] = {}
    try:
        whole = Part(0, plan, started, fresh, run_id, folder, interrupts.drain_s)
        for part in parts(whole, processes, base.cost_usd):
            receive, send = context.Pipe(duplex=False)
            widen(send)
            args = (part, shared, send, os.getpid())
            process = context.Process(target=worker_main, args=args, daemon=True)
            process.start()
            send.close()
            workers[receive] = (part.index, process)
            handler.pids.append(process.pid or 0)
        if watching:
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    unfinished = base.jobs_done + base.jobs_failed < base.jobs_total
    # After the fork: tqdm has a thread.
    display = display_for(progress, plan, base, unfinished, f"{processes} processes")
    run = Gathered(writer, display, base)
    try:
        pending = set(workers)
        while pending:
            for conn in wait(list(pending)):
                assert isinstance(conn, Connection)
                index, process = workers[conn]
                try:
                    message = conn.recv()
                except EOFError:  # no last word: the worker died (killed, out of memory)
                    pending.discard(conn)
                    if index not in finished and not run.crash:
                        run.errors.append(f"worker {index} (pid {process.pid}) exited")
                        stop_others(handler)
                    continue
                kind = run.take(index, f"worker {index}", message)
                if kind == "done":
                    finished.add(index)
                elif kind != "lines":  # an error, or a bug: the others stop first
                    stop_others(handler)
    except BaseException:
        # This process is going (Ctrl-C without ``interrupts``, a disk that refuses a write):
        # what it wrote is a prefix of the records; the workers' unwritten lines are free to
        # make again, so they go too.
        for _, process in workers.values():
            process.kill()
        raise
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        for _, process in workers.values():
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
        counters = run.close(run_id)
    return run.result(folder, plan, counters, interrupts.signum, "worker process")


def widen(conn: Connection) -> None:
    """Ask Linux for a pipe that holds a whole block (fewer reads and wake-ups for the
    parent); elsewhere, or past the system's limit, the pipe stays as it is."""
    with suppress(OSError, AttributeError):
        import fcntl

        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def stop_others(handler: Signals) -> None:
    """One worker failed: the others stop as on an interrupt (what is in flight drains)."""
    if handler.told == 0:
        handler.tell()
