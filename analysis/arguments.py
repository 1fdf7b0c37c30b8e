"""The analysis half of the command line's options: ``analyze``, ``report``, ``diff`` and
``export`` (``analysis.cli`` runs them)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from runfolder.verdict_option import add_test_option

from .export import add_export_parser
from .loading.cache.column_cache import CACHE_DIR, CACHE_ENV
from .statistics.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED

__all__ = ["EXIT_CODES", "GATE_FAILED", "PROG", "SUMMARY_FILES", "OneLineParser", "build_parser"]

PROG = "numericjev"
# The exit statuses of analyze, report and diff (docs/comparing.md "Exit status" lists the same).
EXIT_CODES = (
    "exit status: 0 done; 2 bad input or refused, --strict included (one line on stderr; "
    "nothing is written); 130 interrupted by Ctrl-C."
)
RUN_HELP = "run folder (runs/<run-id>), comparison folder, or latest (the run started last)"
GATE_FAILED = 3  # compare --fail-on-worse: a cell is shown worse than the baseline by > margin
SUMMARY_FILES = ("summary.md", "summary.json", "index.html")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr, exit status 2, as every
    other bad input (argparse's own print the whole usage first); subparsers inherit it."""

    def error(self, message: str) -> NoReturn:
        """Print ``message`` in one line, pointing at ``--help``, and exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``analyze``, ``report``, ``diff`` and ``export``."""
    parser = OneLineParser(prog=PROG, description="Analyse NumericJev run folders.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def bootstrap_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--strict",
            action="store_true",
            help="refuse (exit 2, nothing written) instead of printing a warning banner: "
            "incomplete or mixed runs, a manifest edited since its seal or without one "
            "(sessions.jsonl missing), diffs of runs that differ in more than the model",
        )
        p.add_argument(
            "--bootstrap",
            type=_count,
            default=None,
            metavar="N",
            help=f"family-bootstrap replicates (default {DEFAULT_REPLICATES}, or what compare "
            "recorded; 0: none)",
        )
        p.add_argument(
            "--seed",
            type=int,
            default=DEFAULT_SEED,
            metavar="S",
            help=f"bootstrap seed (default {DEFAULT_SEED})",
        )

    def probability_option(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--no-probabilities",
            action="store_true",
            help="skip the Probabilities section (the interval paths and their answers)",
        )
        p.add_argument(
            "--no-cache",
            action="store_true",
            help=f"read the logs even if their columns are kept in RUN/{CACHE_DIR}/, and keep "
            f"nothing (the same as {CACHE_ENV}=off)",
        )

    p = sub.add_parser(
        "analyze",
        help="print the paper's tables for a run folder (a comparison: its summary)",
        epilog=EXIT_CODES,
    )
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    bootstrap_options(p)
    probability_option(p)

    p = sub.add_parser(
        "report",
        help="write report.md and figures (SVG, PNG) for a run (a comparison: "
        + ", ".join(SUMMARY_FILES)
        + ")",
        epilog=EXIT_CODES,
    )
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument(
        "--out", metavar="DIR", help="output folder (default RUN/report; a comparison: RUN)"
    )
    p.add_argument("--job", metavar="JOB_ID", help="job whose decision path is drawn")
    p.add_argument(
        "--decoder",
        default=None,
        help="tree decoder to draw (default: tree10, or the run's widest tree without one)",
    )
    bootstrap_options(p)
    probability_option(p)

    p = sub.add_parser(
        "diff", help="compare run B with run A (same suite and case set)", epilog=EXIT_CODES
    )
    p.add_argument("a", metavar="A", help="baseline run folder (or latest)")
    p.add_argument("b", metavar="B", help="run folder compared with A (or latest)")
    p.add_argument(
        "--top",
        type=_count,
        default=10,
        metavar="N",
        help="list the N largest changes by |ΔAPE| (default 10)",
    )
    p.add_argument("--json", action="store_true", help="print the numbers as one JSON object")
    p.add_argument(
        "--html",
        metavar="OUT",
        help="also write a self-contained HTML page (both provenances, deltas, the largest "
        "changes, A's and B's rounds side by side) to the file OUT",
    )
    add_test_option(p)  # the test whose interval brackets each paired difference
    bootstrap_options(p)
    probability_option(p)
    add_export_parser(sub, EXIT_CODES)
    return parser
