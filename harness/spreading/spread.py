"""Spreading one run over shards: one shard here, or every shard in local worker processes.

``start_shard`` runs shard K of N of a run (``numericjev run --shard K/N --run RUN``): it
creates the parent run folder or joins it, then starts or resumes ``RUN/shards/K``.
``run_workers`` runs all N shards of a run in N local processes (``--workers N``) for
models that are bound by this machine's CPU (the sim, a local model), and merges them when
every shard is complete. Each process is forked before any event loop starts, so it shares
the parent's imported code and starts in milliseconds.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Unpack

from harness.backends import Backend, ModelSpec
from harness.calling import Limits, Pacer, RetrySettings
from harness.errors import ConfigError, NumericJevError
from harness.progress import Counters, summed
from harness.protocol.cases import Suite
from harness.running.folder import (
    LimitChanges,
    build_manifest,
    create_run_folder,
    limits_of,
    model_spec_of,
    open_for_resume,
    record_session,
    recorded_cache,
)
from harness.running.refusals import check_before_writing
from harness.running.replay import LogState, job_queue
from harness.running.session import (
    RunResult,
    _closing,
    _execute,
    _plan,
    in_own_loop,
    resume_run,
    resume_run_async,
)
from harness.running.settings import RunSettings
from harness.running.sharding import Shard, create_or_join_parent, shard_count, split_for_workers
from harness.spreading.pool.worker import die_with
from runfolder import MANIFEST, RunFolderError, RunLock, load_manifest


async def start_shard_async(
    suite: Suite,
    model: ModelSpec | Backend | None = None,
    limits: Limits | None = None,
    *,
    parent: Path,
    shard: Shard,
    retry: RetrySettings | None = None,
    progress: bool = False,
    pacer: Pacer | None = None,
    settings: RunSettings | None = None,
) -> RunResult:
    """Run shard ``shard`` of a run split in ``shard.count`` (``harness.running.sharding``).

    Creates the parent ``parent/manifest.json`` if no shard has yet (else checks that this
    shard's suite, cases, code, decoders and model match it), then starts
    ``parent/shards/K`` or, if it exists, resumes it. ``limits`` are the whole run's: the
    shard takes its share of ``rps`` and of the spend cap. ``pacer`` replaces the shard's
    own. ``settings``: as ``start_run``'s (a shard started before keeps its logs' form).
    Merge with ``harness.spreading.merging``.
    """
    whole = limits or Limits()
    own = shard.limits(whole)
    planned = _plan(suite, model or ModelSpec(), own, retry, settings)
    plan = replace(planned, shard=shard, pacer=pacer)
    folder = shard.folder(parent)
    async with _closing(plan.backend):
        check_before_writing(plan)
        overall = build_manifest(parent, replace(plan, limits=whole, shard=None))
        run_id = create_or_join_parent(parent, overall, shard.count).run_id
        if not (folder / MANIFEST).exists():
            extra = {"shard": shard.record(run_id)}
            lock = RunLock(folder)
            manifest = create_run_folder(folder, plan, lock, run_id, extra=extra)
            try:
                record_session(folder, "run", manifest.to_dict(), plan, [])
                queue = job_queue(suite, LogState(), plan.backend.name, shard)
                state = LogState()
                return await _execute(folder, run_id, plan, state, queue, progress, None)
            finally:
                lock.release()
    # The shard ran before (a requeued array task): continue it where it stopped.
    return await resume_run_async(
        folder,
        progress=progress,
        concurrency=own.concurrency,
        rps=own.rps,
        max_requests=own.max_requests,
        max_cost_usd=own.max_cost_usd,
        cache=plan.settings.cache,
    )


start_shard = in_own_loop(start_shard_async)


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


def _sum(results: Sequence[RunResult]) -> Counters:
    total = summed(Counters(), [r.counters for r in results])
    total.jobs_total = sum(r.counters.jobs_total for r in results)  # each shard's own jobs
    return total


def _gather(
    parent: Path, count: int, outcomes: list[_Outcome], suite: Suite | None = None
) -> RunResult:
    errors = [f"shard {o.shard}: {o.error}" for o in outcomes if o.error]
    results = [o.result for o in outcomes if o.result is not None]
    return gather(parent, count, results, errors, suite=suite)


def gather(
    parent: Path,
    count: int,
    results: Sequence[RunResult],
    errors: Sequence[str] = (),
    *,
    suite: Suite | None = None,
) -> RunResult:
    """One result for the whole run from its shards'; merged when every shard is complete."""
    from harness.spreading.merging import merge

    counters = _sum(results)
    stopped = next((r.stopped for r in results if r.stopped), None)
    fatal = next((r.fatal for r in results if r.fatal), None)
    if errors:
        fatal = fatal or "; ".join(errors)
        stopped = stopped or "a shard failed"
    simulated = any(r.simulated for r in results)
    if not errors and len(results) == count and all(r.complete for r in results):
        merge(parent, suite, rescan=False)  # the shards were just written by this run
    return RunResult(parent, counters, simulated, stopped, fatal)


def run_workers(
    suite: Suite,
    model: ModelSpec,
    limits: Limits,
    *,
    folder: Path,
    workers: int,
    retry: RetrySettings | None = None,
    settings: RunSettings | None = None,
) -> RunResult:
    """The whole run in ``workers`` local processes, one shard each, then merged.

    The machine's ``limits`` are shared: each worker takes its part of the concurrency and
    the request cap, and (as every shard) its share of ``rps`` and the spend cap.
    """
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1; got {workers}")
    if (folder / MANIFEST).exists():
        raise RunFolderError(
            f"{folder} already holds a run; continue it with: numericjev resume {folder}"
        )
    own = split_for_workers(limits, workers)

    def job(shard: Shard) -> RunResult:
        return start_shard(
            suite, model, own, parent=folder, shard=shard, retry=retry, settings=settings
        )

    shards = [Shard(k, workers) for k in range(workers)]
    return _gather(folder, workers, _in_processes(shards, job, workers), suite)


def resume_workers(
    folder: Path,
    *,
    processes: int,
    base_url: str | None = None,
    allow_mismatch: bool = False,
    cache: str | None = None,
    **limits: Unpack[LimitChanges],
) -> RunResult:
    """Continue every shard of the parent run ``folder`` here, in ``processes`` processes;
    a shard never started is started (its logs plain, as ``compress`` is not recorded).
    ``limits`` left out are each shard's own; ``cache``: the request cache's mode."""
    parent = load_manifest(folder)
    count = shard_count(parent)
    if count is None:
        raise RunFolderError(f"{folder} is not the parent of shards")
    suite = open_for_resume(folder, allow_mismatch).suite

    def job(shard: Shard) -> RunResult:
        path = shard.folder(folder)
        if (path / MANIFEST).exists():
            return resume_run(
                path, base_url=base_url, allow_mismatch=allow_mismatch, cache=cache, **limits
            )
        spec, retry = model_spec_of(parent, base_url=base_url, where=f"{folder}/manifest.json")
        whole = limits_of(parent, **limits)
        mode = cache or recorded_cache(parent.extra)  # the run's own choice, unless told
        settings = None if mode is None else RunSettings(cache=mode)
        return start_shard(
            suite, spec, whole, parent=folder, shard=shard, retry=retry, settings=settings
        )

    shards = [Shard(k, count) for k in range(count)]
    outcomes = _in_processes(shards, job, max(1, min(processes, count)))
    return _gather(folder, count, outcomes, suite)


__all__ = ["Backend", "resume_workers", "run_workers", "start_shard", "start_shard_async"]
