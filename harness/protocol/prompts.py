"""The paper's prompts (Appendix "Complete Prompt Specification"), as written.

Each decoder appends its own instruction to the suite's subject sentence ("Determine the
numerical result x of the expression in state."). ``harness.protocol.meaning`` reads them back.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from harness.protocol.grid import Grid, fmt

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


def interval_text(lo: str, hi: str) -> str:
    """A tree criterion, ``lower <= x < upper``, from bounds already written by ``fmt``."""
    return f"{lo} <= x < {hi}"


def index_definition(grid: Grid) -> str:
    """The grid-index sentence shared by the digit and bit prompts."""
    lo = f"({fmt(grid.lo)})" if grid.lo < 0 else fmt(grid.lo)  # L + i·eps with L < 0
    return _INDEX.format(lo=lo, eps=fmt(grid.eps), last=grid.n - 1)


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


# The bit-prompt control's underspecified wording (paper, Appendix "Exploratory Records":
# "underspecified bit queries" against "explicit bit weights and arithmetic rules"): the
# digit's position only, no weight and no floor/modulo rule. Still exact for a reader who
# knows binary, so the oracle recovers every target.
_PLAIN = "Write {what} as {count} binary digits{point}, most significant first."
_PLAIN_PICK = "Select digit {i} of them (the first is digit 1)."


def plain_bits_instruction(subject: str, grid: Grid, count: int, i: int) -> str:
    """An underspecified index-bit question: digit ``i`` (1 = the heaviest) of q."""
    what = _PLAIN.format(what="q", count=number_word(count), point="")
    return " ".join([subject, index_definition(grid), what, _PLAIN_PICK.format(i=i)])


def plain_actual_bits_instruction(subject: str, count: int, i: int, fraction: bool) -> str:
    """An underspecified bit-of-x question: digit ``i`` of x's binary form (after the
    binary point when ``fraction``)."""
    point = " after the binary point" if fraction else ""
    what = _PLAIN.format(what="x", count=number_word(count), point=point)
    return " ".join([subject, what, _PLAIN_PICK.format(i=i)])


def plain_bit_criterion(i: int, bit: int) -> str:
    """The description of one option of an underspecified bit question."""
    return f"digit {i} is {bit}"


# ---- exploratory prompts (paper, Appendix "Exploratory Records and Distinct Protocols") --

SETS = "Select the set of values that contains x. Labels identify sets, not numerical answers."
SET_LABELS = ("A", "B")  # letters, not 0/1, so the question never asks for a binary code
_THRESHOLD = "Is x less than or equal to {z}?"
THRESHOLD_LABELS = ("yes", "no")
FRACTION_PLACES = ("tenths", "hundredths", "thousandths", "ten-thousandths",
                   "hundred-thousandths", "millionths")  # fmt: skip
_ACTUAL_BITS = "Write x as {count} unsigned binary bits with weights {weights}."
_ACTUAL_BIT = (
    "Select the bit of x with weight {w}, which equals floor({expr}) modulo 2. "
    "Labels are the literal bit values 0 and 1, not option positions."
)


def set_criterion(values: list[Decimal]) -> str:
    """An explicit-set option: ``x is one of 1, 3, 5``."""
    return "x is one of " + ", ".join(fmt(v) for v in values)


def threshold_instruction(subject: str, z: Decimal) -> str:
    """A threshold comparison ``x <= z`` (paper: P(Y <= z)); ``z`` is an exact decimal."""
    return f"{subject} {_THRESHOLD.format(z=fmt(z))}"


def threshold_criteria(z: Decimal) -> tuple[tuple[str, str], tuple[str, str]]:
    """The yes/no pair of a threshold question, lower region first."""
    yes, no = THRESHOLD_LABELS
    return (yes, f"x <= {fmt(z)}"), (no, f"x > {fmt(z)}")


def place_name(power: int) -> str:
    """The digit place of ``10**power``: units, tens, ... or tenths, hundredths, ..."""
    return PLACES[power] if power >= 0 else FRACTION_PLACES[-power - 1]


def _count(n: int, noun: str) -> str:
    return f"{number_word(n)} {noun}{'' if n == 1 else 's'}"


def actual_digits_instruction(
    subject: str, whole: int, frac: int, known: list[tuple[int, int]], power: int
) -> str:
    """A question for one decimal digit of x itself (not of a grid index).

    ``whole`` and ``frac`` count the digits before and after the decimal point; ``known``
    holds ``(power, digit)`` pairs already selected, highest place first.
    """
    form = ("D" * whole or "0") + ("." + "D" * frac if frac else "")
    if not frac:
        layout = f"with exactly {_count(whole, 'digit')}, including a leading zero if needed"
    elif not whole:
        layout = (
            f"with exactly {_count(frac, 'digit')} after the decimal point, "
            "including trailing zeros if needed"
        )
    else:
        layout = (
            f"with exactly {_count(whole, 'digit')} before the decimal point, including leading "
            f"zeros if needed, and exactly {number_word(frac)} after it, including trailing "
            "zeros if needed"
        )
    parts = [subject, f"Write x in decimal in the form {form}, {layout}."]
    parts += [f"The {place_name(p)} digit of x is {d}." for p, d in known]
    parts.append(f"Select the {place_name(power)} digit of x.")
    return " ".join(parts)


def actual_digit_criterion(power: int, digit: int) -> str:
    """The description of one option of an actual-digit question."""
    return f"the {place_name(power)} digit of x is {digit}"


def weight_text(weight: Fraction) -> str:
    """A binary weight as written in the prompt: ``8`` or ``1/4``."""
    return str(weight.numerator) if weight.denominator == 1 else f"1/{weight.denominator}"


def actual_bits_instruction(subject: str, weights: list[Fraction], weight: Fraction) -> str:
    """An independent question for the bit of x (not of a grid index) of ``weight``."""
    listed = ", ".join(weight_text(w) for w in weights)
    # floor(x / 4) for an integer weight, floor(x * 4) for the weight 1/4, floor(x) for 1.
    if weight == 1:
        expr = "x"
    elif weight.denominator == 1:
        expr = f"x / {weight.numerator}"
    else:
        expr = f"x * {weight.denominator}"
    return " ".join(
        [
            subject,
            _ACTUAL_BITS.format(count=number_word(len(weights)), weights=listed),
            _ACTUAL_BIT.format(w=weight_text(weight), expr=expr),
        ]
    )


def actual_bit_criterion(weight: Fraction, bit: int) -> str:
    """The description of one option of a bit-of-x question."""
    return f"the bit of x with weight {weight_text(weight)} is {bit}"


# ---- reading questions back (oracle and sim) -------------------------------------------
