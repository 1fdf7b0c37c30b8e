"""Fit the sim's knobs to a profile: coordinate search on a log-scale distance.

The sim is deterministic for a seed, so every candidate is scored on the same draws
(common random numbers): the distance moves only when a knob changes what the sim does.
Each step tries each knob at a few multiples of its value and keeps the best; steps
shrink when no move helps. Pure apart from the simulations it asks ``evaluate`` for.
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
        moved = False
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
        if not moved:
            factors = tuple(math.sqrt(f) for f in factors)  # finer steps
    return result
