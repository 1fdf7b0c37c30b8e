"""``numericjev list``: one line per run folder, newest first, without reading request logs."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.common import READING, exit_codes


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``list`` parser."""
    parser = sub.add_parser(
        "list",
        help="one line per run folder under runs/, newest first",
        description=(
            "One line per run or comparison folder directly under ROOT (default runs/), the "
            "run started last first (the same order 'latest' takes its run from): suite, "
            "model, when it started, jobs done/failed/pending, requests answered, cost, and "
            "whether it is complete (a compare --sequential comparison its rule stopped: "
            "'stopped at look K of N (sequential)', its runs' pending families left unasked "
            "by the rule); a comparison's runs are listed under it, indented. Reads "
            "each manifest, outputs.jsonl and totals.json, never requests.jsonl: requests and "
            "cost are as the run's last session recorded them when it ended, '>=' when a "
            "later session was killed before it could, '?' when none did (numericjev status "
            "RUN counts them exactly from the log)."
        ),
        epilog=exit_codes(*READING),
    )
    parser.add_argument("root", type=Path, nargs="?", metavar="ROOT", help="default: runs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the rows."""
    from harness.errors import ConfigError
    from runfolder import RUNS_ROOT, entries, list_rows

    root: Path = args.root or RUNS_ROOT
    if args.root is not None and not root.is_dir():
        raise ConfigError(f"{root} is not a folder; pass the folder that holds run folders")
    found = entries(root)
    if not found:
        print(f"no run folders under {root}/ (start one with: make run)")
        return 0
    for row in list_rows(found):
        print(row.line(), flush=False)
        for cell in row.cells:
            print("  " + cell.line())
    return 0
