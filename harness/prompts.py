"""The paper's prompts (Appendix "Complete Prompt Specification") and their exact reading.

Each decoder appends its own instruction to the suite's subject sentence ("Determine the
numerical result x of the expression in state."). ``interpret`` reads a question's text
back into exact semantics: the oracle and the sim model use it, so they see only what a
real model sees, the wire body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

from harness.grid import Grid, fmt

TREE = (
    "Select the interval containing x. Include the lower bound and exclude the upper bound. "
    "Labels identify intervals, not numerical answers."
)
DIRECT = "Select its numerical value."
_INDEX = "Let q = (x - {lo}) / {eps}, an integer from 0 through {last}."
_DIGITS = "Write q with exactly {count} decimal digits, including a leading zero if needed."
_BITS = "Write q as {count} unsigned binary bits with weights {weights}."
_BIT = (
    "Select the bit of weight {w}, which equals floor(q / {w}) modulo 2. "
    "Labels are the literal bit values 0 and 1, not option positions."
)
PLACES = ("units", "tens", "hundreds", "thousands", "ten-thousands")
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten", "eleven", "twelve")  # fmt: skip


def number_word(n: int) -> str:
    """English word for small counts, as the paper writes them ("seven bits")."""
    return _NUMBER_WORDS[n] if n < len(_NUMBER_WORDS) else str(n)


def interval_text(lo: Decimal, hi: Decimal) -> str:
    """A tree criterion: ``lower <= x < upper`` in plain decimals."""
    return f"{fmt(lo)} <= x < {fmt(hi)}"


def _signed(value: Decimal) -> str:
    return f"({fmt(value)})" if value < 0 else fmt(value)


def index_definition(grid: Grid) -> str:
    """The grid-index sentence shared by the digit and bit prompts."""
    return _INDEX.format(lo=_signed(grid.lo), eps=fmt(grid.eps), last=grid.n - 1)


def digits_instruction(subject: str, grid: Grid, count: int, known: list[int], place: int) -> str:
    """A decimal index-digit question; ``known`` are the digits already selected, high first."""
    parts = [subject, index_definition(grid), _DIGITS.format(count=number_word(count))]
    for i, digit in enumerate(known):
        parts.append(f"The {PLACES[count - 1 - i]} digit of q is {digit}.")
    parts.append(f"Select the {PLACES[place]} digit of q.")
    return " ".join(parts)


def digit_criterion(place: int, digit: int) -> str:
    """The description of one digit option."""
    return f"the {PLACES[place]} digit of q is {digit}"


def bits_instruction(subject: str, grid: Grid, weights: list[int], weight: int) -> str:
    """An independent index-bit question for the bit of ``weight``."""
    listed = ", ".join(str(w) for w in weights)
    return " ".join(
        [
            subject,
            index_definition(grid),
            _BITS.format(count=number_word(len(weights)), weights=listed),
            _BIT.format(w=weight),
        ]
    )


def bit_criterion(weight: int, bit: int) -> str:
    """The description of one bit option."""
    return f"the bit of weight {weight} is {bit}"


# ---- reading questions back (oracle and sim) -------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?"
_INTERVAL_RE = re.compile(rf"^({_NUM}) <= x < ({_NUM})$")
_VALUE_RE = re.compile(rf"^{_NUM}$")
_INDEX_RE = re.compile(
    rf"Let q = \(x - \(?({_NUM})\)?\) / ({_NUM}), an integer from 0 through (\d+)\."
)
_DIGIT_RE = re.compile(r"Select the ([a-z-]+) digit of q\.")
_BIT_RE = re.compile(r"Select the bit of weight (\d+),")


@dataclass(frozen=True)
class Meaning:
    """What a question asks, exactly: ``kind`` plus, per label, the exact thing it names.

    kinds: ``interval`` (label -> [lo, hi)), ``value`` (label -> value),
    ``digit`` (q's digit at ``power``), ``bit`` (q's bit of ``power``).
    """

    kind: str
    options: dict[str, tuple[Fraction, Fraction]]
    lo: Fraction = Fraction(0)
    eps: Fraction = Fraction(1)
    last: int = 0
    power: int = 1


def interpret(instructions: str, criteria: dict[str, str | None]) -> Meaning | None:
    """Read a question produced by this module; None when it is none of ours."""
    texts = {label: (text or "").strip() for label, text in criteria.items()}
    intervals = {lab: _INTERVAL_RE.match(t) for lab, t in texts.items()}
    if texts and all(intervals.values()):
        return Meaning(
            "interval",
            {
                lab: (Fraction(m.group(1)), Fraction(m.group(2)))
                for lab, m in intervals.items()
                if m is not None
            },
        )
    if texts and all(_VALUE_RE.match(t) for t in texts.values()):
        return Meaning("value", {lab: (Fraction(t), Fraction(t)) for lab, t in texts.items()})
    index = _INDEX_RE.search(instructions)
    if index is None:
        return None
    lo, eps, last = Fraction(index.group(1)), Fraction(index.group(2)), int(index.group(3))
    options = {lab: (Fraction(int(lab)), Fraction(int(lab))) for lab in texts if lab.isdigit()}
    digit = _DIGIT_RE.search(instructions)
    if digit is not None and digit.group(1) in PLACES:
        power = 10 ** PLACES.index(digit.group(1))
        return Meaning("digit", options, lo, eps, last, power)
    bit = _BIT_RE.search(instructions)
    if bit is not None:
        return Meaning("bit", options, lo, eps, last, int(bit.group(1)))
    return None


def exact_label(meaning: Meaning, x: Fraction) -> str:
    """The label an exact reader picks for target ``x`` (clamped into the offered range)."""
    opts = meaning.options
    if meaning.kind == "interval":
        for label, (lo, hi) in opts.items():
            if lo <= x < hi:
                return label
        # Out of range: the nearest interval, as a reader forced to choose would.
        return min(opts, key=lambda lab: min(abs(x - opts[lab][0]), abs(x - opts[lab][1])))
    if meaning.kind == "value":
        below = [lab for lab, (v, _) in opts.items() if v <= x]
        if below:
            return max(below, key=lambda lab: opts[lab][0])
        return min(opts, key=lambda lab: opts[lab][0])
    q = (x - meaning.lo) / meaning.eps
    index = min(max(q.numerator // q.denominator, 0), meaning.last)
    if meaning.kind == "digit":
        return str(index // meaning.power % 10)
    return str(index // meaning.power % 2)
