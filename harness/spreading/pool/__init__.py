"""Processes that answer, one process that writes: a run's jobs on every core, one run folder.

What ``--workers N|auto`` does for a user, and how caps divide: docs/scaling.md. The N forked
processes each take every N-th job of the shuffled queue through their own scheduler, caller
and recorder, but hand each serialised record to the parent. The parent is the run folder's
one writer: it numbers the lines (``seq``), keeps what is on disk a prefix of the numbered
records (a finished job's outputs go to the OS at once, the exchanges before them first, as
``harness.running.recorder`` does), shows one progress bar and writes ``totals.json``; so
``status``, ``resume``, ``analyze`` and ``list`` read the folder as any other.

Signals: the workers ignore SIGINT and SIGTERM (Ctrl-C reaches the whole process group); the
parent turns each one it gets into SIGUSR1 for every worker (the first drains, a second cuts
off). A SIGKILLed parent takes its workers with it (``PR_SET_PDEATHSIG``); a worker's lines
not yet handed over are lost with it, which is why only in-process models run here: their
answers are free to make again.

Processes are forked before any event loop starts (they share the parent's imported code
and its replayed jobs, and start in milliseconds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from harness.backends import IN_PROCESS
from harness.errors import ConfigError
from harness.running.refusals import check_before_writing
from harness.running.replay import LogState, job_lists
from harness.running.session import Resume, RunResult, Start, new_session, resume_plan, resumed
from harness.spreading.pool.parent import run_pool
from runfolder import RunFolderError, load_manifest


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
    limits, backend = manifest.limits, manifest.model.backend
    assert limits is not None and backend is not None  # read strictly, so recorded
    cap = max_cost_usd if max_cost_usd is not None else limits["max_cost_usd"]
    return processes_for(backend, requested, spend_cap=cap is not None)


@dataclass(frozen=True)
class Pool:
    """A placement (``harness.running.session.Placement``): the run's jobs answered in
    ``processes`` forked worker processes, this one writing the folder (module docstring);
    the model must be answered in process (``IN_PROCESS``); interrupts from the main thread."""

    processes: int

    def start(self, order: Start) -> RunResult:
        """``run`` in the pool: the folder made here, the fresh jobs shared out."""
        processes_for(order.model.name, self.processes)
        plan = order.plan()
        check_before_writing(plan)
        with new_session(order, plan) as (folder, run_id):
            started, fresh = job_lists(order.suite, LogState(), plan.backend.name)
            return run_pool(
                folder, run_id, plan, LogState(), started, fresh, processes=self.processes,
                progress=order.progress, interrupts=order.interrupts,
            )  # fmt: skip

    def resume(self, order: Resume) -> RunResult:
        """``resume`` in the pool: the same checks and refusals, then the unfinished jobs
        replayed here and shared among the workers."""
        opened, plan = resume_plan(order)
        processes_for(plan.backend.name, self.processes)
        with resumed(order, opened, plan, None) as (state, (started, fresh), warn):
            result = run_pool(
                order.folder, opened.manifest.run_id, plan, state, started, fresh,
                processes=self.processes, progress=order.progress, interrupts=order.interrupts,
            )  # fmt: skip
        return replace(result, warnings=tuple(warn))


__all__ = ["Pool", "processes_for", "processes_to_resume", "run_pool"]
