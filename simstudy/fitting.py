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


@dataclass(frozen=True)
class Identification:
    """How well the data pin one fitted knob: the distance's relative rise with the knob
    moved down and up by STEP (others held), the rise it must beat (``bar``: RISE, or the
    seed noise of the distance if larger), and the knobs it trades off with (moving both in
    opposite directions stays under the bar although each alone does not)."""

    knob: str
    value: float
    down: float
    up: float
    trades_with: tuple[str, ...]
    bar: float = RISE

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
    each pair of identified knobs moved in opposite directions. ``noise``: how much the
    distance at the fit moves between sim seeds (a rise below it is not seen)."""
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
    firm = [n for n in names if min(profile[n]) >= bar]
    trades: dict[str, list[str]] = {n: [] for n in names}
    if pairs:
        for i, a in enumerate(firm):
            for b in firm[i + 1 :]:
                if min(rise({a: STEP, b: 1 / STEP}), rise({a: 1 / STEP, b: STEP})) < bar:
                    trades[a].append(b)
                    trades[b].append(a)
    return [
        Identification(n, fitted.knobs[n], profile[n][0], profile[n][1], tuple(trades[n]), bar)
        for n in names
    ]
