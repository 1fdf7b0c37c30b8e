"""The fixed affine-grid suite (paper, Section 4 and Appendix "Dataset Generation").

64 distinct base expressions from seed 20260923, 16 per operator, each with an integer
result z in {1, ..., 99} \\ {50}; four affine transforms per family give 256 cases on
100-cell grids.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from harness.errors import ConfigError
from harness.protocol.arith import evaluate
from harness.protocol.cases import Case, Suite, expression_case
from harness.protocol.grid import Grid, fmt
from harness.protocol.registry import SuiteBuilder

SEED = 20260923
DECODERS = ("direct", "tree2", "tree4", "tree10", "digits", "bits")
OPERATORS = ("+", "-", "*", "/")


@dataclass(frozen=True)
class Domain:
    """One affine transform ``y = z * scale + shift`` and its grid ``(L, eps)``."""

    name: str
    scale: Decimal
    shift: Decimal
    eps: Decimal


DOMAINS = (
    Domain("int", Decimal(1), Decimal(0), Decimal(1)),
    Domain("x0.01", Decimal("0.01"), Decimal(0), Decimal("0.01")),
    Domain("minus50", Decimal(1), Decimal(-50), Decimal(1)),
    Domain("x10000", Decimal(10000), Decimal(0), Decimal(10000)),
)


def _draw(rng: random.Random, op: str) -> tuple[int, int]:
    """Operands for one operator, from the paper's ranges."""
    if op == "+":
        return rng.randint(1, 80), rng.randint(1, 80)
    if op == "-":
        return rng.randint(2, 200), rng.randint(1, 150)
    if op == "*":
        return rng.randint(2, 12), rng.randint(2, 12)
    denominator, quotient = rng.randint(2, 15), rng.randint(1, 99)
    return denominator * quotient, denominator


def base_expressions(seed: int = SEED, per_operator: int = 16) -> list[tuple[str, int]]:
    """Distinct ``(expression, z)`` pairs by rejection sampling, operators in a fixed order."""
    rng = random.Random(seed)
    found: list[tuple[str, int]] = []
    seen: set[str] = set()
    # A bound on draws turns an impossible request into an error instead of a hang.
    for op in OPERATORS:
        count, draws = 0, 0
        while count < per_operator:
            draws += 1
            if draws > 100_000:
                raise ConfigError(f"could not find {per_operator} distinct {op!r} expressions")
            a, b = _draw(rng, op)
            text = f"{a} {op} {b}"
            z = evaluate(text)
            if z.denominator != 1 or not 0 < z < 100 or z == 50 or text in seen:
                continue
            seen.add(text)
            found.append((text, int(z)))
            count += 1
    return found


def transformed(expression: str, domain: Domain) -> str:
    """The case text ``(e) * s + (L)``."""
    return f"({expression}) * {fmt(domain.scale)} + ({fmt(domain.shift)})"


def build(
    seed: int = SEED,
    per_operator: int = 16,
    cells: int = 100,
    repeats: int = 1,
    decoders: tuple[str, ...] = DECODERS,
) -> Suite:
    """The affine suite; ``repeats`` > 1 re-asks every job (the scale benchmark uses 100)."""
    if repeats < 1:
        raise ConfigError(f"repeats must be >= 1; got {repeats}")
    if per_operator < 1:
        raise ConfigError(f"per_operator must be >= 1; got {per_operator}")
    if cells < 100:
        raise ConfigError(f"cells must be >= 100 so every z in 1..99 lies on the grid; got {cells}")
    cases: list[Case] = []
    for family, (expression, z) in enumerate(base_expressions(seed, per_operator)):
        for domain in DOMAINS:
            expected = Fraction(z) * Fraction(domain.scale) + Fraction(domain.shift)
            grid = Grid(domain.shift, domain.eps, cells)
            text = transformed(expression, domain)
            cases.append(expression_case(family, domain.name, text, expected, grid))
    return Suite(
        "affine",
        seed,
        tuple(cases),
        decoders,
        repeats=repeats,
        params={"per_operator": per_operator, "cells": cells, "repeats": repeats},
    )


PARAMS: dict[str, Callable[[str], object]] = {"per_operator": int, "cells": int, "repeats": int}
SUITE = SuiteBuilder(build, PARAMS)  # the entry point (pyproject.toml)
