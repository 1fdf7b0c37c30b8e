"""Index encodings: sequential decimal index digits and independent index bits."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, lru_cache

from harness.protocol.decoders.base import (
    Answer,
    Decoded,
    OneDigitPerRound,
    OneRoundBits,
    Question,
)
from harness.protocol.grid import Grid, GridError
from harness.protocol.prompts import (
    PLACES,
    bit_criterion,
    bits_instruction,
    digit_criterion,
    digits_instruction,
    plain_bit_criterion,
    plain_bits_instruction,
)


@dataclass
class DigitsDecoder(OneDigitPerRound):
    """The grid index q written in decimal, high digit first, each digit conditioned on the last."""

    grid: Grid
    subject: str
    name: str = "digits"
    digits: list[int] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.count = len(str(self.grid.n - 1))
        if self.count > len(PLACES):
            raise GridError(f"index digits support at most {len(PLACES)} digits; N={self.grid.n}")

    def ready(self) -> list[Question]:
        """The next digit's question."""
        if self.done:
            return []
        return [digit_question(self.grid, self.subject, self.count, tuple(self.digits))]

    def result(self) -> Decoded:
        """``L + eps*q``; q may exceed N-1 only if N is not a power of ten (kept, not clipped)."""
        q = int("".join(map(str, self.digits)))
        trace = tuple(
            {"round": i + 1, "choice": str(d), "place": PLACES[self.count - 1 - i]}
            for i, d in enumerate(self.digits)
        )
        cell = (self.grid.bound(q), self.grid.bound(q + 1))
        return Decoded(cell[0], cell, self.count, trace, {"index": q}, q)


@lru_cache(maxsize=65536)
def digit_question(grid: Grid, subject: str, count: int, digits: tuple[int, ...]) -> Question:
    """The question for the next digit after ``digits`` (shared by every job that gets there:
    built once, its wire form too)."""
    place = count - 1 - len(digits)
    text = digits_instruction(subject, grid, count, list(digits), place)
    criteria = tuple((str(d), digit_criterion(place, d)) for d in range(10))
    return Question(f"d{len(digits) + 1}", text, criteria)


@cache
def bit_questions(grid: Grid, subject: str, plain: bool) -> tuple[Question, ...]:
    """The independent bit questions of a grid, weight high to low (the same for every job);
    ``plain``: in the bit-prompt control's underspecified wording (digit i of q)."""
    count = max(1, (grid.n - 1).bit_length())
    weights = [1 << i for i in reversed(range(count))]
    return tuple(
        Question(
            f"b{w}",
            plain_bits_instruction(subject, grid, count, i)
            if plain
            else bits_instruction(subject, grid, weights, w),
            tuple(
                (str(bit), plain_bit_criterion(i, bit) if plain else bit_criterion(w, bit))
                for bit in (0, 1)
            ),
        )
        for i, w in enumerate(weights, start=1)
    )


@dataclass
class BitsDecoder(OneRoundBits):
    """The grid index q as independent binary bits, all asked in one round; ``plain``: in
    the bit-prompt control's underspecified wording (``bits_plain``)."""

    grid: Grid
    subject: str
    name: str = "bits"
    plain: bool = False
    bits: dict[int, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        count = max(1, (self.grid.n - 1).bit_length())
        self.weights = [1 << i for i in reversed(range(count))]
        self._questions = bit_questions(self.grid, self.subject, self.plain)  # by weight

    def ready(self) -> list[Question]:
        """Every unanswered bit's question (they are independent)."""
        bits = self.bits
        if not bits:
            return list(self._questions)
        return [q for q, w in zip(self._questions, self.weights, strict=True) if w not in bits]

    def give(self, key: str, answer: Answer) -> None:
        """Take one bit; ``key`` is ``b<weight>``."""
        self.bits[int(key[1:])] = int(answer.choice)

    def result(self) -> Decoded:
        """``L + eps*q``; codes above N-1 are kept, as the paper keeps them."""
        q = sum(self.set_weights())
        choice = "".join(str(self.bits[w]) for w in self.weights)
        return self.decoded(q, choice, {"index": q, "value": self.grid.bound_text(q)})
