"""How the sim answers one question: one noisy reading of x, and its belief around it.

Each knob's mechanism, and what it makes: docs/models.md ("The sim"). For each question the
sim makes one reading of its perceived value ``v``, with seeded draws that do not depend on
the option order: now and then a misreading (``sign_flip``, ``long``, ``distract``), then
Gaussian noise of s.d. ``confusion`` x option width x sqrt(k/2) for k options, ``1 + 10 *
negative`` times that where negatives are shown. A grid value is read as its cell's middle,
so every boundary sits halfway between grid values and no answer leans up or down.

Its belief is the same Gaussian around that reading, integrated over each option's region
(digit, bit and set questions: the slip rate spread around the label it read), tilted by the
position prior of the options' order. It chooses the most probable option and reports the
belief sharpened or flattened by ``temperature``: at 1 the sim is calibrated wherever its
noise is the only error.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from fractions import Fraction

from harness.backends.sim.belief import masses
from harness.backends.sim.draws import normal
from harness.backends.sim.params import SimParams
from harness.backends.sim.perception import Seen
from harness.backends.sim.questions import Asked, digits_of
from harness.protocol.meaning import exact_label

# Share of ``slip_digit`` left when the index is x itself (L = 0, eps = 1): the paper's index
# digits err 1.21% MAPE on the integer domain against 13-299% on the transformed ones.
TRIVIAL = 0.1
# How much more a k-way question's reading wanders, per option width: (k/2) ** K_POWER.
K_POWER = 0.5


def answer(
    asked: Asked, seen: Seen, p: SimParams, u: Sequence[float]
) -> tuple[str, dict[str, float]]:
    """The label the sim chooses and its belief over ``asked.ranked`` (sums to 1).

    ``u`` are eight uniforms drawn for this question and state."""
    meaning = asked.meaning
    v = seen.value
    n = len(asked.ranked)
    if meaning is None or v is None:  # a question it cannot read, or a state it cannot
        guess = asked.ranked[min(int(u[0] * n), n - 1)]
        sure = 1.0 / n + (1.0 - 1.0 / n) * u[1] * 0.5  # a guess, held more or less firmly
        belief = dict.fromkeys(asked.ranked, (1.0 - sure) / max(n - 1, 1))
        belief[guess] = sure
        return guess, belief
    ease = p.provided if seen.provided else 1.0
    kind = meaning.kind
    if kind == "threshold":
        belief = _threshold(asked, seen, p, u, ease)
        choice = meaning.at_most if belief[meaning.at_most] >= 0.5 else asked.ranked[1]
        return choice, belief
    r = _misread(asked, v, p, ease, u[0])
    if kind in ("interval", "value"):
        belief = _located(asked, r, seen, p, ease, u)
    else:
        belief = _converted(asked, r, p, u)
    belief = _tilted(asked, belief)
    return max(asked.ranked, key=belief.__getitem__), belief


def _misread(asked: Asked, v: Fraction, p: SimParams, ease: float, u: float) -> Fraction:
    """``v``, or its misreading when ``u`` falls in a hazard's share."""
    interval = asked.meaning is not None and asked.meaning.kind == "interval"
    if asked.negative and v != 0 and not interval:
        # A sign misread is about the expression, not the layout: the same in both orders.
        w = p.sign_flip * ease
        if u < w:
            return -v
        u -= w
    if asked.long_digits:
        shown = digits_of(float(v))
        if shown < asked.long_digits:
            k = len(asked.ranked) if interval else 10
            if u < p.long * (k / 10) ** 2 * ease:
                return v * 10 ** (asked.long_digits - shown)
    return v


def _located(
    asked: Asked, r: Fraction, seen: Seen, p: SimParams, ease: float, u: Sequence[float]
) -> dict[str, float]:
    """An interval or value question: the Gaussian belief around one noisy reading."""
    meaning = asked.meaning
    assert meaning is not None and asked.bounds is not None
    kind = meaning.kind
    if kind == "interval":
        k = len(asked.ranked)
        sigma = p.confusion * ease * (asked.span / k) * (k / 2) ** K_POWER
        if asked.negative:
            sigma *= 1.0 + 10.0 * p.negative
        at = float(r) + float(seen.unit) / 2
    else:
        sigma = p.confusion_value * ease * asked.span
        at = float(r)
        # Longer decimals are easier to mistake (0.8125 for 0.3125 more than 0.23 for 0.13).
        rate = p.distract * (asked.places / 2) ** 3 if asked.places else p.distract_int
        rate = min(rate * ease * math.sqrt(len(asked.ranked) / 100), 1.0)
        i = min(max(bisect_right(asked.bounds, at) - 1, 0), len(asked.ranked) - 1)
        groups = look_alikes(asked, i) if rate > 0 else []
        alike = [lab for group in groups for lab in group]
        if alike and u[1] < _tilted_rate(rate, asked, alike, meaning.labels[i]):
            group = groups[min(int(u[2] * len(groups)), len(groups) - 1)]
            # Which look-alike catches the eye depends on where it is listed.
            label = _pick({lab: math.exp(asked.tilt[lab]) for lab in group}, u[3])
            at = meaning.lows_f[meaning.rank[label]]
    seen_at = at + sigma * normal(u[4], u[5])
    return masses(
        meaning.labels, asked.bounds, seen_at, sigma, p.off_range if kind == "interval" else 0.0
    )


def _tilted_rate(rate: float, asked: Asked, others: list[str], own: str) -> float:
    """``rate`` with its odds tilted by the position prior of ``others`` against ``own``
    (where a look-alike is listed catches the eye, so the two orders differ)."""
    if not others or not 0 < rate < 1:
        return rate
    lift = sum(math.exp(asked.tilt[lab] - asked.tilt[own]) for lab in others) / len(others)
    odds = rate / (1.0 - rate) * lift
    return odds / (1.0 + odds)


def look_alikes(asked: Asked, i: int) -> list[tuple[str, ...]]:
    """The value list's look-alikes of its ``i``-th ranked option, by kind (non-empty
    kinds only): same last significant digit (and length), swapped digits, ten steps off."""
    meaning = asked.meaning
    assert meaning is not None
    ranked = meaning.labels
    texts = {lab: _value_text(asked, lab) for lab in ranked}
    own = texts[ranked[i]]
    core = own.rstrip("0").rstrip(".") or "0"
    # Same length too: 7 beside 37 is easy to tell apart, 27 beside 37 is not.
    same = tuple(
        lab
        for lab in ranked
        if lab != ranked[i]
        and len(texts[lab]) == len(own)
        and (texts[lab].rstrip("0").rstrip(".") or "0")[-1] == core[-1]
    )
    swapped = _swap_last_two(core) + own[len(core) :]
    swap = tuple(lab for lab in ranked if texts[lab] == swapped and lab != ranked[i])
    tens = tuple(ranked[j] for j in (i - 10, i + 10) if 0 <= j < len(ranked))
    return [group for group in (same, swap, tens) if group]


def _value_text(asked: Asked, label: str) -> str:
    """A value option's description, as written."""
    text = asked.choice["criteria"][label]
    return text.strip() if isinstance(text, str) else str(text)


def _swap_last_two(core: str) -> str:
    """``core`` with its last two digits swapped ("0.23" -> "0.32"; one digit: itself)."""
    places = [i for i, ch in enumerate(core) if ch.isdigit()]
    if len(places) < 2:
        return core
    a, b = places[-2], places[-1]
    chars = list(core)
    chars[a], chars[b] = chars[b], chars[a]
    return "".join(chars)


def _converted(asked: Asked, r: Fraction, p: SimParams, u: Sequence[float]) -> dict[str, float]:
    """Digit, bit and set questions: the label of the reading, or now and then a slip to
    another (for digits, likelier near it); the belief: the slip rate spread the same way."""
    meaning = asked.meaning
    assert meaning is not None
    ranked = asked.ranked
    digit = meaning.kind in ("digit", "actual_digit")
    slip = p.slip_digit if digit else p.slip_bit
    if meaning.kind == "digit" and meaning.lo == 0 and meaning.eps == 1:
        slip *= TRIVIAL  # q = x: the digits of x itself, no conversion to get wrong
    read = exact_label(meaning, r)
    if len(ranked) > 1 and slip > 0:
        # The position prior tilts the odds of a slip and where it goes, so the two
        # orders of one question now and then slip differently.
        near = _near(ranked, read, digit)
        tilted = {lab: w * math.exp(asked.tilt[lab] - asked.tilt[read]) for lab, w in near.items()}
        lift = sum(tilted.values()) / sum(near.values())
        odds = slip / max(1.0 - slip, 1e-12) * lift
        if u[1] < odds / (1.0 + odds):
            read = _pick(tilted, u[2])
    belief = dict.fromkeys(ranked, 0.0)
    if len(ranked) == 1:
        belief[read] = 1.0
        return belief
    belief[read] = 1.0 - slip
    near = _near(ranked, read, digit)
    total = sum(near.values())
    for label, w in near.items():
        belief[label] = slip * w / total
    return belief


def _near(ranked: tuple[str, ...], read: str, digit: bool) -> dict[str, float]:
    """Weights of the other labels: halving with each step away for digits, else equal."""
    if digit and read.isdigit():
        return {lab: 2.0 ** -abs(int(lab) - int(read)) for lab in ranked if lab != read}
    return {lab: 1.0 for lab in ranked if lab != read}


def _pick(weights: dict[str, float], u: float) -> str:
    """The label at ``u`` of the normalised cumulative weights."""
    total = sum(weights.values())
    acc = 0.0
    for label, w in weights.items():
        acc += w / total
        if u < acc:
            return label
    return label


def _threshold(
    asked: Asked, seen: Seen, p: SimParams, u: Sequence[float], ease: float
) -> dict[str, float]:
    """``x <= at``: the Gaussian reading's mass below the boundary halfway between the grid
    value at or below ``at`` and the next, its log-odds jittered per question, and now and
    then (``threshold_lapse``, arithmetic only) a probability at random: the paper's raw
    threshold answers decrease somewhere in 25 of 48 groups."""
    meaning = asked.meaning
    assert meaning is not None and seen.value is not None
    unit = float(seen.unit)
    # As fine as the last level of a binary tree (see ``_located``): confusion cells.
    sigma = max(p.confusion * ease * unit, 1e-12)
    boundary = (math.floor(float(meaning.at) / unit + 1e-9) + 0.5) * unit
    z = (boundary - float(seen.value)) / sigma
    yes = 0.5 * math.erfc(-z / math.sqrt(2.0))
    yes = min(max(yes, 1e-9), 1 - 1e-9)
    logit = math.log(yes / (1 - yes)) + normal(u[4], u[5])
    yes = 1.0 / (1.0 + math.exp(-min(max(logit, -60.0), 60.0)))
    if not seen.provided and u[1] < p.threshold_lapse:
        yes = u[2]
    return {meaning.at_most: yes, asked.ranked[1]: 1.0 - yes}


def _tilted(asked: Asked, belief: dict[str, float]) -> dict[str, float]:
    """The belief times exp(position prior), renormalised, over every ranked label."""
    tilt = asked.tilt
    out = {}
    for label in asked.ranked:
        m = belief.get(label, 0.0)
        out[label] = m * math.exp(tilt[label]) if m > 0 else 0.0
    total = sum(out.values())
    if not total > 0:
        return dict.fromkeys(asked.ranked, 1.0 / len(asked.ranked))
    return {label: m / total for label, m in out.items()}


def reported(probabilities: dict[str, float], temperature: float) -> dict[str, float]:
    """``p^(1/T)`` renormalised: the probabilities the sim sends."""
    if temperature == 1.0:
        return probabilities
    powered = {lab: q ** (1.0 / temperature) if q > 0 else 0.0 for lab, q in probabilities.items()}
    total = sum(powered.values())
    return {lab: q / total for lab, q in powered.items()}
