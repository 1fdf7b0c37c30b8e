"""Alpha spent over planned looks, so that peeking keeps the false-positive rate (no I/O).

A comparison that looks at its cells after each batch of families and stops a cell once it
is called must not test each look at the full alpha: with four looks an A/A comparison
would be called far more often than alpha. Each look k is tested at the share of alpha the
spending function releases between the previous look and this one, ``a(t_k) - a(t_k-1)``
with ``t`` the share of the families asked, the O'Brien-Fleming-type function of Lan &
DeMets (1983), ``a(t) = 2 - 2 Phi(z_(1-alpha/2) / sqrt(t))``: little early, most at the end,
so that a comparison run to its last look loses little against the full comparison (in
the replay of benchmarks/bench_sequential.py it agreed with the full verdicts where the
Pocock-type ``alpha ln(1 + (e - 1) t)`` did not, and asked fewer requests). The looks'
levels sum to alpha, so by the union bound the chance of any false call over all looks is
at most alpha whatever the test's dependence between looks (Holm inside each look keeps
it over the cells).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from runfolder import MIN_LOOK, look_sizes

if TYPE_CHECKING:
    from .family_test import Method

__all__ = [
    "MIN_LOOK",
    "SequentialPath",
    "StopReason",
    "look_sizes",
    "sequential_replay",
    "spending_levels",
    "testable_cells",
]


def spent(t: float, alpha: float, gamma: float | None) -> float:
    """Alpha spent by share ``t`` of the families: O'Brien-Fleming-type (``gamma`` None)
    or Hwang-Shih-DeCani's ``alpha (1 - e^(-gamma t)) / (1 - e^(-gamma))``."""
    t = min(t, 1.0)
    if gamma is None:
        z = NormalDist().inv_cdf(1 - alpha / 2)
        return 2 - 2 * NormalDist().cdf(z / math.sqrt(t))
    if abs(gamma) < 1e-9:  # the limit; a subnormal gamma * t underflows to 0 otherwise
        return alpha * t
    return alpha * math.expm1(-gamma * t) / math.expm1(-gamma)


def spending_levels(
    fractions: Sequence[float], alpha: float, gamma: float | None = None
) -> list[float]:
    """The level of each look at the given shares of the families (increasing, the last 1)."""
    if not fractions or any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ValueError("looks must be increasing shares of the families")
    if not (fractions[0] > 0 and math.isclose(fractions[-1], 1.0)):
        raise ValueError("looks must lie in (0, 1] and end at 1")
    spent_ = [spent(t, alpha, gamma) for t in fractions]
    return [b - a for a, b in zip([0.0, *spent_[:-1]], spent_, strict=True)]


def testable_cells(diff_sums: np.ndarray) -> np.ndarray:
    """Cells (columns) with a nonzero family difference: the others cannot be called."""
    return np.asarray(np.abs(np.nan_to_num(diff_sums)).sum(axis=0) > 0)


class StopReason(StrEnum):
    """Why a cell stopped: called at a look's level (decided), given up on (futile), run to
    the last look (end), or not stopped by the looks taken so far (open)."""

    DECIDED = "decided"
    FUTILE = "futile"
    END = "end"
    OPEN = "open"


@dataclass(frozen=True, eq=False)
class SequentialPath:
    """Each cell's stop under the looks: the look (1-based) it stopped at, why, its verdict
    sign (+1 / -1 / 0), and how many families had been asked when every cell had stopped."""

    sizes: tuple[int, ...]  # families asked at each look
    stopped_at: np.ndarray  # (K,) look number; the last look when it ran to the end
    reason: np.ndarray  # (K,) StopReason objects
    sign: np.ndarray  # (K,) +1 / -1 where decided, else 0
    families_used: int
    # Each look's estimate and 95% interval per cell (looks taken, K): the path's figure.
    delta: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    @property
    def settled(self) -> bool:
        """Every cell has stopped (decided, futile, or at the last look)."""
        return all(r is not StopReason.OPEN for r in self.reason)


# The most family resamples a look draws to resolve a bootstrap p at its level (issue 44):
# 1 / (B + 1) reaches the first look's 0.00009 / 12 cells at about 135,000.
MAX_LOOK_FLIPS = 250_000


def look_flips(d: np.ndarray, n: np.ndarray, level: float, n_flips: int, method: str) -> int:
    """Resamples for one look's bootstrap p: enough that its floor ``1 / (B + 1)`` lies below
    Holm's first step ``level / K`` when some cell's t already gets there (a resampled p can
    then decide at an early look, as the t's can), else ``n_flips``; capped."""
    from .family_test import family_p_values

    if method != "bootstrap_t":
        return n_flips
    k = d.shape[1]
    if not k:
        return n_flips
    with np.errstate(invalid="ignore"):
        reachable = bool(np.nanmin(family_p_values(d, n, 0.0, 0, 0, "t"), initial=1.0) * k < level)
    if not reachable:
        return n_flips
    return int(min(max(n_flips, math.ceil(k / level)), MAX_LOOK_FLIPS))


def sequential_replay(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    n_looks: int = 4,
    alpha: float = 0.05,
    n_flips: int = 9_999,
    seed: int = 20260923,
    futility: float = 0.05,
    futility_from: float = 0.25,
    gamma: float | None = None,
    margin: float = 0.0,
    upto: int | None = None,
    sizes: tuple[int, ...] | None = None,
    method: Method | None = None,
) -> SequentialPath:
    """The sequential rule on (F, K) family sums taken in their given order (shuffle them
    first, seeded): at each look every cell is tested at the look's spent level, Holm over
    the cells that can be called (a stopped one as it stopped: its families after its stop
    change nothing), and an open cell it calls is decided; futile when its conditional power
    under the current estimate (Lan & Wittes' B-value projection) is below ``futility``, from the
    look at ``futility_from`` of the families on (earlier estimates are too rough to give up
    on), or when ``margin`` > 0 and its 95% interval lies inside (-margin, margin). Futility
    never calls a cell, so it cannot raise the false-positive rate. ``upto``: only the
    looks taken so far (a comparison still asking); cells not stopped by then are "open".
    ``sizes``: the families asked by each look, increasing to F (default: ``look_sizes``).
    ``method``: the p-values' test (default: the verdict test's, ``family_test.DEFAULT_METHOD``;
    the calibration study measures a candidate's rule with it; intervals and futility stay
    the t's)."""
    from .family_test import DEFAULT_METHOD, family_p_values, paired_family_test
    from .multiple import holm

    f, k = diff_sums.shape
    # No look before MIN_LOOK families: a t with one or two degrees of freedom is no test.
    sizes = sizes or look_sizes(f, n_looks)
    levels = spending_levels([s / f for s in sizes], alpha, gamma)
    stopped = np.zeros(k, np.int64)
    reason = np.full(k, StopReason.END, dtype=object)
    sign = np.zeros(k)
    taken = len(sizes) if upto is None else min(upto, len(sizes))
    path: list[tuple[np.ndarray, ...]] = []
    # A stopped cell keeps what it had at its stop (its families are no longer asked).
    frozen_p, frozen_live = np.ones(k), np.zeros(k, bool)
    for look, (size, level) in enumerate(zip(sizes, levels, strict=True), start=1):
        open_ = stopped == 0
        if not open_.any() or look > taken:
            break
        d, n = diff_sums[:size], counts[:size]
        shown = paired_family_test(d, n, alpha, n_flips, seed)
        now = (shown.delta, shown.lo, shown.hi)
        path.append(now if not path else tuple(map(np.where, (open_,) * 3, now, path[-1])))
        # Holm over every cell that can be called, stopped ones included as they stopped:
        # a decided cell at its last p (until a first false call only false nulls are
        # decided, and Holm holds whatever their p), a futile one at p = 1 (its p at a
        # data-chosen look is no p-value; 1 cannot help call another cell). So the look
        # keeps Holm's level and the union bound over the looks holds, and what is asked
        # after a cell stopped never changes a decision. A cell whose two sides agree on
        # every unit asked while it was open (each family's difference exactly 0) cannot
        # reach any level, whatever the test: Tarone's (1990) rule leaves it out of m.
        test = method or DEFAULT_METHOD
        p = np.where(
            open_,
            # The open cells only: what a stopped cell's families hold changes nothing.
            family_p_values(d, n, 0.0, look_flips(d[:, open_], n[:, open_], level, n_flips, test),
                            seed, test),
            frozen_p,
        )  # fmt: skip
        live = np.where(open_, testable_cells(d), frozen_live)
        called = np.zeros(k, bool)
        called[live] = holm(p[live]) < level
        called &= open_
        stopped[called] = look
        reason[called] = StopReason.DECIDED
        delta = d.sum(0) / np.maximum(n.sum(0), 1)
        sign[called] = np.sign(delta[called])
        if margin > 0:  # what is left is smaller than the margin the user cares about
            inside = open_ & ~called & (shown.lo > -margin) & (shown.hi < margin)
            stopped[inside] = look
            reason[inside] = StopReason.FUTILE
        if futility_from <= size / f < 1:
            se = paired_family_test(d, n, alpha, n_flips, seed, interval=False).se
            with np.errstate(invalid="ignore", divide="ignore"):
                z = np.nan_to_num(np.abs(delta) / se, nan=0.0, posinf=1e9)
            t = size / f
            # Futility at Holm's first step over the cells that can be called.
            z_final = NormalDist().inv_cdf(1 - levels[-1] / (2 * max(int(live.sum()), 1)))
            power = 1 - np.array(
                [NormalDist().cdf((z_final - zi / math.sqrt(t)) / math.sqrt(1 - t)) for zi in z]
            )
            futile = open_ & ~called & (power < futility)
            stopped[futile] = look
            reason[futile] = StopReason.FUTILE
        futile_now = np.array([r is StopReason.FUTILE for r in reason], bool)
        frozen_p, frozen_live = np.where(futile_now, 1.0, p), live
    last = len(sizes)
    if taken < last:
        reason[stopped == 0] = StopReason.OPEN
        stopped[stopped == 0] = taken
    stopped[stopped == 0] = last
    used = sizes[int(stopped.max()) - 1]
    delta, lo, hi = (np.array([row[i] for row in path]) for i in range(3))
    return SequentialPath(sizes, stopped, reason, sign, used, delta, lo, hi)
