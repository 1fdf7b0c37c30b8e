"""``numericjev compact RUN``: a run's logs rewritten as zstd frames (``runfolder.compact``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands.common import READING, RUN_HELP, exit_codes


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``compact`` parser."""
    parser = sub.add_parser(
        "compact",
        help="rewrite a run's logs as zstd frames (about a tenth of the bytes)",
        description=(
            "Rewrite RUN/requests.jsonl and outputs.jsonl as requests.jsonl.zst and "
            "outputs.jsonl.zst: every whole line, in order, byte for byte. Every command reads "
            "both forms, and resume keeps appending frames. Kill-safe: the plain log is "
            "removed only once the compressed one is on disk; compacting again finishes the "
            "job. A comparison folder compacts each of its runs."
        ),
        epilog=exit_codes(*READING),
    )
    parser.add_argument("run_folder", type=Path, metavar="RUN", help=RUN_HELP)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compact the run (or each run of a comparison) and say what it saved."""
    from runfolder import COMPARISON, MANIFEST, RunFolderError, resolve_run
    from runfolder.compact import compact_run

    folder = resolve_run(args.run_folder)
    if (folder / COMPARISON).exists():
        runs = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
    elif (folder / MANIFEST).exists():
        runs = [folder]
    else:
        raise RunFolderError(f"{folder} holds no run (no {MANIFEST}); pass a run folder")
    for path in runs:
        done = compact_run(path)
        if not done:
            print(f"{path}: nothing to compact (its logs are compressed already)")
        for c in done:
            share = c.after / c.before if c.before else 0.0
            print(
                f"{path}: {c.name} {c.before / 2**20:.2f} MB -> {c.after / 2**20:.2f} MB "
                f"({share:.1%})"
            )
    return 0
