"""Decimal digits of the actual result x (not of a grid index), high digit first.

Paper, Appendix "Exploratory Records": "decimal digits here represent the actual numerical
result, using two integer digits or four fractional digits." The digit layout follows the
grid: as many integer digits as its largest value has, and as many fractional digits as
its values need (0..15 -> ``DD``; multiples of 1/16 in [0, 1) -> ``0.DDDD``). Each digit is
asked after, and conditioned on, the ones already selected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from harness.protocol.decoders.base import Decoded, OneDigitPerRound, Question
from harness.protocol.grid import Grid, GridError, fmt
from harness.protocol.prompts import (
    FRACTION_PLACES,
    PLACES,
    actual_digit_criterion,
    actual_digits_instruction,
    place_name,
)


@dataclass
class ActualDigitsDecoder(OneDigitPerRound):
    """One sequential question per decimal digit of x."""

    grid: Grid
    subject: str
    name: str = "actual_digits"
    digits: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        g = self.grid
        if g.lo < 0:
            raise GridError(
                f"actual digits write x without a sign; the grid starts at L={fmt(g.lo)} < 0: "
                "use index digits (decoder 'digits') for a signed range"
            )
        top = int(g.bound(g.n - 1))
        self.frac = g.places
        # A grid below 1 is written 0.DDDD: the leading zero is given, not asked.
        self.whole = len(str(top)) if top >= 1 or self.frac == 0 else 0
        if self.whole > len(PLACES) or self.frac > len(FRACTION_PLACES):
            raise GridError(
                f"actual digits support at most {len(PLACES)} integer and "
                f"{len(FRACTION_PLACES)} fractional digits; this grid needs {self.whole} and "
                f"{self.frac}"
            )
        # Powers of ten of the asked digits, highest first: 1, 0 for DD; -1 .. -4 for 0.DDDD.
        self.powers = list(range(self.whole - 1, -self.frac - 1, -1))
        self.count = len(self.powers)

    def ready(self) -> list[Question]:
        """The next digit's question, stating the digits already selected."""
        if self.done:
            return []
        power = self.powers[len(self.digits)]
        known = list(zip(self.powers, self.digits, strict=False))
        text = actual_digits_instruction(self.subject, self.whole, self.frac, known, power)
        criteria = tuple((str(d), actual_digit_criterion(power, d)) for d in range(10))
        return [Question(f"d{len(self.digits) + 1}", text, criteria)]

    def result(self) -> Decoded:
        """The number the digits write, as read: it may lie off the grid or above it.

        The cell is that number's own resolution, ``[value, value + 10**lowest_power)``;
        ``extra["on_grid"]`` says whether the value is one of the grid values.
        """
        value = sum(
            (Decimal(d).scaleb(p) for p, d in zip(self.powers, self.digits, strict=True)),
            Decimal(0),
        )
        unit = Decimal(1).scaleb(self.powers[-1])
        g = self.grid
        q = (Fraction(value) - Fraction(g.lo)) / Fraction(g.eps)
        on_grid = q.denominator == 1 and 0 <= q < g.n
        trace = tuple(
            {"round": i + 1, "choice": str(d), "place": place_name(p)}
            for i, (p, d) in enumerate(zip(self.powers, self.digits, strict=True))
        )
        written = "".join(str(d) for d in self.digits)
        if self.frac:
            written = f"{written[: self.whole] or '0'}.{written[self.whole :]}"
        extra = {"digits": written, "on_grid": bool(on_grid)}
        return Decoded(value, (value, value + unit), self.count, trace, extra)
