"""The verdict test a comparison is judged with: the tests a user may ask for, the default,
and the one ``--test`` option that ``compare``, ``diff`` and ``power`` take (``compare.json``
keeps the choice). Here, not in ``analysis``, so that the command line's ``--help`` does not
import numpy; ``analysis.statistics.family_test`` computes the tests."""

from __future__ import annotations

import argparse
from typing import Literal

Method = Literal["t", "wild", "bootstrap_t"]
# The verdict test, chosen by issue 44's rule (docs/comparing.md): the candidate that holds
# alpha on aa, aa-heavy, steady k=2 and erratic, per cell and after the correction, at 8 to
# 128 families, with the most power. The t over-calls steady k=2 and erratic.
DEFAULT_METHOD: Method = "bootstrap_t"
# The tests a user may ask for (--test); "wild" is the calibration study's.
CHOICES: tuple[Method, ...] = ("bootstrap_t", "t")


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
