"""``numericjev check``: every decoder against the exact oracle, in process."""

from __future__ import annotations

import argparse
import sys

from harness.commands.common import DONE, REFUSED, add_suite_options, exit_codes, suite_from


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``check`` parser."""
    parser = sub.add_parser(
        "check",
        help="every decoder against the exact oracle, in process",
        description=(
            "Decode every case x condition x order with every decoder against an exact-label "
            "oracle and exit non-zero unless every target is recovered exactly. This verifies "
            "decoding mechanics, not any model."
        ),
        epilog=exit_codes(
            DONE + " (every target recovered)",
            "1 some target not recovered",
            REFUSED,
            "130 interrupted by Ctrl-C",
        ),
    )
    add_suite_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the check and print its counts."""
    from harness.running.check import run_check

    suite = suite_from(args)
    if not suite.exact:
        print(
            f"numericjev check: suite {suite.name!r} has no exact targets to check", file=sys.stderr
        )
        return 2
    report = run_check(suite)
    verdict = "all recovered" if report.ok else "NOT all recovered"
    print(
        f"oracle check, suite {suite.name} (cases {suite.case_hash()[:12]}): "
        f"{report.jobs:,} jobs, {report.outputs:,} outputs, {report.recovered:,} recovered exactly "
        f"({verdict}); {report.requests:,} requests in {report.rounds} rounds "
        f"(one request per job per round; decoders {', '.join(suite.decoders)})"
    )
    for line in report.failures:
        print(f"  {line}", file=sys.stderr)
    return 0 if report.ok else 1
