"""Returned probabilities as exact numbers: what the probability-aware decoders read.

An answer's ``probabilities`` are kept as sent (labels to JSON numbers, rounded to two
decimals by Jev, docs/wire.md): labels may be missing, the sum may be off by about 0.01, and a
non-Jev server may send anything. ``option_distribution`` turns them into an exact
distribution over a question's labels, or None when there is nothing to read, and every
decoder that uses them falls back to the selected label then (and says so in ``extra``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from harness.protocol.decoders.base import Answer


def exact_probability(value: object) -> Fraction:
    """A returned probability as an exact Fraction; anything not a finite number >= 0 is 0.

    A float is read through its shortest repr (0.37 -> 37/100, not the binary double), so
    two-decimal wire values stay small fractions and the result is the same on any machine.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return Fraction(0)
    if isinstance(value, float) and not math.isfinite(value):
        return Fraction(0)
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    return max(exact, Fraction(0))


def option_distribution(answer: Answer, labels: Sequence[str]) -> tuple[Fraction, ...] | None:
    """The returned probabilities of ``labels`` (in that order), normalised to sum to one.

    Missing labels count as zero; None when the answer has no probabilities or they give
    ``labels`` no mass at all.
    """
    if answer.probabilities is None:
        return None
    raw = [exact_probability(answer.probabilities.get(label)) for label in labels]
    total = sum(raw, Fraction(0))
    if total <= 0:
        return None
    return tuple(p / total for p in raw)


def one_hot(answer: Answer, labels: Sequence[str]) -> tuple[Fraction, ...]:
    """Probability one on the selected label: how an answer without probabilities is read."""
    return tuple(Fraction(1 if label == answer.choice else 0) for label in labels)


def round_to_places(value: Fraction, places: int) -> Decimal:
    """``value`` rounded half-to-even to ``places`` decimal places, exactly (no float)."""
    scaled = round(value * 10**places)  # Fraction.__round__ rounds half to even
    return Decimal(scaled).scaleb(-places)


def decimal_text(value: Fraction, places: int) -> str:
    """``value`` written with ``places`` decimal places (trailing zeros dropped)."""
    text = format(round_to_places(value, places), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def tidy(p: Fraction | float) -> float:
    """A probability for the log: a float rounded to 12 places (the wire carries 2), without
    binary noise (0.172, not 0.17200000000000004)."""
    return round(float(p), 12) + 0.0  # + 0.0 turns -0.0 into 0.0
