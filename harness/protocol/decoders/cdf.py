"""Threshold CDFs: isotonic projection, histogram masses, midpoint mean (pure, no I/O).

Paper, Appendix "CDF Construction and Its Limits": normalised threshold answers
``p_i ~ P(Y <= z_i)`` are projected onto a nondecreasing sequence in [0, 1] (equal-weight
isotonic regression), the endpoints ``f_0 = 0`` and ``f_{m+1} = 1`` are added, and adjacent
differences give histogram masses. This repairs the shape only: it neither recovers a unique
predictive distribution nor makes it calibrated, so the raw values and whether they
decreased are always kept next to the projection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from itertools import pairwise


def isotonic_projection(p: Sequence[float]) -> list[float]:
    """The nondecreasing sequence in [0, 1] nearest to ``p`` in squared error.

    Pool-adjacent-violators with equal weights, then clipped to [0, 1]; clipping the
    unconstrained isotonic fit solves the box-constrained problem too, and keeps it
    nondecreasing. Raises ValueError on NaN or infinite inputs.
    """
    blocks: list[list[float]] = []  # [sum, count] per pooled block, left to right
    for value in p:
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"isotonic_projection needs finite numbers; got {value!r}")
        blocks.append([v, 1.0])
        # Merge while the last block's mean is below its predecessor's (a violation).
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    out: list[float] = []
    for total, count in blocks:
        mean = min(1.0, max(0.0, total / count))
        out.extend([mean] * int(count))
    return out


def histogram_masses(f: Sequence[float]) -> list[float]:
    """Masses ``w_i = f_{i+1} - f_i`` with endpoints ``f_0 = 0`` and ``f_{m+1} = 1``
    (non-negative and summing to one for a nondecreasing ``f`` in [0, 1])."""
    return [b - a for a, b in pairwise([0.0, *(float(v) for v in f), 1.0])]


def midpoint_mean(bounds: Sequence[Decimal | Fraction], masses: Sequence[float]) -> Fraction:
    """``sum_i w_i (b_i + b_{i+1}) / 2``: the midpoint-weighted mean of a histogram.

    ``bounds`` are the ``len(masses) + 1`` bin edges. The sum is exact (a float converts
    to a Fraction without rounding), so an exact 0/1 histogram gives an exact midpoint.
    """
    if len(bounds) != len(masses) + 1:
        raise ValueError(f"{len(masses)} masses need {len(masses) + 1} bounds; got {len(bounds)}")
    edges = [Fraction(b) for b in bounds]
    return sum(
        (Fraction(w) * (edges[i] + edges[i + 1]) / 2 for i, w in enumerate(masses)),
        Fraction(0),
    )


def decreases(p: Sequence[float]) -> bool:
    """True when the raw sequence decreases anywhere (a monotonicity violation)."""
    return any(b < a for a, b in pairwise(p))


def modal_index(masses: Sequence[float]) -> int:
    """The index of the largest mass; ties go to the lower index (the lower value)."""
    return masses.index(max(masses))  # max keeps the first of equal masses
