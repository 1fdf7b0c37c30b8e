"""The ``--test`` option, defined once for ``compare``, ``diff`` and ``power`` (light: the
command line's ``--help`` imports it without numpy)."""

from __future__ import annotations

import argparse

from .statistics.verdict_choice import CHOICES, DEFAULT_METHOD

__all__ = ["add_test_option"]


def add_test_option(parser: argparse.ArgumentParser) -> None:
    """``--test``, the verdict test, as ``compare``, ``diff`` and ``power`` take it
    (``args.test`` is one of ``CHOICES``)."""
    parser.add_argument(
        "--test",
        choices=CHOICES,
        default=DEFAULT_METHOD,
        help="the verdict test (default bootstrap_t: the cluster bootstrap-t, a cell called "
        "only where the cluster-robust t calls it too; at most 5%% false verdicts on A/A "
        "pairs, and measured so on equal-mean pairs with different spreads (steady k=2, "
        "erratic) at 8-128 families); t: the cluster-robust t alone, level measured on "
        "exchangeable pairs only",
    )
