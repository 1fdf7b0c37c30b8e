"""Actual bits: independent binary bits of the actual result x (not of a grid index).

Paper, Appendix "Exploratory Records": "decimal digits here represent the actual numerical
result" (``actual_digits``) and "The independent bits represent four-bit integers or
four-bit binary fractions" (this decoder, ``actual_bits``; runs before the rename recorded
it as ``bits4``, still accepted). The weights run from ``eps * 2**(count-1)`` down to ``eps``:
8, 4, 2, 1 on the integer grid 0..15 and 1/2, 1/4, 1/8, 1/16 on the sixteenths of [0, 1).
The grid must start at 0 and step by a power of two, so that its values are exactly the
numbers these bits can write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from harness.protocol.decoders.base import Answer, Decoded, OneRoundBits, Question
from harness.protocol.grid import Grid, GridError, fmt, to_decimal
from harness.protocol.prompts import (
    actual_bit_criterion,
    actual_bits_instruction,
    plain_actual_bits_instruction,
    plain_bit_criterion,
)


def _is_power_of_two(x: Fraction) -> bool:
    """True for 2**k with any integer k (1/16, 1, 8)."""
    num, den = x.numerator, x.denominator
    return num > 0 and (num & (num - 1)) == 0 and (den & (den - 1)) == 0 and (num == 1 or den == 1)


@dataclass
class ActualBitsDecoder(OneRoundBits):
    """``count`` independent questions, one per bit of x, all in one round."""

    grid: Grid
    subject: str
    count: int = 4
    name: str = ""
    plain: bool = False  # the bit-prompt control's underspecified wording (actual_bits_plain)
    bits: dict[Fraction, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        g = self.grid
        self.name = self.name or ("actual_bits_plain" if self.plain else "actual_bits")
        eps = Fraction(g.eps)
        if g.lo != 0 or not _is_power_of_two(eps) or g.n > 2**self.count:
            raise GridError(
                f"{self.name} writes x as {self.count} binary bits, which needs L=0, eps a power "
                f"of two and N <= {2**self.count}; got L={fmt(g.lo)}, eps={fmt(g.eps)}, N={g.n}"
            )
        self.weights = [eps * 2**i for i in reversed(range(self.count))]

    def ready(self) -> list[Question]:
        """Every unanswered bit's question (they are independent)."""
        return [self._question(i, w) for i, w in enumerate(self.weights) if w not in self.bits]

    def _question(self, i: int, w: Fraction) -> Question:
        """The question for the bit of weight ``w``, the ``i``-th heaviest."""
        if self.plain:
            fraction = Fraction(self.grid.eps) < 1
            text = plain_actual_bits_instruction(self.subject, self.count, i + 1, fraction)
            return Question(
                f"b{i}", text, tuple((str(b), plain_bit_criterion(i + 1, b)) for b in (0, 1))
            )
        text = actual_bits_instruction(self.subject, self.weights, w)
        return Question(f"b{i}", text, tuple((str(b), actual_bit_criterion(w, b)) for b in (0, 1)))

    def give(self, key: str, answer: Answer) -> None:
        """Take one bit; ``key`` is ``b<position>``, position 0 the heaviest."""
        self.bits[self.weights[int(key[1:])]] = int(answer.choice)

    def result(self) -> Decoded:
        """The sum of the selected weights; codes above the grid's top are kept."""
        value = sum(self.set_weights(), Fraction(0))
        q = int(value / Fraction(self.grid.eps))
        assert to_decimal(value) == self.grid.bound(q)
        choice = "".join(str(self.bits[w]) for w in self.weights)
        return self.decoded(q, choice, {"index": q})
