"""The verdict test: a paired difference over families, its p-value and the interval that
inverts it (no I/O).

Input is per family: the sum of the paired differences of its common units and their
count (``paired.PairedTotals`` gives both). The difference is the mean over units,
``delta = sum d_f / sum n_f``; its cluster-robust (CR1) standard error uses the families'
residuals ``r_f = d_f - n_f delta``: ``se^2 = G/(G-1) * sum r_f^2 / N^2`` over the G families
with a unit.

The test is the wild cluster bootstrap-t with Rademacher weights, restricted by the null
(MacKinnon & Webb 2017, "WCR"): under "difference delta0" each family's restricted residual
``u_f = d_f - n_f delta0`` keeps or flips its sign at random, and the studentized statistic
of each flip is set against the observed one. With 13 families or fewer every one of the
2^G sign vectors is taken (an exact enumeration), otherwise ``n_flips`` random ones. The
p-value is the share of flips whose |t| reaches the observed |t| (the observed counted
once). It was chosen by a calibration study (benchmarks/bench_calibration.py,
docs/comparing.md): of the percentile bootstrap p, BCa, a plain sign-flip test and a
cluster-robust t with G-1 degrees of freedom, it is the one that held its level at 8 to 128
families, also when the two sides have equal means but different spreads, with the most
power among those that did.

The interval is the set of delta0 the test does not reject at ``alpha``, found by bisection
on each side; 0 is placed in or out of it by the p-value at 0 itself, so the interval
excludes 0 exactly when ``p < alpha``.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = [
    "DEFAULT_FLIPS",
    "FamilyTest",
    "detectable_effect",
    "family_p_values",
    "paired_family_test",
    "sign_vectors",
]

DEFAULT_FLIPS = 9_999
EXACT_UP_TO = 13  # 2^13 = 8,192 sign vectors: enumerate them all, no draw needed
POWER = 0.8  # the power at which the minimum detectable effect is quoted
_TIE = 1e-9  # a flip whose |t| equals the observed one up to rounding counts as reaching it


@dataclass(frozen=True, eq=False)
class FamilyTest:
    """One paired difference per column: point, interval (at ``1 - alpha``), p-value of
    "difference ``null``", standard error, minimum detectable effect, families and units."""

    delta: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    p: np.ndarray  # NaN: fewer than two families with a unit
    se: np.ndarray
    mde: np.ndarray  # at 80% power and level alpha / m (see paired_family_test)
    n_families: np.ndarray
    n_units: np.ndarray
    alpha: float
    n_flips: int  # sign vectors used (2^F when enumerated)


def sign_vectors(n_families: int, n_flips: int, seed: int) -> np.ndarray:
    """Rademacher weights (B, F) without the identity: every other sign vector when
    ``n_families <= 13``, else ``n_flips`` random ones (seeded)."""
    if n_families <= EXACT_UP_TO:
        codes = np.arange(1, 2**n_families, dtype=np.int64)  # 0 is the identity
        bits = (codes[:, None] >> np.arange(n_families)) & 1
        return 1.0 - 2.0 * bits
    rng = np.random.default_rng(seed)
    return rng.choice(np.array([-1.0, 1.0]), size=(n_flips, n_families))


class _Flips:
    """The flipped statistics of every column as polynomials in h = delta - delta0, so that
    the p-value at any delta0 costs a few (B, K) array operations."""

    def __init__(self, d: np.ndarray, n: np.ndarray, signs: np.ndarray) -> None:
        self.total = n.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.delta = d.sum(axis=0) / self.total
            w = n / self.total
        r = d - n * self.delta
        self.groups = (n > 0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            self.c = self.groups / (self.groups - 1.0)
        self.rr = (r * r).sum(axis=0)
        self.rn = (r * n).sum(axis=0)
        self.nn = (n * n).sum(axis=0)
        self.ww = (w * w).sum(axis=0)
        self.er, self.en = signs @ r, signs @ n
        self.erw, self.enw = signs @ (r * w), signs @ (n * w)
        self.n_vectors = signs.shape[0] + 1  # with the identity

    def p(self, h: np.ndarray) -> np.ndarray:
        """p-value of "difference delta - h", per column (h shape (K,))."""
        with np.errstate(over="ignore", invalid="ignore"):  # far-out h while bracketing
            s = self.er + h * self.en
            q = self.erw + h * self.enw
            uu = self.rr + 2 * h * self.rn + h * h * self.nn
            spread = self.c * (uu - 2 * s * q + s * s * self.ww)
            observed = (self.total * h) ** 2
            # |t*| >= |t| as s^2 / spread >= observed / (c rr), not dividing by a zero spread.
            reach = s * s * self.c * self.rr >= observed * spread * (1 - _TIE)
        return (1 + reach.sum(axis=0)) / self.n_vectors

    def se(self) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.sqrt(self.c * self.rr) / self.total

    def critical(self, level: float) -> np.ndarray:
        """The flips' |t| quantile at ``level`` under the null at the point (h = 0)."""
        spread = self.c * (self.rr - 2 * self.er * self.erw + self.er**2 * self.ww)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.abs(self.er) / np.sqrt(np.maximum(spread, 0.0))
        # 0/0 (a flip that changes nothing) is no evidence; x/0 is an infinite |t|, as it is.
        t = np.where(np.isnan(t), 0.0, t)
        return np.quantile(t, level, axis=0, method="higher")


def _end(flips: _Flips, alpha: float, side: float, at_zero: np.ndarray) -> np.ndarray:
    """The interval's end on one side (+1: below the point, -1: above), as a delta0.

    Bisection between an accepted h (p >= alpha) and a rejected one; h = delta (the null 0)
    seeds the bracket on its own side, so that 0 is inside exactly when p(0) >= alpha.
    """
    se = np.nan_to_num(flips.se())
    se = np.where(se > 0, se, np.abs(np.nan_to_num(flips.delta)) + 1.0)
    h0 = np.abs(np.nan_to_num(flips.delta))
    zero_here = np.sign(np.nan_to_num(flips.delta)) == side
    accepted = np.where(zero_here & at_zero, h0, 0.0)
    rejected = np.where(zero_here & ~at_zero, h0, np.nan)
    step = accepted + 2 * se
    for _ in range(60):  # step out until every open column has a rejected h
        open_ = np.isnan(rejected)
        if not open_.any():
            break
        out = flips.p(side * step) < alpha
        rejected = np.where(open_ & out, step, rejected)
        accepted = np.where(open_ & ~out, step, accepted)
        step = np.where(open_ & ~out, step * 2, step)
    never = np.isnan(rejected)  # the flips cannot reject at this level: no finite end
    rejected = np.where(never, accepted, rejected)
    for _ in range(50):
        mid = (accepted + rejected) / 2
        out = flips.p(side * mid) < alpha
        rejected = np.where(out, mid, rejected)
        accepted = np.where(out, accepted, mid)
    # The last accepted h, not the midpoint: it stays on 0's side of the bracket exactly.
    end = flips.delta - side * accepted
    return np.where(never, -side * np.inf, end)


def _flips(
    diff_sums: np.ndarray, counts: np.ndarray, n_flips: int, seed: int
) -> tuple[_Flips, np.ndarray]:
    """The flips of (F, K) or (F,) sums and counts, and which columns can be tested."""
    d = np.asarray(diff_sums, np.float64)
    n = np.asarray(counts, np.float64)
    d, n = (d[:, None], n[:, None]) if d.ndim == 1 else (d, n)
    flips = _Flips(d, n, sign_vectors(d.shape[0], n_flips, seed))
    return flips, (flips.groups >= 2) & (flips.total > 0)


def family_p_values(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    null: np.ndarray | float = 0.0,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
) -> np.ndarray:
    """The test's p-value of "difference ``null``" per column (NaN under two families)."""
    flips, testable = _flips(diff_sums, counts, n_flips, seed)
    h = np.where(testable, flips.delta - null, 0.0)
    return np.where(testable, flips.p(h), np.nan)


def detectable_effect(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    level: float,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
) -> np.ndarray:
    """Minimum detectable effect per column at 80% power, two-sided at ``level``:
    (the flips' critical |t| + z_0.8) times the standard error."""
    flips, testable = _flips(diff_sums, counts, n_flips, seed)
    with np.errstate(invalid="ignore"):  # an infinite critical |t| times a zero se
        mde = (flips.critical(1 - level) + NormalDist().inv_cdf(POWER)) * flips.se()
    # No spread between families (every difference the same): no MDE to speak of.
    return np.where(testable & (flips.se() > 0), mde, np.nan)


def paired_family_test(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    alpha: float = 0.05,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
    m: int = 1,
    interval: bool = True,
) -> FamilyTest:
    """Test "no difference" for each column of per-family sums of paired differences.

    ``diff_sums`` and ``counts`` are (F, K): per family, the sum of ``other - base`` over
    its common units and how many there were. Returns the difference, its ``1 - alpha``
    interval (inverting the test; NaN when ``interval`` is False, which saves its
    bisection, as for the MDE), p, the CR1 standard error, and the minimum detectable
    effect at 80% power and level ``alpha / m`` (Holm's first step over m cells).
    """
    flips, testable = _flips(diff_sums, counts, n_flips, seed)
    p = np.where(testable, flips.p(np.where(testable, flips.delta, 0.0)), np.nan)
    at_zero = p >= alpha
    lo = hi = np.full(len(p), np.nan)
    if interval:
        # Every family's difference exactly 0 (identical answers): the interval is [0, 0]
        # (p is 1), whereas the flips of so few families could not bound it.
        still = testable & (flips.rr == 0) & (flips.delta == 0)
        lo = np.where(testable, _end(flips, alpha, 1.0, at_zero), np.nan)
        hi = np.where(testable, _end(flips, alpha, -1.0, at_zero), np.nan)
        lo, hi = np.where(still, 0.0, lo), np.where(still, 0.0, hi)
    mde = np.full(len(p), np.nan)
    if interval:  # the MDE, like the interval, is for showing; a p-value alone skips both
        crit = flips.critical(1 - alpha / max(m, 1))
        with np.errstate(invalid="ignore"):  # an infinite critical |t| times a zero se
            mde = (crit + NormalDist().inv_cdf(POWER)) * flips.se()
    return FamilyTest(
        delta=np.where(flips.total > 0, flips.delta, np.nan),
        lo=lo,
        hi=hi,
        p=p,
        se=np.where(testable, flips.se(), np.nan),
        mde=np.where(testable & (flips.se() > 0), mde, np.nan),
        n_families=flips.groups.astype(np.int64),
        n_units=flips.total.astype(np.int64),
        alpha=alpha,
        n_flips=flips.n_vectors,
    )
