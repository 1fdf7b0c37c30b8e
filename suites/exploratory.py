"""The archived exploratory arithmetic suite (paper, Section 4 and Appendix "Exploratory Records").

Twelve hand-picked expressions, six with integer results on the grid 0..15 and six with
dyadic-fraction results on the sixteenths of [0, 1); every reference is nonzero. Seven
representations are compared in the arithmetic condition only, with two option orders and
two repeated requests per question (repeats are separate requests, never collapsed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from harness.protocol.cases import Case, Suite, expression_case
from harness.protocol.grid import Grid
from harness.protocol.registry import SuiteBuilder

SEED = 20260923  # the paper's seed; here it only orders the scheduler's shuffle
DECODERS = (
    "direct",
    "tree4",
    "sets",
    "actual_digits",
    "adaptive_thresholds",
    "parallel_thresholds",
    "actual_bits",
)
# The paper's exploratory study supplies only the expression; it has no provided control.
CONDITIONS = ("arithmetic",)
REPEATS = 2


@dataclass(frozen=True)
class Domain:
    """One candidate grid and the expressions whose results lie on it."""

    name: str
    grid: Grid
    expressions: tuple[tuple[str, Fraction], ...]


DOMAINS = (
    Domain(
        "int",
        Grid(Decimal(0), Decimal(1), 16),
        (
            ("1 + 1", Fraction(2)),
            ("2 + 3", Fraction(5)),
            ("7 - 4", Fraction(3)),
            ("3 * 4", Fraction(12)),
            ("12 / 3", Fraction(4)),
            ("7 + 8", Fraction(15)),
        ),
    ),
    Domain(
        "fraction",
        Grid(Decimal(0), Decimal("0.0625"), 16),
        (
            ("1/2", Fraction(1, 2)),
            ("1/4 + 1/8", Fraction(3, 8)),
            ("3/4 - 1/4", Fraction(1, 2)),
            ("3/8 + 5/16", Fraction(11, 16)),
            ("(1/2) * (1/2)", Fraction(1, 4)),
            ("7/8 - 1/16", Fraction(13, 16)),
        ),
    ),
)


def build(
    seed: int = SEED, decoders: tuple[str, ...] = DECODERS, name: str = "exploratory"
) -> Suite:
    """The 12 cases; every reference is checked with the exact evaluator and the grid."""
    cases: list[Case] = []
    for domain in DOMAINS:
        for text, expected in domain.expressions:
            case = expression_case(len(cases), domain.name, text, expected, domain.grid)
            grid, target = case.grid, case.target
            on_grid = grid.index_of(target)
            if target == 0 or not 0 <= on_grid < grid.n or Fraction(grid.bound(on_grid)) != target:
                raise AssertionError(f"{text} = {target} is not a nonzero value of its grid")
            cases.append(case)
    return Suite(
        name,
        seed,
        tuple(cases),
        decoders,
        conditions=CONDITIONS,
        repeats=REPEATS,
    )


PARAMS: dict[str, Callable[[str], object]] = {}
SUITE = SuiteBuilder(build, PARAMS)  # the entry point (pyproject.toml)
