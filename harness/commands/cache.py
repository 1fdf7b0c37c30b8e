"""``numericjev cache``: the request cache's stats, pruning, export and import (harness.cache)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from harness.errors import ConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(text: str) -> float:
    """``--older-than``: a number and a unit, s m h d or w (``30d``), in seconds."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhdw])", text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected a duration such as 30d, 12h or 2w; got {text!r}"
        )
    return float(match[1]) * _UNITS[match[2]]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``cache`` parser and its four actions."""
    parser = sub.add_parser(
        "cache",
        help="the request cache: stats | prune | export FILE | import FILE",
        description=(
            "The request cache that run, resume and compare share (docs/cache.md). "
            "Its file is $NUMERICJEV_CACHE, else $XDG_CACHE_HOME/numericjev/cache.sqlite3 "
            "(~/.cache by default). export writes one self-contained file; import adds the "
            "entries it does not have yet (importing twice adds nothing). A file that is not "
            "a NumericJev cache (another application's SQLite database, another version) is "
            "refused in one line and left as it was."
        ),
        epilog="exit status: 0 done; 2 bad input (a one-line error).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("stats", help="entries, size, models, what the entries cost when paid")
    prune = actions.add_parser("prune", help="delete entries by age and/or model")
    prune.add_argument("--older-than", type=duration, metavar="D", help="e.g. 30d")
    prune.add_argument("--model", metavar="M", help="the model spec's name")
    export = actions.add_parser("export", help="write the whole cache to FILE (a new file)")
    export.add_argument("file", type=Path, metavar="FILE")
    imp = actions.add_parser("import", help="add FILE's entries not here yet")
    imp.add_argument("file", type=Path, metavar="FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Do the action on the cache at the documented place."""
    from harness.cache import Store, default_path

    path = default_path()
    if args.action == "prune" and args.older_than is None and args.model is None:
        raise ConfigError("cache prune needs --older-than D and/or --model M (to delete all: rm)")
    if args.action == "import" and not args.file.is_file():
        raise ConfigError(f"{args.file} is not a file; give the path export wrote")
    store = Store(
        path,
        readonly=args.action in ("stats", "export"),
        unwritable=f"{args.action} changes the file: make it and its folder writable by this "
        f"user, or {args.action} a writable copy and point NUMERICJEV_CACHE at it",
    )
    try:
        if args.action == "stats":
            s = store.stats()
            models = ", ".join(f"{m} ({n:,})" for m, n in sorted(s.models.items())) or "none"
            print(f"cache {s.path}: {s.entries:,} entries, {s.bytes / 2**20:.2f} MB")
            print(f"models: {models}")
            print(f"paid for when first asked: USD {s.cost_usd:.6f}")
        elif args.action == "prune":
            gone = store.prune(args.older_than, args.model)
            print(f"pruned {gone:,} entries from {path}")
        elif args.action == "export":
            n = store.export(args.file)
            print(f"exported {n:,} entries to {args.file}")
        else:
            added = store.import_from(args.file)
            print(f"imported {added:,} new entries from {args.file} into {path}")
    finally:
        store.close()
    sys.stdout.flush()
    return 0
