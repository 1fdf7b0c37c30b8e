"""``numericjev compare``: every model × suite in one comparison folder, then one summary,
which is analysis's: ``run`` returns a ``Handoff`` and ``harness.cli`` passes the folder on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.commands.common import GATE, RUNNING, Handoff, exit_codes, parse_pairs
from harness.commands.model_options import add_model_options, base_spec
from harness.commands.run import (
    add_check_option,
    add_compress_option,
    add_drain_option,
    add_limit_options,
    announce,
)
from runfolder.verdict_option import add_test_option

if TYPE_CHECKING:  # imported when the command runs, so that --help stays fast
    from harness.running.interrupts import Interrupts

METRICS = ("mape", "nmae", "within5", "lar", "crps", "logscore")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``compare`` parser."""
    parser = sub.add_parser(
        "compare",
        help="run every model x suite into one comparison folder and summarise it",
        description=(
            "Run each suite against each model, one run folder per model x suite (a cell), in "
            "one comparison folder (default runs/compare-<UTC time>), then print one summary: "
            "per suite, decoder and condition, each model's metric with its 95% family-"
            "bootstrap interval, each later model's paired difference against the first over "
            "the outputs ok in both, and a verdict (better / worse / no clear difference at "
            "95%, Holm-corrected for the number of cells compared) from the verdict test "
            "(--test) over families, with the interval that inverts it and, beside each "
            "no clear difference, its minimum detectable effect. The summary is also "
            "written to DIR/summary.md, DIR/summary.json and DIR/index.html. Interrupt any "
            "time (Ctrl-C: the requests in flight are answered and recorded first); "
            "numericjev resume DIR continues the whole comparison."
        ),
        epilog=(
            "models: as run --model, comma-separated, the baseline first; a spec's options "
            "follow a colon: sim,sim:seed=7 or sim,sim:confusion=0.3,seed=3. "
            + exit_codes(*RUNNING, GATE)
        ),
    )
    parser.add_argument(
        "--models",
        required=True,
        help="model specs or profile names (numericjev.toml), the baseline first, e.g. "
        "sim,sim:seed=7 or jev-prod,jev-next",
    )
    parser.add_argument("--suites", required=True, help="suites, e.g. affine,exploratory")
    add_test_option(parser)
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="ask the suite's families in a seeded random order, in --looks batches, and stop "
        "once every cell is decided or futile (alpha spent over the looks, Holm at each; "
        "--margin: a cell whose 95%% interval lies inside +-margin is futile); one suite",
    )
    parser.add_argument("--looks", type=int, help="--sequential's looks (default 4)")
    parser.add_argument("--sequential-seed", type=int, help="--sequential's family order seed")
    parser.add_argument("--out", type=Path, help="comparison folder (default runs/compare-<time>)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="[SUITE.]KEY=VALUE",
        help="suite parameter, repeatable: affine.per_operator=4 (one suite) or KEY=VALUE "
        "(every suite listed)",
    )
    add_model_options(parser, one_model=False)
    add_check_option(parser)
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="send nothing: print each cell's jobs, requests, HTTP calls, tokens and cost",
    )
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="mape",
        help="the metric compared and judged (default mape; within5: higher is better; lar: "
        "100 x mean |ln(value/target)|, zeros and sign mismatches counted apart; crps: the "
        "predicted distribution's CRPS in %% of U-L; logscore: its density log score in nats; "
        "both over the outputs scored in both runs, n/a without probabilities)",
    )
    parser.add_argument(
        "--bootstrap",
        type=int,
        default=10_000,
        metavar="N",
        help="each model's family-bootstrap resamples (default 10000; 0: no intervals and no "
        "verdicts)",
    )
    parser.add_argument(
        "--fail-on-worse",
        action="store_true",
        help="release gate: exit 3 when any cell is shown worse than the baseline (by more "
        "than --margin), at the verdicts' level, Holm-corrected over the cells",
    )
    parser.add_argument(
        "--margin",
        type=float,
        metavar="M",
        help="with --fail-on-worse: the tolerated loss in the metric's points (default 0); a "
        "cell fails only when shown worse by more than M",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 2) instead of printing the summary under warning banners",
    )
    add_limit_options(parser)
    add_drain_option(parser)
    add_compress_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int | Handoff:
    """Check everything, write the comparison folder, run its cells, hand it to analysis."""
    from harness.backends import split_models
    from harness.calling import Limits
    from harness.comparing.comparison import CompareOptions, create_comparison
    from harness.errors import ConfigError
    from harness.running.interrupts import Interrupts

    if args.bootstrap < 0:
        raise ConfigError(f"--bootstrap must be 0 or more; got {args.bootstrap}")
    if args.margin is not None and not (args.fail_on_worse or args.sequential):
        raise ConfigError(
            "--margin sets the release gate's margin (add --fail-on-worse) or --sequential's"
        )
    if args.margin is not None and not args.margin >= 0:
        raise ConfigError(f"--margin must be 0 or more (metric points); got {args.margin}")
    # Limits check themselves (one line naming the option) before anything is written.
    Limits(args.concurrency, args.rps, args.max_requests, args.max_cost_usd)
    interrupts = Interrupts(args.drain_seconds)
    options = CompareOptions(
        model=base_spec(args),  # run's model options, less --model
        concurrency=args.concurrency,
        rps=args.rps,
        skip_check=args.skip_check,
        summary={
            "metric": args.metric,
            "test": args.test,
            "bootstrap": args.bootstrap,
            "fail_on_worse": args.fail_on_worse,
            "margin": args.margin or 0.0,
        },
        compress=args.compress,
        sequential=_sequential(args),
        per_model=getattr(args, "per_model", None),
    )
    models, params = split_models(args.models), parse_pairs(args.param, "--param")
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    if args.dry_run:
        from harness.comparing.comparison import describe_comparison

        for line in describe_comparison(models, suites, params, options):
            print(line)
        return 0
    folder = create_comparison(
        models, suites, folder=args.out, params=params, options=options, cache=args.cache
    )
    announce(args, "comparison folder")(folder)
    # The limits and cache the command line, [defaults] or a profile set are the options';
    # only a resume's own replace them.
    return _run(args, folder, lambda message: None, interrupts, resuming=False)


def _sequential(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--sequential``'s plan settings (checked), or None."""
    from harness.errors import ConfigError

    if not args.sequential:
        if args.looks is not None or args.sequential_seed is not None:
            raise ConfigError("--looks and --sequential-seed apply to --sequential: add it")
        return None
    from harness.comparing.options import sequential_plan

    looks = 4 if args.looks is None else args.looks
    seed = 20261127 if args.sequential_seed is None else args.sequential_seed
    return sequential_plan(looks, seed, args.margin or 0.0)


# resume options that apply to one run: a comparison's resume refuses them, naming the
# per-cell command (--concurrency and --rps change no answer: they pass to every cell).
PER_RUN = (
    ("--base-url", "base_url"),
    ("--allow-mismatch", "allow_mismatch"),
    ("--price-per-million", "price_per_million"),
    ("--max-wait-seconds", "max_wait_seconds"),
    ("--workers", "workers"),
)


def continue_comparison(
    args: argparse.Namespace, folder: Path, warn: Callable[[str], None], interrupts: Interrupts
) -> int | Handoff:
    """``numericjev resume`` of a comparison folder: every cell, then the summary."""
    from harness.errors import ConfigError

    for option, name in PER_RUN:
        if getattr(args, name) not in (None, False):
            raise ConfigError(
                f"{option} applies to one run: resume a run of the comparison on its own "
                f"(numericjev resume {folder}/<run> {option} ...), then resume {folder}"
            )
    print(f"comparison folder: {folder}", flush=True)
    args.json = args.strict = False
    return _run(args, folder, warn, interrupts, resuming=True)


def _run(
    args: argparse.Namespace,
    folder: Path,
    warn: Callable[[str], None],
    interrupts: Interrupts,
    *,
    resuming: bool,
) -> int | Handoff:
    from harness.commands.summary import interrupted, summary_lines
    from harness.comparing.comparison import run_comparison
    from harness.comparing.sequential import run_sequential
    from runfolder import load_comparison

    kwargs: dict[str, Any] = {
        "max_requests": args.max_requests,
        "max_cost_usd": args.max_cost_usd,
        "concurrency": args.concurrency if resuming else None,
        "rps": args.rps if resuming else None,
        "progress": not args.no_progress,
        "on_warning": warn,
        "interrupts": interrupts,
        # A resume's own --cache replaces every cell's; from the environment (or, starting,
        # from anywhere) it is the mode where a profile sets none.
        "cache": args.cache if resuming and "cache" in args.given else None,
        "default_cache": None if resuming and "cache" in args.given else args.cache,
    }
    settled = False
    if load_comparison(folder)["options"].get("sequential"):
        result, settled = run_sequential(folder, **kwargs)
    else:
        result = run_comparison(folder, **kwargs)
    if result.interrupted is not None:
        return interrupted(args.command, result, "comparison folder")
    out = sys.stderr if args.json else sys.stdout
    for run in result.cells:
        if run is None or run.complete:
            continue
        if settled and not run.counters.jobs_failed:
            continue  # its pending jobs are the families the sequential rule chose not to ask
        for line in summary_lines(run):
            print(f"  {line}", file=out)
    if result.fatal:
        print(f"numericjev {args.command}: error: {result.fatal}", file=sys.stderr)
        return 2
    if not result.complete:
        print(
            f"stopped early: {result.stopped}; continue with: numericjev resume {folder}",
            file=out,
        )
        return 1
    if settled:  # a sequential comparison that stopped asking: its cells are left unfinished
        return Handoff(0, folder)
    if not result.finished:
        print(f"some jobs are unfinished; retry them with: numericjev resume {folder}", file=out)
    return Handoff(0 if result.finished else 1, folder)
