"""The bit-prompt control and the crossed prompt control (paper, Appendix "Exploratory
Records and Distinct Protocols").

"An earlier bit-prompt control contrasts underspecified bit queries with explicit bit
weights and arithmetic rules. Across the two option orders, its MAPE decreases from
40.95-46.51% to 20.15-24.31%." Crossed here with what the bits represent: the actual value
x (the original independent bit probe: four-bit integers or four-bit binary fractions,
``actual_bits``) and the grid index q (as the affine suite's ``bits``). The four decoders,
on the exploratory suite's 12 expressions, two orders and two repeats:

- ``actual_bits``: bits of x, explicit weights and the floor/modulo rule;
- ``actual_bits_plain``: bits of x, "digit i of them" only;
- ``bits``: bits of q, explicit;
- ``bits_plain``: bits of q, underspecified.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.protocol.cases import Suite
from harness.protocol.registry import SuiteBuilder
from suites.exploratory import SEED
from suites.exploratory import build as exploratory

DECODERS = ("actual_bits", "actual_bits_plain", "bits", "bits_plain")


def build(seed: int = SEED, decoders: tuple[str, ...] = DECODERS) -> Suite:
    """The exploratory suite's 12 cases asked as bits, in both wordings."""
    return exploratory(seed, decoders, name="bitprompts")


PARAMS: dict[str, Callable[[str], object]] = {}
SUITE = SuiteBuilder(build, PARAMS)  # the entry point (pyproject.toml)
