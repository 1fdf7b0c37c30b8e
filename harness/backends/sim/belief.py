"""The sim's belief over ranked options: a Gaussian reading integrated over their regions.

The mass beyond the range the question offers never goes to the end options as open-ended
regions (they would draw readings near them by construction): it is renormalised onto the
options or, for the share ``off_range`` of it (interval questions), spread evenly over them.
A question whose range does not hold the reading (a beam's off-path branch) is then not
answered with certainty, so beams do not lose to greedy trees by construction.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from itertools import pairwise

REACH = 8.0  # beyond this many standard deviations a mass rounds to 0.00 on the wire


def region_bounds(kind: str, lows: Sequence[float], top: float) -> tuple[float, ...]:
    """Where each ranked option's region begins, and where the last one ends.

    An interval's region is itself (``top`` is the last interval's upper bound); a value's
    reaches halfway to its neighbours, and half a step beyond the first and last value."""
    if kind == "value":
        if len(lows) == 1:
            return (lows[0] - 0.5, lows[0] + 0.5)
        mids = [(a + b) / 2 for a, b in pairwise(lows)]
        return (lows[0] - (mids[0] - lows[0]), *mids, lows[-1] + (lows[-1] - mids[-1]))
    return (*lows, top)


def masses(
    labels: Sequence[str], bounds: Sequence[float], at: float, sigma: float, spread: float = 0.0
) -> dict[str, float]:
    """``Normal(at, sigma)`` over the regions ``bounds`` delimit. The mass beyond the range's
    ends is renormalised away (``spread`` 0: all on the nearest option when the reading is
    far outside, or ``sigma`` is 0) or, for the share ``spread`` of it, spread evenly over
    the options (a value outside them all gives no option an edge)."""
    n = len(labels)
    nearest = min(max(bisect_right(bounds, at) - 1, 0), n - 1)
    if not sigma > 0:
        return {labels[nearest]: 1.0}
    first = max(bisect_right(bounds, at - REACH * sigma) - 1, 0)
    last = min(bisect_right(bounds, at + REACH * sigma) - 1, n - 1)
    scale = sigma * math.sqrt(2.0)
    out: dict[str, float] = {}
    below = 0.5 * math.erfc((at - bounds[first]) / scale)
    for i in range(first, last + 1):
        above = 0.5 * math.erfc((at - bounds[i + 1]) / scale)
        if above > below:
            out[labels[i]] = above - below
        below = above
    total = sum(out.values())
    kept = {label: m / total for label, m in out.items()} if total > 0 else {labels[nearest]: 1.0}
    if not spread > 0:
        return kept
    even = max(1.0 - total, 0.0) / n
    return {
        label: (1.0 - spread) * kept.get(label, 0.0) + spread * (out.get(label, 0.0) + even)
        for label in labels
    }
