"""Processes that answer, one process that writes: a run's jobs on every core, one run folder.

A model that answers in Python in this process (the sim, the oracle) keeps one core busy,
and a run is bound by it. ``--workers N`` (``auto``: one per core for those models) forks N
processes once the run folder is set up. Each takes every N-th job of the shuffled queue
and runs it through its own scheduler, caller and recorder, as a one-process run does, but
its recorder hands each record, serialised, to the parent rather than to a file. The parent
is the run folder's one writer: it numbers the lines (``seq``) in the order it writes them,
keeps what is on disk a prefix of the numbered records (a finished job's outputs are handed
to the OS at once, the exchanges before them first, as ``harness.running.recorder`` does), shows one
progress bar over the workers' summed counters and writes ``totals.json``. So the folder is
an ordinary run folder while the run goes and after it: ``status``, ``resume``, ``analyze``
and ``list`` read it as any other, and its records are those of a one-process run in
another order (``tests/spreading/test_pool.py``).

Caps: ``--max-requests`` is one count across the processes (a shared counter: the run stops
after exactly that many, as in one process). ``--rps``, ``--max-cost-usd`` (what the run may
still spend) and ``--concurrency`` are divided among them.

Signals: the workers ignore SIGINT and SIGTERM (a terminal's Ctrl-C reaches the whole process
group); the parent turns each one it gets into SIGUSR1 for every worker, which stops a worker
as the signal stops a one-process run: the first drains what is in flight, a second cuts it
off. A SIGKILLed parent takes its workers with it (``PR_SET_PDEATHSIG``), and what it had
written is a prefix of the records that ``resume`` continues; a worker's lines not yet handed
over are lost with it, which is why only in-process models run here: their answers are free
to make again (the one-process recorder writes theirs in 64 KB blocks for the same reason).

Processes are forked before any event loop starts (they share the parent's imported code
and its replayed jobs, and start in milliseconds).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Unpack

from harness.backends import ModelSpec
from harness.calling import Limits, RetrySettings
from harness.errors import ConfigError
from harness.protocol.cases import Suite
from harness.running.folder import LimitChanges, record_session
from harness.running.interrupts import Interrupts
from harness.running.naming import folder_model_name
from harness.running.refusals import check_before_writing
from harness.running.replay import LogState, job_lists, read_logs
from harness.running.session import (
    Display,
    RunResult,
    Started,
    Warn,
    Warnings,
    _ignore,
    _ignore_folder,
    _plan,
    new_run_folder,
    resume_plan,
    resume_problems,
)
from harness.running.settings import RunSettings
from harness.spreading.pool.parent import run_pool
from runfolder import RunFolderError, RunLock, load_manifest

# Models whose answers are made in this process, in Python: one core each.
IN_PROCESS = ("sim", "oracle")


def processes_for(
    model: str, requested: int | None, cores: int | None = None, *, spend_cap: bool = False
) -> int:
    """How many processes answer: ``requested`` (None: ``auto``, one per core for a model
    answered in process in Python, else one; one too under a spend cap, which is exact in
    one process and, divided, may leave a share unused). Refuses more than one for any
    other model."""
    in_process = model in IN_PROCESS
    if requested is None:
        return max(1, cores or os.cpu_count() or 1) if in_process and not spend_cap else 1
    if requested < 1:
        raise ConfigError(f"--workers must be at least 1 (or auto); got {requested}")
    if requested > 1 and not in_process:
        raise ConfigError(
            f"--workers {requested}: only a model answered in this process in Python (sim, "
            "oracle) runs in several processes; a served model is bound by its server (raise "
            "--concurrency), a GGUF model already uses every core; to spread a run over "
            "machines use --shard K/N or --ray"
        )
    return requested


def processes_to_resume(folder: Path, requested: int | None, max_cost_usd: float | None) -> int:
    """``processes_for`` the run in ``folder`` (its model, its spend cap unless this session
    sets one); 1 when the manifest cannot be read (resume then says why)."""
    try:
        manifest = load_manifest(folder)
    except RunFolderError:
        return 1
    cap = max_cost_usd if max_cost_usd is not None else manifest.limits["max_cost_usd"]
    return processes_for(manifest.model.backend, requested, spend_cap=cap is not None)


def start_in_processes(
    suite: Suite,
    model: ModelSpec,
    limits: Limits | None = None,
    *,
    processes: int,
    folder: Path | None = None,
    retry: RetrySettings | None = None,
    progress: Display = False,
    on_start: Started = _ignore_folder,
    run_id: str | None = None,
    interrupts: Interrupts | None = None,
    settings: RunSettings | None = None,
) -> RunResult:
    """``start_run`` with ``processes`` worker processes (module docstring); ``model``
    must be answered in process (``IN_PROCESS``). ``interrupts``: SIGINT and SIGTERM
    reach every worker, which drains as a one-process run does (main thread only).
    ``settings``: as ``start_run``'s; the workers get them inside the plan."""
    limits = limits or Limits()
    processes_for(model.name, processes)
    plan = _plan(suite, model, limits, retry, settings)
    check_before_writing(plan)
    folder, lock, manifest = new_run_folder(folder, plan, folder_model_name(model), run_id)
    try:
        on_start(folder)
        record_session(folder, "run", manifest.to_dict(), plan, [])
        started, fresh = job_lists(suite, LogState(), plan.backend.name)
        return run_pool(
            folder,
            manifest.run_id,
            plan,
            LogState(),
            started,
            fresh,
            processes=processes,
            progress=progress,
            interrupts=interrupts,
        )
    finally:
        lock.release()


def resume_in_processes(
    folder: Path,
    *,
    processes: int,
    base_url: str | None = None,
    price_per_million: float | None = None,
    allow_mismatch: bool = False,
    progress: Display = False,
    on_warning: Warn = _ignore,
    interrupts: Interrupts | None = None,
    cache: str | None = None,
    **limits: Unpack[LimitChanges],
) -> RunResult:
    """``resume_run`` with ``processes`` worker processes (module docstring): the same checks
    and refusals, then the unfinished jobs replayed here and shared among the workers."""
    warn = Warnings(on_warning)
    opened, plan = resume_plan(folder, base_url, price_per_million, allow_mismatch, limits, cache)
    processes_for(plan.backend.name, processes)
    manifest, suite = opened.manifest, opened.suite
    problems = resume_problems(opened, plan, allow_mismatch, warn)
    with RunLock(folder):
        state = read_logs(folder, suite.decoders, manifest.run_id)
        started, fresh = job_lists(suite, state, plan.backend.name, plan.shard)
        for repair in state.repairs():
            warn(repair)
        record_session(folder, "resume", opened.raw, plan, problems)
        result = run_pool(
            folder,
            manifest.run_id,
            plan,
            state,
            started,
            fresh,
            processes=processes,
            progress=progress,
            interrupts=interrupts,
        )
    return replace(result, warnings=tuple(warn))


__all__ = [
    "IN_PROCESS",
    "processes_for",
    "processes_to_resume",
    "resume_in_processes",
    "run_pool",
    "start_in_processes",
]
