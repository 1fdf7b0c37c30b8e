"""The verdict test's choice (no numpy, so that the command line's ``--help`` stays fast):
the tests a user may ask for, the default, each test's name and its promise
(``analysis.verdict_option`` makes them the ``--test`` option; ``family_test`` computes them)."""

from __future__ import annotations

from typing import Literal, cast

__all__ = [
    "CHOICES",
    "DEFAULT_METHOD",
    "PROMISES",
    "TEST_NAMES",
    "Method",
    "as_method",
]

Method = Literal["t", "wild", "bootstrap_t"]
# The verdict test, chosen by issue 44's rule (docs/comparing.md): the candidate that holds
# alpha on aa, aa-heavy, steady k=2 and erratic, per cell and after the correction, at 8 to
# 128 families, with the most power. The t over-calls steady k=2 and erratic.
DEFAULT_METHOD: Method = "bootstrap_t"
# The tests a user may ask for (--test); "wild" is the calibration study's.
CHOICES: tuple[Method, ...] = ("bootstrap_t", "t")
# Each test's name and its promise, one sentence, as summary.md, summary.json, the page and
# --help show them.
TEST_NAMES: dict[str, str] = {
    "bootstrap_t": "cluster bootstrap-t, called only where the cluster-robust t calls too",
    "t": "cluster-robust t",
    "wild": "wild cluster bootstrap-t",
}
PROMISES: dict[str, str] = {
    "bootstrap_t": "at most 5% of comparisons get any false better/worse when the two models "
    "are exchangeable within families (an A/A pair), and, as measured by the calibration "
    "study, on equal-mean pairs with different spreads (steady k=2, erratic) at 8 to 128 "
    "families; not promised where one model is several times steadier than the other at "
    "the same mean (steady k=9)",
    "t": "level measured on exchangeable pairs only",
    "wild": "level measured on exchangeable pairs only",
}


def as_method(name: object) -> Method:
    """``name`` as a verdict test's name (``compare --test``, kept in compare.json)."""
    if name in (*CHOICES, "wild"):
        return cast(Method, name)
    raise ValueError(f"unknown verdict test {name!r}: choose bootstrap_t or t")
