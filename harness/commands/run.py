"""``numericjev run``: run a suite against a model and write a run folder."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from harness.backends.base import DEFAULT_CONCURRENCY
from harness.commands.common import (
    RUNNING,
    add_suite_options,
    exit_codes,
    suite_from,
)
from harness.commands.model_options import add_model_options, model_spec, run_settings
from harness.errors import ConfigError

DRAIN_S = 5.0  # as harness.running.interrupts.DRAIN_S (not imported: --help stays fast)

if TYPE_CHECKING:  # imported when the command runs, so that --help stays fast
    from harness.backends import ModelSpec
    from harness.running.session import Placement


def add_limit_options(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """Concurrency, pace and caps (shared with ``resume``, where they override the manifest)."""
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY if defaults else None,
        help=f"requests in flight at once (default: {DEFAULT_CONCURRENCY}; resume: the run's)",
    )
    parser.add_argument("--rps", type=float, help="at most this many requests per second")
    parser.add_argument(
        "--max-requests",
        type=int,
        help="stop cleanly after this many requests sent to the server in this invocation "
        "(an answer from the request cache is not one; resume continues)",
    )
    parser.add_argument(
        "--max-cost-usd",
        type=float,
        help="stop cleanly before the run's total recorded cost, earlier sessions included, "
        "would exceed this: each request holds its largest possible cost (one token per byte "
        "at the price) until it is answered; needs a price (the table or --price-per-million)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_session_options(parser: argparse.ArgumentParser) -> None:
    """The 429 ceiling and the interrupt drain of one run or resume (shared with ``resume``)."""
    parser.add_argument(
        "--max-wait-seconds",
        type=float,
        help="stop cleanly once 429 replies have paused this invocation this long in total "
        "(a 429 never fails a job; default 600; resume: the run's)",
    )
    add_drain_option(parser)


def add_drain_option(parser: argparse.ArgumentParser) -> None:
    """``--drain-seconds`` (shared with ``resume`` and ``compare``)."""
    parser.add_argument(
        "--drain-seconds",
        type=float,
        default=DRAIN_S,
        help="on Ctrl-C or SIGTERM, stop sending and wait this long for the requests in flight "
        f"to be answered and recorded (default {DRAIN_S:g}; a second Ctrl-C stops at once)",
    )
    add_cache_option(parser)


def add_cache_option(parser: argparse.ArgumentParser) -> None:
    """``--cache`` (shared with ``resume``, ``compare`` and ``probe``)."""
    parser.add_argument(
        "--cache",
        choices=("auto", "read-write", "read-only", "off"),
        help="the request cache (docs/cache.md): auto (default) is off for the "
        "in-process sim and oracle and read-write for every other model; "
        "$NUMERICJEV_CACHE_MODE when neither this nor a settings file says; file: "
        "$NUMERICJEV_CACHE, else ~/.cache/numericjev/cache.sqlite3 (one that is not a "
        "NumericJev cache is refused, untouched; a stored answer that fails its check is "
        "asked again)",
    )


def add_check_option(parser: argparse.ArgumentParser) -> None:
    """``--skip-check`` (shared with ``compare``)."""
    parser.add_argument(
        "--skip-check",
        action="store_true",
        help="served models: do not run the exact-oracle check of the decoders first",
    )


def announce(args: argparse.Namespace, what: str = "run folder") -> Callable[[Path], None]:
    """Print the folder as soon as it exists, before any progress bar, and keep it for the
    Ctrl-C message (``harness.cli``): the user always knows what to resume."""

    def show(folder: Path) -> None:
        args.interrupt_folder = folder
        # With --json, stdout is the JSON alone.
        out = sys.stderr if getattr(args, "json", False) else sys.stdout
        print(
            f"{what}: {folder}  (continue it any time: numericjev resume {folder})",
            file=out,
            flush=True,
        )

    return show


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``run`` parser."""
    parser = sub.add_parser(
        "run",
        help="run a suite against a model and write a run folder",
        description=(
            "Run every job (case x condition x order x repeat) of a suite against a model. Each "
            "job sends one request per round batching the ready questions of all its decoders. "
            "Writes runs/<suite>-<model>-<time>/ (manifest.json, requests.jsonl, outputs.jsonl). "
            "Interrupt any time (Ctrl-C: the requests in flight are answered and recorded "
            "first); continue with numericjev resume RUN."
        ),
        epilog=(
            "models: sim (built-in simulator, no network), oracle (exact labels), gguf:PATH (a "
            "local GGUF file; needs the gguf extra), or a served model's name, sent to --base-url "
            "in the --wire format. systemone (default): $TYPESAFE_BASE_URL, else the hosted API, "
            "key $TYPESAFE_API_KEY. openai-decisions, openai-chat: $OPENAI_BASE_URL, else "
            "OpenAI's API, key $OPENAI_API_KEY. Keys are never written anywhere. "
            "Before the first request to a served model, every decoder of the suite is checked "
            "against the exact oracle in process (seconds); a failure refuses the run "
            "(--skip-check skips it). " + exit_codes(*RUNNING)
        ),
    )
    add_suite_options(parser)
    add_model_options(parser)
    parser.add_argument(
        "--run", type=Path, help="run folder (default: runs/<suite>-<model>-<time>)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="send nothing: print jobs, requests, tokens, cost"
    )
    add_check_option(parser)
    add_limit_options(parser)
    add_session_options(parser)
    add_compress_option(parser)
    group = parser.add_argument_group("spreading a run (docs/scaling.md)")
    group.add_argument(
        "--workers",
        type=workers_count,
        metavar="N",
        help="answer in N local processes, this one writing the run folder: for a model "
        "answered in process in Python (sim, oracle); default auto: one per core for those, "
        "1 for any other model or with --max-cost-usd; with --ray, the number of shards",
    )
    group.add_argument(
        "--shard",
        metavar="K/N",
        help="run only shard K of N (jobs by a stable hash of their id) into RUN/shards/K; "
        "needs --run RUN, the same for every shard; then: numericjev merge RUN",
    )
    group.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run --workers N shards as Ray actors on any nodes, sharing one rate limit; this "
        "process writes the one run folder (no shared disk, no merge; a lost node's shard is "
        "started again elsewhere). Needs the 'ray' extra; no ADDRESS starts a local Ray",
    )
    parser.set_defaults(func=run)


def add_compress_option(parser: argparse.ArgumentParser) -> None:
    """``--compress`` (shared with ``compare``): a new run's logs as zstd frames."""
    parser.add_argument(
        "--compress",
        action="store_true",
        help="write requests.jsonl and outputs.jsonl as zstd frames (.jsonl.zst, one frame per "
        "flush; a kill still loses at most the last): about a tenth of the bytes; every command "
        "reads both forms; resume keeps the run's form (docs/run-folder.md)",
    )


def workers_count(text: str) -> int | None:
    """``--workers``: a whole number, or ``auto`` (None)."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or auto; got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    """Validate everything, then run (or describe, with --dry-run)."""
    from harness.backends import IN_PROCESS
    from harness.calling import Limits
    from harness.calling.limits import DEFAULT_MAX_WAIT_S
    from harness.commands.summary import report
    from harness.running.interrupts import Interrupts
    from harness.running.session import run as run_suite

    # Limits check themselves (one line naming the option) before anything is written.
    wait = DEFAULT_MAX_WAIT_S if args.max_wait_seconds is None else args.max_wait_seconds
    limits = Limits(args.concurrency, args.rps, args.max_requests, args.max_cost_usd, wait)
    settings = run_settings(args)
    interrupts = Interrupts(args.drain_seconds)
    suite = suite_from(args)
    spec = model_spec(args)  # a bad sim knob is refused here, with and without --dry-run
    if spec.name in IN_PROCESS and args.base_url:
        # Else ignored in silence: a user testing the HTTP path would measure the in-process sim.
        raise ConfigError(
            f"--base-url applies to models served over HTTP; {spec.name!r} runs in process "
            "(to ask serve-sim, name a served model: --model jev-sim --base-url URL)"
        )
    if args.dry_run:  # sends nothing, so it needs no key and builds no client
        import os

        from harness.running.dryrun import describe, dry_run_price, server_lines
        from harness.spreading.pool import processes_for

        # What the real run would refuse, a dry run refuses too.
        if args.ray is None:
            processes_for(spec.name, args.workers, spend_cap=args.max_cost_usd is not None)
        if args.run is not None and args.run.exists() and not args.run.is_dir():
            raise ConfigError(
                f"--run {args.run} is a file, not a folder; choose another --run folder"
            )

        for line in [*describe(suite, spec, dry_run_price(spec)), *server_lines(spec, os.environ)]:
            print(line, file=sys.stdout)
        return 0
    if spec.name not in ("sim", "oracle") and not args.skip_check:
        from harness.running.check import preflight

        preflight(suite)  # before any folder exists or any request is paid for
    progress = not args.no_progress
    placement = _placement(args, spec)
    here = args.shard is None and args.ray is None  # a shard or a Ray run is not announced
    result = run_suite(
        suite, spec, limits, placement=placement, folder=args.run, progress=progress,
        interrupts=interrupts, settings=settings,
        on_start=announce(args) if here else lambda folder: None,
    )  # fmt: skip
    for line in result.lost:  # a lost Ray node: said, as any repair is
        print(f"note: {line}", file=sys.stderr)
    return report("run", result)


def _placement(args: argparse.Namespace, spec: ModelSpec) -> Placement | None:
    """Where ``--workers``, ``--shard`` and ``--ray`` put the run (None: this process)."""
    if args.shard is None and args.ray is None:
        from harness.spreading.pool import Pool, processes_for

        count = processes_for(spec.name, args.workers, spend_cap=args.max_cost_usd is not None)
        return Pool(count) if count > 1 else None
    if args.workers is not None and args.workers < 1:
        raise ConfigError(f"--workers must be at least 1; got {args.workers}")
    if args.shard is not None:
        from harness.running.sharding import Shard
        from harness.spreading.spread import Shards

        if args.workers not in (None, 1) or args.ray is not None:
            raise ConfigError("--shard runs one shard: it takes neither --workers nor --ray")
        shard = Shard.parse(args.shard)
        if args.run is None:
            raise ConfigError(
                "--shard needs --run RUN: every shard of a run must name the same folder"
            )
        return Shards(shard.count, shard.index)
    from harness.spreading.raylaunch import Ray

    return Ray(args.workers or 1, args.ray)  # --ray: the number of shards (auto: one)
