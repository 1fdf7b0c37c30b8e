"""``numericjev resume``: continue a run where it stopped, never paying twice."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.commands.run import add_limit_options, check_limits


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``resume`` parser."""
    parser = sub.add_parser(
        "resume",
        help="continue an interrupted run",
        description=(
            "Replay the recorded answers of every unfinished job through its decoders, send only "
            "what was never answered, retry failed jobs, and skip finished ones. Refuses when the "
            "code or cases changed since the run started (see --allow-mismatch)."
        ),
    )
    parser.add_argument(
        "run_folder", type=Path, metavar="RUN", help="the run folder, e.g. runs/affine-sim-..."
    )
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="continue although the harness source or case set changed (noted in the output)",
    )
    parser.add_argument("--base-url", default=None, help="override the run's System One server URL")
    add_limit_options(parser, defaults=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Verify, lock, replay and continue."""
    from harness.backends import ModelSpec, make_backend
    from harness.calling import Limits, RetrySettings
    from harness.check import oracle_for
    from harness.errors import RunFolderError
    from harness.replay import read_logs
    from harness.run import RunPlan, echo, execute, open_for_resume, start_session, summary_lines
    from runfolder import RunLock

    check_limits(args)
    folder: Path = args.run_folder
    manifest, suite, problems = open_for_resume(folder, args.allow_mismatch)
    for problem in problems:
        print(
            f"numericjev resume: warning: {problem} (continuing: --allow-mismatch)", file=sys.stderr
        )
    model = manifest.model
    saved = manifest.limits
    limits = Limits(
        concurrency=args.concurrency or saved["concurrency"] or 64,
        rps=args.rps if args.rps is not None else saved["rps"],
        max_requests=args.max_requests,
        max_cost_usd=args.max_cost_usd if args.max_cost_usd is not None else saved["max_cost_usd"],
    )
    params = model.params
    retries = model.retries or params.get("retries") or {}
    backend_kind = model.backend
    spec = ModelSpec(
        name=model.name,
        base_url=args.base_url or model.base_url or os.environ.get("TYPESAFE_BASE_URL"),
        sim={k: str(v) for k, v in params.items()} if backend_kind == "sim" else {},
        concurrency=limits.concurrency,
        timeout_s=float(params.get("timeout_s", 30.0)),
        max_attempts=int(retries.get("max_attempts", 6)),
        price_per_million=model.price_usd_per_million_input,
    )
    if backend_kind not in ("sim", "oracle", "systemone"):
        raise RunFolderError(f"{folder}/manifest.json names an unknown backend {backend_kind!r}")
    backend = make_backend(spec, oracle_for(suite).known if backend_kind == "oracle" else None)
    plan = RunPlan(
        suite,
        backend,
        limits,
        spec.price_per_million,
        RetrySettings(max_attempts=spec.max_attempts),
    )
    with RunLock(folder):
        state = read_logs(folder, suite.decoders, manifest.run_id)
        for name in state.torn:
            print(
                f"numericjev resume: note: cut a torn last line from {name} (a crash mid-write)",
                file=sys.stderr,
            )
        # Recorded once the logs have been read: a resume refused above leaves no trace.
        start_session(folder, "resume", manifest.run_id, plan, problems)
        outcome, counters = execute(
            folder, manifest.run_id, plan, state, progress=not args.no_progress
        )
    echo(summary_lines(folder, suite, counters, bool(backend.simulated), outcome))
    if outcome.fatal:
        print(f"numericjev resume: error: {outcome.fatal}", file=sys.stderr)
        return 2
    return 0 if counters.jobs_done == counters.jobs_total else 1
