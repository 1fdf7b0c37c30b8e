"""``numericjev merge``: the shards of a run become one run folder (``harness.spreading.merging``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.common import READING, exit_codes


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``merge`` parser."""
    parser = sub.add_parser(
        "merge",
        help="merge the shards of a run (numericjev run --shard K/N --run RUN) into RUN",
        description=(
            "Check that every shard RUN/shards/K matches the run (suite, cases, sources, "
            "decoders, model), that their jobs are disjoint and together complete (else say "
            "which are missing), then write RUN/outputs.jsonl, requests.jsonl and "
            "sessions.jsonl so that analyze, report, diff and compare read RUN as one run. "
            "Merging again changes nothing."
        ),
        epilog=exit_codes(*READING),
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help="the parent run folder")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Merge, then say what was written."""
    from harness.spreading.merging import merge

    merged = merge(args.run_folder)
    failed = f", {merged.failed_jobs:,} failed (resume their shard)" if merged.failed_jobs else ""
    print(
        f"merged {merged.shards} shards into {merged.folder}: {merged.jobs:,} jobs{failed}; "
        f"{merged.bytes_written['requests.jsonl'] / 2**20:.1f} MB of requests "
        f"in {merged.seconds:.2f} s",
        file=sys.stdout,
    )
    print(f"analyse it: make analyze RUN={merged.folder}", file=sys.stdout)
    return 0
