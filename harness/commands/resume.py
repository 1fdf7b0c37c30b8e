"""``numericjev resume``: continue a run where it stopped, never paying twice."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.commands.common import GATE, RUN_HELP, RUNNING, Handoff, exit_codes
from harness.commands.run import add_limit_options, add_session_options, workers_count


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``resume`` parser."""
    parser = sub.add_parser(
        "resume",
        help="continue an interrupted run, or a whole comparison",
        description=(
            "Replay the recorded answers of every unfinished job through its decoders, send only "
            "what was never answered, retry failed jobs, and skip finished ones. Refuses, naming "
            "what differs, when the manifest was edited since its last session, when --base-url "
            "names another server, or when the code or cases changed since the run started "
            "(see --allow-mismatch). RUN may be a comparison folder (numericjev compare): every "
            "run in it is continued (--concurrency and --rps apply to each), and the "
            "comparison's summary written."
        ),
        epilog=exit_codes(*RUNNING, GATE),
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help=RUN_HELP)
    parser.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="continue although the manifest was edited, the server (--base-url) differs, or "
        "the harness source or case set changed (recorded in sessions.jsonl; analysis shows it)",
    )
    parser.add_argument(
        "--base-url",
        help="the run's server at another address (refused unless --allow-mismatch)",
    )
    parser.add_argument(
        "--price-per-million",
        type=float,
        help="USD per million input tokens for this session (default: the run's price)",
    )
    parser.add_argument(
        "--workers",
        type=workers_count,
        metavar="N",
        help="answer in N local processes, as run --workers (default auto: one per core for "
        "sim and oracle); a sharded run: continue its shards in N processes (one per core)",
    )
    add_limit_options(parser, defaults=False)
    add_session_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int | Handoff:
    """Verify, lock, replay and continue (a comparison: each of its runs)."""
    from harness.cache.lookup import MODE_ENV
    from harness.commands.summary import report
    from harness.running.folder import recorded_cache
    from harness.running.interrupts import Interrupts
    from harness.running.session import Placement, resume
    from runfolder import is_comparison, read_manifest_object, resolve_run

    interrupts = Interrupts(args.drain_seconds)

    def warn(message: str) -> None:
        print(f"numericjev resume: warning: {message}", file=sys.stderr)

    folder = resolve_run(args.run_folder)
    args.interrupt_folder = folder
    if is_comparison(folder):
        from harness.commands.compare import continue_comparison

        return continue_comparison(args, folder, warn, interrupts)
    raw = read_manifest_object(folder)  # not a run folder: its one-line error, before output
    # The run's own cache mode beats the user's default ($NUMERICJEV_CACHE_MODE, a profile);
    # only --cache replaces it (for this session).
    cache = args.cache or (None if recorded_cache(raw) else os.environ.get(MODE_ENV) or None)
    print(f"run folder: {folder}", flush=True)
    placement: Placement | None
    if (folder / "shards").is_dir():  # the parent of shards: continue all of them
        from harness.spreading.spread import Shards

        placement = Shards(args.workers or os.cpu_count() or 1)
    else:
        from harness.spreading.pool import Pool, processes_to_resume

        count = processes_to_resume(folder, args.workers, args.max_cost_usd)
        placement = Pool(count) if count > 1 else None
    result = resume(
        folder, placement=placement, base_url=args.base_url,
        price_per_million=args.price_per_million, allow_mismatch=args.allow_mismatch,
        progress=not args.no_progress, on_warning=warn, interrupts=interrupts, cache=cache,
        concurrency=args.concurrency, rps=args.rps, max_requests=args.max_requests,
        max_cost_usd=args.max_cost_usd, max_wait_s=args.max_wait_seconds,
    )  # fmt: skip
    return report("resume", result)
