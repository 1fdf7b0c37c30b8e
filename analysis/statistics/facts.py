"""Run facts: who served the run, what it cost, how it failed (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.run import Run

from .metrics import Metrics
from .paired import job_codes

__all__ = [
    "ORACLE_NOTICE",
    "SIMULATED_NOTICE",
    "RunFacts",
    "is_oracle",
    "is_simulated",
    "job_counts",
    "run_facts",
]

SIMULATED_NOTICE = "SIMULATED MODEL — not a measurement of any real model"
# The oracle answers with exact labels: a check of the decoding mechanics, not the simulator.
ORACLE_NOTICE = "ORACLE (exact labels) — a check of the decoding mechanics, not a model"


@dataclass(frozen=True)
class RunFacts:
    """Provenance, accounting and failure counts of one run."""

    run_id: str
    suite: str
    model: str
    backend: str | None
    simulated: bool
    created_utc: str | None
    seed: int | None
    case_hash: str | None
    n_jobs: int | None
    served_models: tuple[tuple[str, int], ...]  # model reported per request line, with counts
    requests: int
    jobs_with_requests: int
    retries: int
    errors_by_kind: tuple[tuple[str, int], ...]
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    requests_without_cost: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    outputs_ok: int
    outputs_failed: int
    outputs_missing: int
    jobs_done: int  # every manifest decoder has an ok output (as `numericjev status` counts)
    jobs_failed: int  # some output line, but not every decoder ok
    jobs_pending: int | None  # n_jobs minus both; None when the manifest has no n_jobs
    duplicate_outputs: int
    torn_lines: int
    requests_log_present: bool
    oracle: bool = False  # answered with exact labels by the oracle (then not simulated)
    duplicate_requests: int = 0  # requests.jsonl lines that repeat a record (counted once)
    wire: str | None = None  # the HTTP wire format the run spoke (None: in process)

    @property
    def repairs(self) -> str | None:
        """What the readers repaired in the logs, in words (None: nothing), said once by
        ``analyze``, ``report`` and ``diff`` as ``resume`` and ``status`` say it."""
        return log_repairs(self.duplicate_outputs, self.duplicate_requests, self.torn_lines)

    @property
    def errors(self) -> int:
        """Request attempts that carried an error."""
        return sum(n for _, n in self.errors_by_kind)

    @property
    def notice(self) -> str | None:
        """The mark every title of this run carries: oracle, simulated, or none."""
        if self.oracle:
            return ORACLE_NOTICE
        return SIMULATED_NOTICE if self.simulated else None


def log_repairs(duplicate_outputs: int, duplicate_requests: int, torn_lines: int) -> str | None:
    """The readers' repairs of a run's logs in words (None: nothing), the one wording of
    ``analyze``, ``report``, ``diff`` and ``export``."""
    if not (duplicate_outputs or duplicate_requests or torn_lines):
        return None
    return (
        f"{duplicate_outputs:,} duplicate output line(s) (last kept), "
        f"{duplicate_requests:,} duplicate request line(s) (counted once), "
        f"{torn_lines:,} torn last line(s) skipped"
    )


def is_oracle(run: Run) -> bool:
    """True when the run was answered by the exact oracle: its manifest's backend (older
    oracle runs called themselves simulated), an output line, or the served model says so."""
    return (
        run.manifest.model.backend == "oracle"
        or run.outputs.n_oracle > 0
        or "oracle" in run.requests.served_model_names
    )


def is_simulated(run: Run) -> bool:
    """True when the manifest or any output line says the simulator answered (an oracle
    run is labelled as the oracle instead)."""
    if is_oracle(run):
        return False
    return run.manifest.model.simulated or run.outputs.n_simulated > 0


def job_counts(run: Run) -> tuple[int, int, int | None]:
    """Jobs done, failed and pending, counted as ``numericjev status`` counts them.

    A job is done when every decoder of the manifest has an ok output for it, failed when
    it has some output line but not all of those, pending when the manifest's ``n_jobs``
    promises it and it has no line at all.
    """
    out = run.outputs
    expected = run.manifest.decoders or out.decoder_names
    jobs, n_seen = job_codes(out)
    wanted = np.isin(out.decoder, [i for i, n in enumerate(out.decoder_names) if n in expected])
    ok_per_job = np.bincount(jobs[out.ok & wanted], minlength=n_seen)
    done = int(np.count_nonzero(ok_per_job == len(set(expected))))
    failed = n_seen - done
    n_jobs = run.manifest.n_jobs
    return done, failed, None if n_jobs is None else max(n_jobs - done - failed, 0)


def run_facts(run: Run, metrics: Metrics) -> RunFacts:
    """Collect the facts printed under the tables of ``analyze``."""
    req = run.requests
    served = list(req.served_models)
    if req.unreported:
        served.append(("(not reported)", req.unreported))
    manifest = run.manifest
    done, failed, pending = job_counts(run)
    return RunFacts(
        run_id=manifest.run_id,
        suite=manifest.suite,
        model=manifest.model.name,
        backend=manifest.model.backend,
        simulated=is_simulated(run),
        oracle=is_oracle(run),
        created_utc=manifest.created_utc,
        seed=manifest.seed,
        case_hash=manifest.case_hash,
        n_jobs=manifest.n_jobs,
        served_models=tuple(served),
        requests=len(req),
        jobs_with_requests=req.n_jobs,
        retries=req.retries,
        errors_by_kind=req.errors_by_kind,
        input_tokens=req.input_tokens,
        output_tokens=req.output_tokens,
        cost_usd=req.cost_usd,
        requests_without_cost=len(req) - req.cost_known,
        latency_p50_ms=req.latency_p50_ms,
        latency_p95_ms=req.latency_p95_ms,
        outputs_ok=int(metrics.n_ok.sum()),
        outputs_failed=int(metrics.n_failed.sum()),
        outputs_missing=int(metrics.n_missing.sum()),
        jobs_done=done,
        jobs_failed=failed,
        jobs_pending=pending,
        duplicate_outputs=run.outputs.stats.duplicates,
        torn_lines=run.outputs.stats.torn_last_line + req.stats.torn_last_line,
        requests_log_present=req.stats.present,
        duplicate_requests=req.stats.duplicates,
        wire=manifest.model.wire,
    )
