"""Options and helpers shared by several subcommands."""

from __future__ import annotations

import argparse

from harness.cases import Suite
from harness.errors import ConfigError
from harness.registry import load_suite


def add_suite_options(parser: argparse.ArgumentParser) -> None:
    """``--suite``, ``--seed``, ``--param`` and ``--decoders``."""
    parser.add_argument("--suite", default="affine", help="suite name (default: affine)")
    parser.add_argument(
        "--seed", type=int, default=None, help="case-generation seed (default: the suite's)"
    )
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="suite parameter, repeatable (affine: per_operator=16, cells=100, repeats=1)",
    )
    parser.add_argument(
        "--decoders",
        default=None,
        help="comma-separated decoders (default: the suite's), e.g. direct,tree3,tree10",
    )


def parse_pairs(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` strings into a dict; refuses anything else."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} takes KEY=VALUE; got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def suite_from(args: argparse.Namespace) -> Suite:
    """Build the suite the options name."""
    decoders = None
    if args.decoders is not None:
        decoders = tuple(d.strip() for d in args.decoders.split(",") if d.strip())
    return load_suite(
        args.suite, seed=args.seed, params=parse_pairs(args.param, "--param"), decoders=decoders
    )
