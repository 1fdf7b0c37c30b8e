"""What the sim reads from one question before it answers, the same for every state.

A question is read once (runs hand the sim the same question objects job after job): its
meaning, its options ranked by what they name (so that the answer's draw does not depend on
the order they are listed in), the position prior of the order they ARE listed in, and
which hard features it shows (negative numbers, long numbers).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import orjson

from harness.backends.reading import read_question
from harness.backends.sim.belief import region_bounds
from harness.backends.sim.draws import Draws, normal
from harness.backends.sim.params import SimParams
from harness.backends.sim.perception import decimal_places
from harness.protocol.meaning import Meaning

LONG = 10_000  # numbers of five digits or more are "long" (the x10^4 domain's bounds)


@dataclass(frozen=True, slots=True)
class Asked:
    """One question as the sim reads it (see the module docstring)."""

    choice: Mapping[str, Any]  # the question as a choice (``as_choice``)
    meaning: Meaning | None  # None: a noul or score question the sim cannot read (it guesses)
    labels: tuple[str, ...]  # the options as listed
    ranked: tuple[str, ...]  # the options in the order of what they name
    content: bytes  # identifies the question whatever its option order (the answer's draw)
    tilt: dict[str, float]  # log-odds position prior per label, for the order listed
    typed: bool  # a noul or score question: the answer is sent as its own type
    bounds: tuple[float, ...] | None  # regions of an interval or value question (ranked)
    span: float  # the width of the range an interval or value question covers
    negative: bool  # the question shows negative numbers (options or its index rule)
    long_digits: int  # integer digits of its long numbers (0: none are long)
    places: int  # a value list's most decimal places (0: whole numbers)
    size: int  # the length of the question's JSON text (for the simulated token count)

    @classmethod
    def read(cls, qid: str, question: Any, params: SimParams) -> Asked:
        """Read ``question`` (BackendError("bad_request") when the sim cannot)."""
        choice, meaning = read_question(qid, question)
        criteria = choice["criteria"]
        labels = tuple(criteria)
        ranked = _ranked(meaning, labels)
        content = orjson.dumps(
            (choice.get("instructions"), [(lab, _text(criteria[lab])) for lab in ranked])
        )
        order = orjson.dumps((choice.get("instructions"), [_text(criteria[lab]) for lab in labels]))
        tilt = {}
        spread = params.position * math.sqrt(len(labels) / 10)
        for i, label in enumerate(labels):
            d = Draws("position", params.seed, order.decode(), i)
            tilt[label] = spread * normal(d[0], d[1]) + (params.primacy if i == 0 else 0.0)
        bounds, span, negative, long_digits = None, 0.0, False, 0
        places = 0
        if meaning is not None and meaning.kind in ("interval", "value"):
            lows = meaning.lows_f
            bounds = region_bounds(meaning.kind, lows, meaning.highs_f[-1])
            if meaning.kind == "interval":
                span = meaning.highs_f[-1] - lows[0]
            else:
                span = (lows[-1] - lows[0]) * len(lows) / max(len(lows) - 1, 1)
            negative = lows[0] < 0
            places = (
                max(decimal_places(lo) for lo in meaning.lows) if meaning.kind == "value" else 0
            )
            biggest = max(abs(lows[0]), abs(lows[-1]))
            # A list shows each value whole: only ranges are read by their leading digits.
            if meaning.kind == "interval" and biggest >= LONG:
                long_digits = digits_of(biggest)
        elif meaning is not None and meaning.kind in ("digit", "bit"):
            negative = meaning.lo < 0
            biggest = float(max(abs(meaning.lo), abs(meaning.eps)))
            long_digits = digits_of(biggest * 10) if biggest >= LONG else 0
        size = len(orjson.dumps(question))
        return cls(
            choice, meaning, labels, ranked, content, tilt, choice is not question, bounds,
            span, negative, long_digits, places, size,
        )  # fmt: skip


def _text(description: Any) -> str:
    """A description as text (the wire allows objects and lists)."""
    return description if isinstance(description, str) else orjson.dumps(description).decode()


def digits_of(x: float) -> int:
    """Digits of the integer part of ``|x|`` (1 for anything below 10)."""
    return len(str(int(abs(x)))) if abs(x) >= 1 else 1


def _ranked(meaning: Meaning | None, labels: tuple[str, ...]) -> tuple[str, ...]:
    """The labels in the order of what they name (listed order when the sim cannot tell)."""
    if meaning is None:
        return labels
    if meaning.kind in ("interval", "value"):
        return meaning.labels
    if meaning.kind == "threshold":
        return (meaning.at_most, *(lab for lab in labels if lab != meaning.at_most))
    if meaning.kind == "set":
        return tuple(sorted(labels, key=lambda lab: (meaning.options[lab][0], lab)))
    return tuple(sorted(labels, key=lambda lab: (Fraction(lab) if lab.isdigit() else 0, lab)))
