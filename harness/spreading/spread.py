"""Spreading one run over shards (``Shards``): one shard here, or every shard in local
processes, each forked before any event loop starts (it shares the parent's imported code
and starts in milliseconds).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path

from harness.errors import ConfigError, NumericJevError
from harness.progress import Counters, summed
from harness.protocol.cases import Suite
from harness.running.folder import (
    LimitChanges,
    build_manifest,
    open_for_resume,
)
from harness.running.refusals import check_before_writing
from harness.running.replay import LogState, job_lists
from harness.running.session import (
    Resume,
    RunResult,
    Start,
    _closing,
    _execute,
    _ignore,
    _resume,
    in_own_loop,
    new_session,
    resume,
    run,
)
from harness.running.sharding import Shard, create_or_join_parent, shard_count, split_for_workers
from harness.spreading.pool.worker import die_with
from runfolder import MANIFEST, RunFolderError, load_manifest


@dataclass(frozen=True)
class Shards:
    """A placement (``harness.running.session.Placement``): a run split in ``count`` shards
    (``harness.running.sharding``) under ``folder``, the parent run folder; what ``run`` and
    ``resume`` do with and without ``index``, and how limits divide: docs/scaling.md.

    With ``index`` the parent manifest is created by the first shard (later ones are checked
    against it) and the shard folder is started or, if it exists, resumed. Without it every
    shard runs in ``count`` local processes, then they are merged; ``resume`` starts a shard
    never started with plain logs (``compress`` is not recorded).
    """

    count: int
    index: int | None = None

    def start(self, order: Start) -> RunResult:
        """``run`` as shards (the class docstring)."""
        if order.folder is None:
            raise ConfigError("shards need a run folder: every shard of a run names the same one")
        if self.index is not None:
            return in_own_loop(_one_shard)(order, order.folder, Shard(self.index, self.count))
        if self.count < 1:
            raise ConfigError(f"--workers must be at least 1; got {self.count}")
        folder = order.folder
        if (folder / MANIFEST).exists():
            raise RunFolderError(
                f"{folder} already holds a run; continue it with: numericjev resume {folder}"
            )
        own = replace(order, limits=split_for_workers(order.limits, self.count))

        def job(shard: Shard) -> RunResult:
            return run(own.suite, own.model, own.limits, placement=Shards(shard.count, shard.index),
                       folder=folder, retry=own.retry, settings=own.settings)  # fmt: skip

        shards = [Shard(k, self.count) for k in range(self.count)]
        return _gather(folder, self.count, _in_processes(shards, job, self.count), order.suite)

    def resume(self, order: Resume) -> RunResult:
        """``resume`` of the parent of shards (the class docstring)."""
        folder, limits = order.folder, order.limits
        parent = load_manifest(folder)
        count = shard_count(parent)
        if count is None:
            raise RunFolderError(f"{folder} is not the parent of shards")
        suite = open_for_resume(folder, order.allow_mismatch).suite

        def job(shard: Shard) -> RunResult:
            path = shard.folder(folder)
            if (path / MANIFEST).exists():
                return resume(
                    path, base_url=order.base_url, allow_mismatch=order.allow_mismatch,
                    cache=order.cache, **limits,
                )  # fmt: skip
            again = order.again(parent, suite)
            return Shards(count, shard.index).start(replace(again, folder=folder))

        shards = [Shard(k, count) for k in range(count)]
        outcomes = _in_processes(shards, job, max(1, min(self.count, count)))
        return _gather(folder, count, outcomes, suite)


async def _one_shard(order: Start, parent: Path, shard: Shard) -> RunResult:
    """Shard ``shard`` of the run in ``parent`` (``Shards`` with an index)."""
    own = shard.limits(order.limits)
    plan = replace(order.plan(own), shard=shard)
    folder = shard.folder(parent)
    async with _closing(plan.backend):
        check_before_writing(plan)
        overall = build_manifest(parent, replace(plan, limits=order.limits, shard=None))
        run_id = create_or_join_parent(parent, overall, shard.count).run_id
        if not (folder / MANIFEST).exists():
            first = replace(order, folder=folder, run_id=run_id, on_start=_ignore)
            with new_session(first, plan, {"shard": shard.record(run_id)}):
                lists = job_lists(order.suite, LogState(), plan.backend.name, shard)
                state = LogState()
                return await _execute(folder, run_id, plan, state, lists, order.progress, None)
    # The shard ran before (a requeued array task): continue it where it stopped.
    changes = LimitChanges(
        concurrency=own.concurrency, rps=own.rps, max_requests=own.max_requests,
        max_cost_usd=own.max_cost_usd,
    )  # fmt: skip
    return await _resume(
        Resume(folder, progress=order.progress, cache=plan.settings.cache, limits=changes)
    )


@dataclass(frozen=True)
class _Outcome:
    """What a worker process sends back for one shard."""

    shard: int
    result: RunResult | None = None
    error: str | None = None  # a one-line error the user can act on
    interrupted: bool = False


ShardJob = Callable[[Shard], RunResult]


def _work(shards: Sequence[Shard], job: ShardJob, conn: Connection, parent: int) -> None:
    """In a worker process: run ``shards`` one after another, sending each outcome."""
    die_with(parent)
    try:
        for shard in shards:
            try:
                conn.send(_Outcome(shard.index, result=job(shard)))
            except (NumericJevError, RunFolderError) as exc:
                conn.send(_Outcome(shard.index, error=str(exc)))
    except KeyboardInterrupt:
        conn.send(_Outcome(-1, interrupted=True))
    finally:
        conn.close()


def _in_processes(shards: Sequence[Shard], job: ShardJob, processes: int) -> list[_Outcome]:
    """Run ``job`` for every shard in ``processes`` forked processes; their outcomes."""
    context = multiprocessing.get_context("fork")  # no re-import: a worker starts at once
    groups = [list(shards[i::processes]) for i in range(processes)]
    workers = []
    for group in groups:
        if not group:
            continue
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_work, args=(group, job, send, os.getpid()), daemon=True)
        process.start()
        send.close()
        workers.append((process, receive, len(group)))
    outcomes: list[_Outcome] = []
    try:
        for process, receive, expected in workers:
            for _ in range(expected):
                try:
                    outcome = receive.recv()
                except EOFError:  # the process died without a word (killed, crashed)
                    outcomes.append(_Outcome(-1, error=f"worker {process.pid} exited"))
                    break
                outcomes.append(outcome)
                if outcome.interrupted:
                    raise KeyboardInterrupt
    finally:
        for process, _receive, _expected in workers:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
    return outcomes


def _gather(parent: Path, count: int, outcomes: list[_Outcome], suite: Suite) -> RunResult:
    """One result for the whole run from its shards' outcomes; merged when every shard is
    complete."""
    from harness.spreading.merging import merge

    errors = [f"shard {o.shard}: {o.error}" for o in outcomes if o.error]
    results = [o.result for o in outcomes if o.result is not None]
    counters = summed(Counters(), [r.counters for r in results])
    counters.jobs_total = sum(r.counters.jobs_total for r in results)  # each shard's own jobs
    stopped = next((r.stopped for r in results if r.stopped), None)
    fatal = next((r.fatal for r in results if r.fatal), None)
    if errors:
        fatal = fatal or "; ".join(errors)
        stopped = stopped or "a shard failed"
    simulated = any(r.simulated for r in results)
    if not errors and len(results) == count and all(r.complete for r in results):
        merge(parent, suite, rescan=False)  # the shards were just written by this run
    return RunResult(parent, counters, simulated, stopped, fatal)
