"""Fit the sim's knobs to a profile: coordinate search on a log-scale distance.

The sim is deterministic for a seed, so every candidate is scored on the same draws
(common random numbers): the distance moves only when a knob changes what the sim does.
Each step tries each knob at a few multiples of its value and keeps the best; after each
pass over the knobs a pattern move (Hooke and Jeeves) tries the pass's whole change once
more, moving every knob that moved at once, so knobs that trade off can travel together;
steps shrink when no move helps. ``identify`` then profiles the distance around the fit,
knob by knob and pair by pair, to say which knobs the data pin down. Pure apart from the
simulations it asks ``evaluate`` for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from simstudy.profile import Profile

# Below these a figure's relative difference means little (percent units): MAPE is
# noisy near zero targets, gaps and NMAE are small numbers.
FLOORS = {"mape": 1.0, "nmae": 0.2, "ordering_gap": 0.2, "affine_gap": 0.2}
DOMAIN_WEIGHT = 0.5  # per-domain MAPEs: many, and noisier than the pooled ones


def distance(sim: Profile, target: Profile, weights: Mapping[str, float] | None = None) -> float:
    """Weighted mean squared log-ratio of the figures both profiles hold (floored, see
    FLOORS); ``weights`` default to 1, DOMAIN_WEIGHT for per-domain figures."""
    total, weight = 0.0, 0.0
    for key, want in target.items():
        got = sim.get(key)
        if got is None:
            continue
        floor = FLOORS.get(key.split("/", 1)[0], 1.0)
        w = DOMAIN_WEIGHT if key.count("/") == 3 else 1.0
        if weights is not None:
            w = weights.get(key, w)
        total += w * math.log((got + floor) / (want + floor)) ** 2
        weight += w
    return total / weight if weight else math.inf


@dataclass
class Fit:
    """Where a fit ended: the knobs, the distance, and how many simulations it took."""

    knobs: dict[str, float]
    distance: float
    evaluations: int
    history: list[tuple[str, float, float]] = field(default_factory=list)  # knob, value, d


def fit(
    evaluate: Callable[[Mapping[str, float]], float],
    start: Mapping[str, float],
    names: Sequence[str],
    *,
    bounds: Mapping[str, tuple[float, float]],
    rounds: int = 4,
    progress: Callable[[Fit], None] | None = None,
) -> Fit:
    """Coordinate search from ``start`` over ``names``; ``evaluate(knobs)`` is the distance."""
    knobs = dict(start)
    best = evaluate(knobs)
    result = Fit(dict(knobs), best, 1)
    factors: tuple[float, ...] = (0.5, 0.75, 1.33, 2.0)
    for _ in range(rounds):
        moved, before = False, dict(knobs)
        for name in names:
            lo, hi = bounds[name]
            current = knobs[name]
            tried = {current}
            for f in factors:
                value = current * f if current > 0 else (lo + hi) * 0.01 * f
                value = min(max(value, lo), hi)
                value = float(f"{value:.3g}")
                if value in tried:
                    continue
                tried.add(value)
                candidate = {**knobs, name: value}
                d = evaluate(candidate)
                result.evaluations += 1
                if d < best - 1e-12:
                    best, knobs, moved = d, candidate, True
                    result.history.append((name, value, d))
            result.knobs, result.distance = dict(knobs), best
            if progress is not None:
                progress(result)
        if moved:
            best, knobs = _pattern_move(evaluate, before, knobs, best, bounds, result)
        else:
            factors = tuple(math.sqrt(f) for f in factors)  # finer steps
    return result


def _pattern_move(
    evaluate: Callable[[Mapping[str, float]], float],
    before: Mapping[str, float],
    after: dict[str, float],
    best: float,
    bounds: Mapping[str, tuple[float, float]],
    result: Fit,
) -> tuple[float, dict[str, float]]:
    """Repeat a pass's change from where it ended (every moved knob at once, by its ratio)."""
    candidate = dict(after)
    for name, value in after.items():
        old = before[name]
        if old > 0 and value != old:
            lo, hi = bounds[name]
            candidate[name] = float(f"{min(max(value * value / old, lo), hi):.3g}")
    if candidate == after:
        return best, after
    d = evaluate(candidate)
    result.evaluations += 1
    if d < best - 1e-12:
        result.knobs, result.distance = dict(candidate), d
        result.history.append(("pattern", 0.0, d))
        return d, candidate
    return best, after


STEP = 1.43  # the profile's step: each knob times 1/STEP and STEP (about -30% and +43%)
RISE = 0.1  # a knob is identified when the distance rises by 10% or more either way, and
#   by more than the distance's own noise between sim seeds (``noise``)
TRADE = 0.5  # a pair trades off when moving both at once raises the distance by less than
#   half what the two moves raise it apart (their sum: what independent knobs would give)
WALK = 4  # a valley is walked up to this many steps each way to print the range it spans


@dataclass(frozen=True)
class Identification:
    """How well the data pin one fitted knob: the distance's relative rise with the knob
    moved down and up by STEP (others held), the rise it must beat (``bar``: RISE, or the
    seed noise of the distance if larger), the knobs it trades off with (moving both in
    opposite directions, the one that moves the distance more by a smaller step so that
    each move alone raises it alike, raises it by less than TRADE of the two apart), and
    ``span``: the knob's values along those valleys (walked while they stay as flat)."""

    knob: str
    value: float
    down: float
    up: float
    trades_with: tuple[str, ...]
    bar: float = RISE
    span: tuple[float, float] | None = None

    @property
    def verdict(self) -> str:
        """``identified``, ``weak`` (the distance barely moves) or ``trades off with ...``."""
        if self.trades_with:
            return "trades off with " + ", ".join(self.trades_with)
        return "identified" if min(self.down, self.up) >= self.bar else "weak"


def identify(
    evaluate: Callable[[Mapping[str, float]], float],
    fitted: Fit,
    names: Sequence[str],
    bounds: Mapping[str, tuple[float, float]],
    pairs: bool = True,
    noise: float = 0.0,
) -> list[Identification]:
    """Profile the distance around ``fitted`` for each knob of ``names``, and (``pairs``)
    each pair with at least one identified knob moved in opposite directions (``_valley``).
    ``noise``: how much the distance at the fit moves between sim seeds (a rise below it
    is not seen)."""
    base = max(fitted.distance, 1e-9)
    bar = max(RISE, noise / base)

    def rise(moves: Mapping[str, float]) -> float:
        candidate = dict(fitted.knobs)
        for name, factor in moves.items():
            lo, hi = bounds[name]
            value = fitted.knobs[name]
            candidate[name] = min(max(value * factor if value > 0 else 0.01 * factor, lo), hi)
        fitted.evaluations += 1
        return (evaluate(candidate) - fitted.distance) / base

    profile = {n: (rise({n: 1 / STEP}), rise({n: STEP})) for n in names}
    firm = {n for n in names if min(profile[n]) >= bar}
    trades: dict[str, list[str]] = {n: [] for n in names}
    spans = {n: [fitted.knobs[n]] for n in names}
    if pairs:
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                if (a in firm or b in firm) and fitted.knobs[a] > 0 and fitted.knobs[b] > 0:
                    walked = _valley(rise, a, b, profile)
                    if walked:
                        trades[a].append(b)
                        trades[b].append(a)
                        for knob, factor in walked:
                            lo, hi = bounds[knob]
                            spans[knob].append(min(max(fitted.knobs[knob] * factor, lo), hi))
    return [
        Identification(
            n,
            fitted.knobs[n],
            profile[n][0],
            profile[n][1],
            tuple(trades[n]),
            bar,
            (min(spans[n]), max(spans[n])) if trades[n] else None,
        )
        for n in names
    ]


def _valley(
    rise: Callable[[Mapping[str, float]], float],
    a: str,
    b: str,
    profile: Mapping[str, tuple[float, float]],
) -> list[tuple[str, float]]:
    """Whether ``a`` and ``b`` trade off, as the (knob, factor) moves along their valley
    (empty: they do not). Each way (a up and b down, a down and b up) the knob whose step
    moves the distance more moves by STEP ** t, t = sqrt(its rise's ratio to the other's)
    (at least 1/4), so that each move alone raises it alike under a quadratic bowl; the pair
    trades off when the two together raise it by less than TRADE of the sum of the two
    moves' own rises, each measured (a fit off its floor is no quadratic bowl). The flat ways are walked on, k
    steps at once, while the rise stays under the first step's threshold."""
    walked: list[tuple[str, float]] = []
    for sign in (1, -1):
        ra = profile[a][1] if sign > 0 else profile[a][0]
        rb = profile[b][0] if sign > 0 else profile[b][1]
        if max(ra, rb) <= 0:
            continue
        ta = min(1.0, max(0.25, math.sqrt(max(rb, 0.0) / ra))) if ra > rb else 1.0
        tb = min(1.0, max(0.25, math.sqrt(max(ra, 0.0) / rb))) if rb > ra else 1.0
        # Each shortened move's own rise, measured: a fit off its floor on one knob (a
        # step toward the floor lowers the distance) is not the quadratic bowl that
        # ``ra * ta**2`` assumes, and two independent knobs would then look like a valley.
        alone_a = ra if ta == 1.0 else rise({a: STEP ** (sign * ta)})
        alone_b = rb if tb == 1.0 else rise({b: STEP ** (-sign * tb)})
        apart = max(alone_a, 0.0) + max(alone_b, 0.0)
        if apart <= 0:
            continue
        threshold = TRADE * apart

        def moves(k: int) -> dict[str, float]:
            return {a: STEP ** (sign * k * ta), b: STEP ** (-sign * k * tb)}  # noqa: B023

        # Independent knobs add up (the two moves at once rise by the sum of their own
        # rises, whatever their signs); a valley takes away more than (1 - TRADE) of them.
        if rise(moves(1)) - alone_a - alone_b >= -(1 - TRADE) * apart:
            continue
        walked += list(moves(1).items())
        for k in range(2, WALK + 1):
            if rise(moves(k)) >= threshold:
                break
            walked += list(moves(k).items())
    return walked
