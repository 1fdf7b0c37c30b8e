"""The exact reading of the paper's prompts: what a question asks, from its text alone.

``interpret`` reads a question's instructions and criteria (as ``harness.protocol.prompts`` writes
them) back into exact semantics, a ``Meaning``; ``exact_label`` is the label an exact reader
picks for a target. The oracle and the sim model use them, so they see only what a real
model sees, the wire body.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from harness.protocol.prompts import _NUMBER_WORDS, FRACTION_PLACES, PLACES

EXPLORATORY_KINDS = frozenset({"set", "threshold", "actual_digit", "actual_bit"})

_NUM = r"-?\d+(?:\.\d+)?"
_INTERVAL_RE = re.compile(rf"^({_NUM}) <= x < ({_NUM})$")
_VALUE_RE = re.compile(rf"^{_NUM}$")
_INDEX_RE = re.compile(
    rf"Let q = \(x - \(?({_NUM})\)?\) / ({_NUM}), an integer from 0 through (\d+)\."
)
_DIGIT_RE = re.compile(r"Select the ([a-z-]+) digit of q\.")
_BIT_RE = re.compile(r"Select the bit of weight (\d+),")
_PLAIN_RE = re.compile(
    r"Write ([qx]) as (\w+) binary digits( after the binary point)?, most significant first\. "
    r"Select digit (\d+) of them"
)
_number = lru_cache(maxsize=65536)(Fraction)  # one bound recurs in many questions


@dataclass(frozen=True)
class Meaning:
    """What a question asks, exactly: ``kind`` plus, per label, the exact thing it names.

    kinds: ``interval`` (label -> [lo, hi)), ``value`` (label -> value),
    ``digit`` (q's digit at ``power``), ``bit`` (q's bit of ``power``); and for the
    exploratory decoders ``set`` (label -> its listed ``members``; options hold their
    smallest and largest), ``threshold`` (``x <= at``, answered by label ``at_most``),
    ``actual_digit`` / ``actual_bit`` (the digit or bit of x itself at ``place``).
    """

    kind: str
    options: dict[str, tuple[Fraction, Fraction]]
    lo: Fraction = Fraction(0)
    eps: Fraction = Fraction(1)
    last: int = 0
    power: int = 1
    members: dict[str, frozenset[Fraction]] = field(default_factory=dict)
    at: Fraction = Fraction(0)
    at_most: str = ""
    place: Fraction = Fraction(1)
    # Labels sorted by their lower bound, for bisection (interval and value kinds).
    ranked: tuple[tuple[Fraction, str], ...] = ()
    lows: tuple[Fraction, ...] = ()
    # The same ranking for the sim's fuzzy reading: label order, rank of a label, float bounds.
    labels: tuple[str, ...] = ()
    rank: dict[str, int] = field(default_factory=dict)
    lows_f: tuple[float, ...] = ()
    highs_f: tuple[float, ...] = ()

    @classmethod
    def ordered(cls, kind: str, options: dict[str, tuple[Fraction, Fraction]]) -> Meaning:
        """An interval or value meaning with its labels ranked by lower bound."""
        ranked = tuple(sorted((bounds[0], label) for label, bounds in options.items()))
        labels = tuple(label for _, label in ranked)
        return cls(
            kind,
            options,
            ranked=ranked,
            lows=tuple(lo for lo, _ in ranked),
            labels=labels,
            rank={label: i for i, label in enumerate(labels)},
            lows_f=tuple(float(options[label][0]) for label in labels),
            highs_f=tuple(float(options[label][1]) for label in labels),
        )


def interpret(instructions: str, criteria: Mapping[str, str | None]) -> Meaning | None:
    """Read a question produced by this module; None when it is none of ours."""
    # The cache key is built at C speed; None descriptions are handled on a miss only.
    items = tuple(criteria.items())
    try:
        return _interpret(instructions, items)
    except TypeError:  # an object or list description (allowed on the wire) is not hashable
        return _interpret(instructions, tuple((k, str(v)) for k, v in items))


# A run asks the same few thousand distinct questions over and over: parse each once.
@lru_cache(maxsize=65536)
def _interpret(instructions: str, items: tuple[tuple[str, str | None], ...]) -> Meaning | None:
    texts = {label: (text or "").strip() for label, text in items}
    intervals = {lab: _INTERVAL_RE.match(t) for lab, t in texts.items()}
    if texts and all(intervals.values()):
        bounds = {lab: (_number(m[1]), _number(m[2])) for lab, m in intervals.items() if m}
        return Meaning.ordered("interval", bounds)
    if texts and all(_VALUE_RE.match(t) for t in texts.values()):
        values = {lab: (_number(t), _number(t)) for lab, t in texts.items()}
        return Meaning.ordered("value", values)
    index = _INDEX_RE.search(instructions)
    if index is None:
        return _interpret_exploratory(instructions, texts)
    lo, eps, last = Fraction(index.group(1)), Fraction(index.group(2)), int(index.group(3))
    options = {lab: (Fraction(int(lab)), Fraction(int(lab))) for lab in texts if lab.isdigit()}
    digit = _DIGIT_RE.search(instructions)
    if digit is not None and digit.group(1) in PLACES:
        power = 10 ** PLACES.index(digit.group(1))
        return Meaning("digit", options, lo, eps, last, power)
    bit = _BIT_RE.search(instructions)
    if bit is not None:
        return Meaning("bit", options, lo, eps, last, int(bit.group(1)))
    plain = _PLAIN_RE.search(instructions)
    if plain is not None and plain.group(1) == "q" and plain.group(2) in _NUMBER_WORDS:
        power = 2 ** (_NUMBER_WORDS.index(plain.group(2)) - int(plain.group(4)))
        return Meaning("bit", options, lo, eps, last, power)
    return None


_SET_RE = re.compile(rf"^x is one of ({_NUM}(?:, {_NUM})*)$")
_AT_MOST_RE = re.compile(rf"^x <= ({_NUM})$")
_ABOVE_RE = re.compile(rf"^x > ({_NUM})$")
_ACTUAL_DIGIT_RE = re.compile(r"Select the ([a-z-]+) digit of x\.")
_ACTUAL_BIT_RE = re.compile(r"Select the bit of x with weight (\d+(?:/\d+)?),")


def _interpret_exploratory(instructions: str, texts: dict[str, str]) -> Meaning | None:
    """Read the exploratory questions: explicit sets, thresholds, digits and bits of x."""
    sets = {lab: _SET_RE.match(t) for lab, t in texts.items()}
    if texts and all(sets.values()):
        members = {
            lab: frozenset(Fraction(v) for v in m.group(1).split(", "))
            for lab, m in sets.items()
            if m is not None
        }
        options = {lab: (min(vs), max(vs)) for lab, vs in members.items()}
        return Meaning("set", options, members=members)
    if len(texts) == 2:
        at_most = {lab: m for lab, t in texts.items() if (m := _AT_MOST_RE.match(t))}
        above = {lab: m for lab, t in texts.items() if (m := _ABOVE_RE.match(t))}
        if len(at_most) == 1 and len(above) == 1:
            (low, m_low), (_, m_high) = next(iter(at_most.items())), next(iter(above.items()))
            z = Fraction(m_low.group(1))
            if z == Fraction(m_high.group(1)):
                return Meaning("threshold", {lab: (z, z) for lab in texts}, at=z, at_most=low)
    options = {lab: (Fraction(int(lab)), Fraction(int(lab))) for lab in texts if lab.isdigit()}
    digit = _ACTUAL_DIGIT_RE.search(instructions)
    if digit is not None:
        name = digit.group(1)
        if name in PLACES:
            return Meaning("actual_digit", options, place=Fraction(10) ** PLACES.index(name))
        if name in FRACTION_PLACES:
            power = -FRACTION_PLACES.index(name) - 1
            return Meaning("actual_digit", options, place=Fraction(10) ** power)
    bit = _ACTUAL_BIT_RE.search(instructions)
    if bit is not None:
        return Meaning("actual_bit", options, place=Fraction(bit.group(1)))
    plain = _PLAIN_RE.search(instructions)
    if plain is not None and plain.group(1) == "x" and plain.group(2) in _NUMBER_WORDS:
        i, count = int(plain.group(4)), _NUMBER_WORDS.index(plain.group(2))
        place = Fraction(1, 2**i) if plain.group(3) else Fraction(2 ** (count - i))
        return Meaning("actual_bit", options, place=place)
    return None


def _exact_exploratory(meaning: Meaning, x: Fraction) -> str:
    """``exact_label`` for the exploratory kinds."""
    if meaning.kind == "set":
        # As for value options: the largest listed value not above x (cells are [v, v+eps)).
        pairs = [(v, lab) for lab, vs in meaning.members.items() for v in vs]
        below = [pair for pair in pairs if pair[0] <= x]
        return max(below)[1] if below else min(pairs)[1]
    if meaning.kind == "threshold":
        if x <= meaning.at:
            return meaning.at_most
        return next(lab for lab in meaning.options if lab != meaning.at_most)
    base = 10 if meaning.kind == "actual_digit" else 2
    q = x / meaning.place
    return str(q.numerator // q.denominator % base)


@lru_cache(maxsize=4096)
def _grid_index(xn: int, xd: int, ln: int, ld: int, en: int, ed: int, last: int) -> int:
    """``floor((x - L) / eps)`` clamped to ``[0, last]``; a request asks it once per bit.
    Keyed on the integers: hashing a Fraction costs a modular inverse, every time."""
    q = (Fraction(xn, xd) - Fraction(ln, ld)) / Fraction(en, ed)
    return min(max(q.numerator // q.denominator, 0), last)


def _below(a: float, b: float) -> bool:
    """True only if the exact values behind floats ``a`` and ``b`` surely satisfy a < b:
    each is within 2**-53 (relative) of its value, so a gap over 1e-15 of their magnitudes
    (or 1e-300, among subnormals) is no rounding. False means "not sure": compare exactly."""
    return b - a > (abs(a) + abs(b)) * 1e-15 + 1e-300


def exact_label(meaning: Meaning, x: Fraction) -> str:
    """The label an exact reader picks for target ``x`` (clamped into the offered range)."""
    if meaning.kind in EXPLORATORY_KINDS:
        return _exact_exploratory(meaning, x)
    opts = meaning.options
    if meaning.kind in ("interval", "value"):
        ranked, lows, lows_f = meaning.ranked, meaning.lows, meaning.lows_f
        # Bisect on floats, then confirm exactly; redo it exactly only when rounding put x on
        # the wrong side of a bound. A float comparison settles a confirmation when the two
        # floats are far apart beside their rounding error (``_below``): exact otherwise.
        xf = float(x)
        i = bisect_right(lows_f, xf) - 1
        low_ok = i < 0 or _below(lows_f[i], xf) or x >= lows[i]
        high_ok = i + 1 >= len(lows) or _below(xf, lows_f[i + 1]) or x < lows[i + 1]
        if not (low_ok and high_ok):
            i = bisect_right(lows, x) - 1
        if meaning.kind == "value":
            return ranked[max(i, 0)][1]
        if i >= 0 and (_below(xf, meaning.highs_f[i]) or x < opts[ranked[i][1]][1]):
            return ranked[i][1]
        # Out of range: the nearest interval, as a reader forced to choose would.
        return min(opts, key=lambda lab: min(abs(x - opts[lab][0]), abs(x - opts[lab][1])))
    lo, eps = meaning.lo, meaning.eps
    index = _grid_index(
        x.numerator, x.denominator, lo.numerator, lo.denominator, eps.numerator,
        eps.denominator, meaning.last,
    )  # fmt: skip
    if meaning.kind == "digit":
        return str(index // meaning.power % 10)
    return str(index // meaning.power % 2)
