"""What every decoder shares: questions out, selected labels in, a decoded value at the end.

A decoder is a deterministic state machine with no I/O: the same answers in give the same
questions out, which is what lets ``resume`` rebuild a job by replaying its log.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from harness.protocol.grid import Grid, check_options


@dataclass(frozen=True)
class Question:
    """One choice question; ``criteria`` pairs label and description in ascending order."""

    key: str
    instructions: str
    criteria: tuple[tuple[str, str], ...]
    # Both wire forms, built once: decoders hand out cached questions to every job, and a
    # direct-choice question has 100 criteria to copy. Shared dicts are never mutated.
    _wire: dict[bool, dict[str, Any]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        check_options(len(self.criteria), f"question {self.key!r}")

    def labels(self) -> frozenset[str]:
        """The labels a valid answer may name."""
        return frozenset(label for label, _ in self.criteria)

    def wire(self, reverse: bool) -> dict[str, Any]:
        """The question as sent; ``reverse`` flips only the insertion order of criteria.

        The same dict every time (a model in process may remember it by identity)."""
        wire = self._wire.get(reverse)
        if wire is None:
            pairs = reversed(self.criteria) if reverse else iter(self.criteria)
            wire = {"type": "choice", "instructions": self.instructions, "criteria": dict(pairs)}
            self._wire[reverse] = wire
        return wire


# A NamedTuple rather than a frozen dataclass: one is built per question answered, and a
# tuple is built in a fraction of the time a frozen dataclass's __init__ takes.
class Answer(NamedTuple):
    """The selected label, and the returned probabilities where the model gave them."""

    choice: str
    probabilities: Mapping[str, float] | None = None


# A NamedTuple rather than a frozen dataclass: every job builds one per decoder when it
# finishes, and a tuple is built in a fraction of the time a frozen dataclass's __init__ takes.
class Decoded(NamedTuple):
    """A finished decoder's read-out: value, its cell, rounds used and the decision trace."""

    value: Decimal
    cell: tuple[Decimal, Decimal]
    rounds: int
    trace: tuple[dict[str, Any], ...]
    extra: Mapping[str, Any] = MappingProxyType({})  # none (read-only: one shared default)
    # The grid index when ``value`` and ``cell`` are cell ``grid_index``'s bounds (the output
    # then takes the grid's memoised texts); None for any other read-out.
    grid_index: int | None = None


class Decoder(Protocol):
    """A numerical decoder over one grid."""

    name: str
    grid: Grid

    def ready(self) -> list[Question]:
        """The questions that can be asked now and have no answer yet."""
        ...

    def give(self, key: str, answer: Answer) -> None:
        """Record the answer to the ready question ``key``."""
        ...

    @property
    def done(self) -> bool:
        """True once no question is left."""
        ...

    def result(self) -> Decoded:
        """The read-out; only valid once ``done``."""
        ...

    def depths(self) -> tuple[int, int]:
        """Fewest and most sequential rounds this decoder can take (dependency depth)."""
        ...


class OneDigitPerRound:
    """Shared by decoders that ask ``count`` decimal digits, one per round, each after the
    ones already chosen (``digits``)."""

    count: int
    digits: list[int]

    def give(self, key: str, answer: Answer) -> None:
        """Take one digit."""
        self.digits.append(int(answer.choice))

    @property
    def done(self) -> bool:
        """Finished when every digit is chosen."""
        return len(self.digits) == self.count

    def depths(self) -> tuple[int, int]:
        """One round per digit."""
        return self.count, self.count


class OneRoundBits:
    """Shared by decoders that ask one independent question per weight, all in one round.

    Subclasses set ``weights`` (heaviest first) and fill ``bits`` (weight -> 0 or 1).
    """

    weights: list[Any]
    bits: dict[Any, int]
    grid: Grid

    @property
    def done(self) -> bool:
        """Finished when every weight has its answer."""
        return len(self.bits) == len(self.weights)

    def depths(self) -> tuple[int, int]:
        """One round: the questions do not depend on each other."""
        return 1, 1

    def set_weights(self) -> list[Any]:
        """The weights whose bit was selected."""
        return [w for w, bit in self.bits.items() if bit]

    def decoded(self, q: int, choice: str, extra: Mapping[str, Any]) -> Decoded:
        """Cell ``q`` of the grid as the read-out; codes above N-1 are kept, not clipped."""
        cell = (self.grid.bound(q), self.grid.bound(q + 1))
        return Decoded(cell[0], cell, 1, ({"round": 1, "choice": choice},), extra, q)


def answer_probability(answer: Answer, label: str) -> float | None:
    """The probability the model gave ``label``, if it gave probabilities; 0 for a missing
    label or a value that is not a finite number (a server may send anything)."""
    if answer.probabilities is None:
        return None
    value = answer.probabilities.get(label, 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    value = float(value)
    return value if math.isfinite(value) else 0.0
