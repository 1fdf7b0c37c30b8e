"""``numericjev probe``: one look at a model before paying for a suite."""

from __future__ import annotations

import argparse
import sys

from harness.backends.base import DEFAULT_CONCURRENCY
from harness.commands.common import DONE, add_suite_options, exit_codes, suite_from
from harness.commands.model_options import add_model_options, model_spec, run_settings
from harness.commands.run import add_cache_option
from harness.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``probe`` parser."""
    parser = sub.add_parser(
        "probe",
        help="ask a model a few of a suite's questions: reachable, key, latency, coverage, cost",
        description=(
            "Send the first request of each of the suite's first --requests jobs one at a "
            "time, then those of 8 more jobs at once, twice (each request once), through the "
            "model's wire and report: reachable, key accepted, the served model's name, "
            "latency, whether the answers parse, on openai-chat whether log-probabilities "
            "come back and how much probability falls on the option tokens (coverage), and "
            "the estimated cost and duration of the whole suite at --concurrency. Nothing is "
            "written into a run folder; the answers go into the request cache (--cache) as a "
            "run's at --concurrency would, so that run does not pay for them again."
        ),
        epilog="models: as run --model (a profile name too). "
        + exit_codes(
            DONE + ": the suite can run",
            "2 bad input, or the suite cannot run (the reason on stdout): a refused key, an "
            "unreachable server, answers that do not parse",
        ),
    )
    add_suite_options(parser)
    add_model_options(parser)
    parser.add_argument(
        "--requests",
        type=int,
        default=3,
        help="requests sent one at a time, one per job (default 3); then 2 bursts of 8",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"the concurrency the estimate assumes (default: {DEFAULT_CONCURRENCY}, as run)",
    )
    add_cache_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Probe, print, and exit 0 when the suite can run, else 2."""
    from harness.running.probe import probe, report

    if args.requests < 1:
        raise ConfigError(f"--requests must be at least 1; got {args.requests}")
    if args.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1; got {args.concurrency}")
    suite = suite_from(args)
    spec = model_spec(args)
    seen = probe(
        suite, spec, args.requests, concurrency=args.concurrency, settings=run_settings(args)
    )
    for line in report(suite, spec, seen, args.concurrency):
        print(line, file=sys.stdout)
    return 0 if seen.problem is None else 2
