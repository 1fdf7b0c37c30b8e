"""Starting and resuming runs: the run folder's manifest, writer, sessions, job queue and summary."""

from __future__ import annotations

import hashlib
import platform
import random
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio

from harness.backends.base import Backend
from harness.calling import Budget, Caller, Limits, Pacer, RetrySettings
from harness.cases import Suite
from harness.errors import ConfigError, ManifestMismatch, RunFolderError
from harness.jobs import Job
from harness.progress import Counters, NoProgress, Progress, TqdmProgress
from harness.recorder import SIMULATED_MODELS, Recorder
from harness.registry import load_suite
from harness.replay import LogState, replay
from harness.scheduler import Scheduler
from runfolder import (
    MANIFEST,
    Fields,
    Manifest,
    ModelInfo,
    RunLock,
    SessionCommand,
    SessionRecord,
    append_session,
    encode_manifest,
    load_manifest,
    write_manifest,
)

ROOT = Path(__file__).resolve().parent.parent


def source_hash() -> str:
    """SHA-256 over the format, harness and suite sources: what produced the requests."""
    digest = hashlib.sha256()
    for package in ("runfolder", "harness", "suites"):
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def harness_version() -> str:
    """The installed distribution's version."""
    try:
        return metadata.version("numericjev")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class RunPlan:
    """Everything a run needs besides its folder."""

    suite: Suite
    backend: Backend
    limits: Limits
    price_per_million: float | None = None
    retry: RetrySettings = field(default_factory=RetrySettings)


@dataclass
class Outcome:
    """How the scheduler stopped."""

    stopped: str | None = None  # None: every job ran; else why it stopped early
    fatal: str | None = None  # an error that makes every request fail (bad key)


def default_run_folder(suite: str, model: str, root: Path = Path("runs")) -> Path:
    """``runs/<suite>-<model>-<UTC time>``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in model)
    return root / f"{suite}-{safe}-{stamp}"


def build_manifest(folder: Path, plan: RunPlan) -> Manifest:
    """The manifest written before the first request; it never holds a key."""
    suite = plan.suite
    described = {
        **plan.backend.describe(),
        "retries": asdict(plan.retry),
        "price_usd_per_million_input": plan.price_per_million,
    }
    return Manifest(
        run_id=folder.name,
        created_utc=datetime.now(UTC).isoformat(timespec="seconds"),
        suite=suite.name,
        suite_params=dict(suite.params),
        seed=suite.seed,
        case_hash=suite.case_hash(),
        source_hash=source_hash(),
        n_cases=len(suite.cases),
        decoders=tuple(suite.decoders),
        conditions=tuple(suite.conditions),
        orders=tuple(suite.orders),
        repeats=suite.repeats,
        n_jobs=len(suite.jobs()),
        model=ModelInfo.from_fields(Fields(described, "the backend's description", "model.")),
        limits=plan.limits.as_record(),
        versions={
            "harness": harness_version(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
    )


def create_run_folder(folder: Path, plan: RunPlan) -> Manifest:
    """Create a new run folder with its manifest; refuses to reuse an existing run."""
    if (folder / MANIFEST).exists():
        raise RunFolderError(
            f"{folder} already holds a run; continue it with: numericjev resume {folder}"
        )
    if folder.exists() and any(folder.iterdir()):
        raise RunFolderError(f"{folder} exists and is not empty; choose another --run folder")
    manifest = build_manifest(folder, plan)
    encode_manifest(manifest)  # a value JSON cannot carry is refused before the folder exists
    folder.mkdir(parents=True, exist_ok=True)
    write_manifest(folder, manifest)
    return manifest


def start_session(
    folder: Path, command: SessionCommand, run_id: str, plan: RunPlan, allowed: list[str]
) -> None:
    """Append this invocation to ``sessions.jsonl`` (the caller holds the lock)."""
    described = plan.backend.describe()
    record: SessionRecord = {
        "utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "harness_version": harness_version(),
        "source_hash": source_hash(),
        "model": str(described.get("name", plan.backend.name)),
        "base_url": described.get("base_url"),  # the backend's description is scrubbed
        "limits": plan.limits.as_record(),
        "allowed_mismatches": list(allowed),
        "run": run_id,
    }
    append_session(folder, record)


def suite_of(manifest: Manifest) -> Suite:
    """Rebuild the suite a manifest names."""
    params = {k: str(v) for k, v in manifest.suite_params.items()}
    return load_suite(manifest.suite, seed=manifest.seed, params=params, decoders=manifest.decoders)


def verify(manifest: Manifest, suite: Suite, allow_mismatch: bool) -> list[str]:
    """Compare the manifest's hashes with this code and these cases; refuse unless allowed."""
    problems = []
    if manifest.case_hash != suite.case_hash():
        problems.append("the case set differs from the one the run started with")
    if manifest.source_hash != source_hash():
        problems.append("the harness or suite source changed since the run started")
    if problems and not allow_mismatch:
        raise ManifestMismatch(
            "; ".join(problems) + ": resuming would mix two versions in one run. Start a new run, "
            "or pass --allow-mismatch to continue anyway (recorded in the log)"
        )
    return problems


def shuffled_specs(suite: Suite) -> list[Any]:
    """Jobs in an order shuffled with the suite seed (the paper fixes the job order)."""
    specs = suite.jobs()
    random.Random(suite.seed).shuffle(specs)
    return specs


def job_queue(suite: Suite, state: LogState, model: str) -> tuple[Iterator[Job], int]:
    """Unfinished jobs, built lazily and replayed from the log; and how many there are."""
    specs = [s for s in shuffled_specs(suite) if s.id not in state.finished]

    def generate() -> Iterator[Job]:
        for spec in specs:
            job = Job(spec, suite.decoders)
            replay(job, state.answered.get(spec.id, {}), model)
            yield job

    return generate(), len(specs)


def execute(
    folder: Path,
    run_id: str,
    plan: RunPlan,
    state: LogState,
    *,
    progress: bool = True,
) -> tuple[Outcome, Counters]:
    """Run every unfinished job of the folder; the caller holds the lock."""
    suite, backend, limits = plan.suite, plan.backend, plan.limits
    jobs, pending = job_queue(suite, state, backend.name)
    counters = state.counters
    counters.jobs_total = len(suite.jobs())
    counters.jobs_done = len(state.finished)
    display: Progress = NoProgress()
    if progress and pending:
        label = f"{suite.name} · {backend.name}"
        if backend.simulated:
            label += " (simulated)"
        display = TqdmProgress(counters.jobs_total, counters.jobs_done, label)
    recorder = Recorder(
        folder,
        run_id,
        counters,
        display,
        simulated=backend.simulated,
        requests_end=state.requests_end,
        outputs_end=state.outputs_end,
    )
    pacer = Pacer(limits.concurrency, rps=limits.rps)
    caller = Caller(backend, pacer, plan.retry, price_per_million=plan.price_per_million)
    budget = Budget(limits, counters, plan.price_per_million)
    # One worker per allowed request in flight.
    scheduler = Scheduler(caller, budget, recorder, workers=limits.concurrency)

    async def main() -> None:
        try:
            await scheduler.run(jobs)
        finally:
            with anyio.CancelScope(shield=True):
                await backend.aclose()

    try:
        anyio.run(main)
    finally:
        recorder.close()
        display.close()
    return Outcome(scheduler.stopped, scheduler.fatal), counters


def start_run(folder: Path, plan: RunPlan, *, progress: bool = True) -> tuple[Outcome, Counters]:
    """Create the run folder and run it."""
    manifest = create_run_folder(folder, plan)
    with RunLock(folder):
        start_session(folder, "run", manifest.run_id, plan, [])
        return execute(folder, manifest.run_id, plan, LogState(), progress=progress)


def open_for_resume(folder: Path, allow_mismatch: bool) -> tuple[Manifest, Suite, list[str]]:
    """Read and verify a run folder's manifest before resuming it."""
    manifest = load_manifest(folder)
    try:
        suite = suite_of(manifest)
    except ConfigError as exc:
        raise RunFolderError(
            f"{folder}/manifest.json names a suite this code cannot rebuild ({exc}); "
            "the manifest was edited or comes from other code"
        ) from exc
    problems = verify(manifest, suite, allow_mismatch)
    return manifest, suite, problems


def summary_lines(
    folder: Path, suite: Suite, counters: Counters, simulated: bool, outcome: Outcome | None
) -> list[str]:
    """What a person needs to read after a run or resume."""
    pending = counters.jobs_total - counters.jobs_done - counters.jobs_failed
    cost = (
        f"USD {counters.cost_usd:.6f}" if counters.cost_known else "cost unknown for some requests"
    )
    lines = [
        f"run folder: {folder}",
        f"jobs: {counters.jobs_done:,} of {counters.jobs_total:,} done, {counters.jobs_failed:,} failed, "
        f"{max(pending, 0):,} pending",
        f"requests: {counters.requests:,} answered, {counters.errors:,} failed attempts; "
        f"tokens in {counters.input_tokens:,} out {counters.output_tokens:,}; {cost}",
    ]
    served = ", ".join(f"{name} ({n:,})" for name, n in sorted(counters.models.items()))
    if served:
        lines.append(f"served models: {served}")
    if simulated or set(counters.models) & SIMULATED_MODELS:
        lines.append("model: SIMULATED (results describe the built-in simulator, not a real model)")
    if outcome and outcome.stopped:
        lines.append(f"stopped early: {outcome.stopped}; continue with: make resume RUN={folder}")
    elif counters.jobs_failed or pending > 0:
        lines.append(f"some jobs are unfinished; retry them with: make resume RUN={folder}")
    lines.append(f"analyse it: make analyze RUN={folder}   (figures: make report RUN={folder})")
    return lines


def echo(lines: list[str]) -> None:
    """Print summary lines to stdout."""
    for line in lines:
        print(line, file=sys.stdout)
