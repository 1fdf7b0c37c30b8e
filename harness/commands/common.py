"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite

# The exit status of every command, said once (docs/comparing.md "Exit status" lists the same).
DONE = "0 done"
CAPPED = (
    "1 stopped by a cap (--max-requests, --max-cost-usd, --max-wait-seconds) or jobs left "
    "unfinished (numericjev resume continues)"
)
REFUSED = "2 bad input or refused (one line on stderr; nothing recorded is touched)"
INTERRUPTED = (
    "130 interrupted by Ctrl-C, 143 by SIGTERM (the requests in flight are answered and "
    "recorded first; numericjev resume continues where it stopped)"
)
WRITE_FAILED = (
    "4 a record could not be written (a full disk): stopped at once, nothing sent after it "
    "(one line names the file; numericjev resume continues once it is fixed)"
)
RUNNING = (DONE, CAPPED, REFUSED, WRITE_FAILED, INTERRUPTED)
GATE = "3 the release gate failed (compare --fail-on-worse: the summary names the cells)"
READING = (DONE, REFUSED, "130 interrupted by Ctrl-C")


def exit_codes(*codes: str) -> str:
    """The ``--help`` epilog line that lists a command's exit statuses."""
    return "exit status: " + "; ".join(codes) + "."


@dataclass(frozen=True)
class Handoff:
    """A command's result that asks the CLI to have ``analysis`` summarise a comparison
    folder next (the harness never imports analysis; ``harness.cli`` is the one arrow)."""

    status: int  # the exit status of the runs (0 done, 1 capped or unfinished)
    comparison: Path


RUN_HELP = "the run folder, or latest (the run started last under runs/)"


def add_suite_options(parser: argparse.ArgumentParser) -> None:
    """``--suite``, ``--seed``, ``--param`` and ``--decoders``."""
    parser.add_argument("--suite", default="affine", help="suite name (default: affine)")
    parser.add_argument("--seed", type=int, help="case-generation seed (default: the suite's)")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="suite parameter, repeatable (affine: per_operator=16, cells=100, repeats=1)",
    )
    parser.add_argument(
        "--decoders",
        help="comma-separated decoders (default: the suite's), e.g. direct,tree3,tree10",
    )


def parse_pairs(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` strings into a dict; refuses anything else (the one reader,
    ``harness.backends.parse_options``, imported here only when there is something to read).
    A key given again on the command line replaces the earlier value, as options do."""
    if not items:
        return {}
    from harness.backends import parse_options

    return {k: v for item in items for k, v in parse_options([item], option).items()}


def suite_from(args: argparse.Namespace) -> Suite:
    """Build the suite the options name."""
    decoders = None
    if args.decoders is not None:
        decoders = tuple(d.strip() for d in args.decoders.split(",") if d.strip())
    return load_suite(
        args.suite, seed=args.seed, params=parse_pairs(args.param, "--param"), decoders=decoders
    )


# The same class as analysis.cli's, on purpose: importing that module loads numpy and the
# report's renderers (~115 ms) on every numericjev command, and analysis never imports harness.
class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr, exit status 2, as every
    other bad input (argparse's own print the whole usage first); subparsers inherit it."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` in one line, pointing at ``--help``, and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
