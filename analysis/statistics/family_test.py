"""The verdict test: a paired difference over families, its p-value and the interval that
inverts it (no I/O).

Input is per family: the sum of the paired differences of its common units and their
count (``paired.PairedTotals`` gives both). The difference is the mean over units,
``delta = sum d_f / sum n_f``; its cluster-robust (CR1) standard error uses the families'
residuals ``r_f = d_f - n_f delta``: ``se^2 = G/(G-1) * sum r_f^2 / N^2`` over the G families
with a unit.

The default test is ``method="bootstrap_t"`` (below; issue 44 made it the default, see
``DEFAULT_METHOD``, kept in ``runfolder.verdict_option`` beside the ``--test`` option).
``method="t"`` is the cluster-robust t with G-1 degrees of freedom: ``t = delta / se`` against Student's t (what Inspect AI's ``ci`` uses; Miller
2024, "Adding Error Bars to Evals"), and its interval ``delta ± t_(1-alpha/2, G-1) se``,
which excludes 0 exactly when ``p < alpha`` (rounding at the boundary is settled by the
p-value). It was the default until issue 44, chosen by a calibration study (benchmarks/bench_calibration.py,
docs/comparing.md) over the percentile bootstrap p, BCa, sign-flip tests and the wild
cluster bootstrap-t: on the A/A nulls all but the first two held 5%, and where the two
sides have equal means and different spreads (skewed family differences) the sign-flip
tests called up to 37% of comparisons and the t 7-21%.

``method="bootstrap_t"``: the symmetric studentized cluster bootstrap-t (Hall 1992; Cameron,
Gelbach & Miller 2008): the families resampled ``n_flips`` times (seeded), each resample's
``t* = (delta* - delta) / se*`` with its own CR1 error, p the share of ``|t*|`` reaching
``|t|``, and a cell called only when the t calls it too (p the larger of the two; the
interval ``delta ± q se`` with q the larger critical |t|). In the study's second round
(with Hall's skewness-corrected t, the equal-tailed bootstrap-t and Mammen-weight wild
bootstraps, ``skew_tests``) it held 5% on every null but the tripled spread, where it came
closest; it costs power on heavy-tailed cells (MAPE), and its p cannot go below
``1 / (n_flips + 1)``, which the sequential rule's first looks need.

``method="wild"``: the restricted wild cluster bootstrap-t. Under "difference delta0" each
family's residual ``u_f = d_f - n_f delta0`` keeps or flips its sign at random and the
studentized statistic of each flip is set against the observed one; with 13 families or
fewer every one of the 2^G sign vectors is taken, otherwise ``n_flips`` random ones (seeded);
its interval is found by bisection on each side, 0 placed by the p-value at 0 itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import cast

import numpy as np

from runfolder.verdict_option import CHOICES, DEFAULT_METHOD, Method

from .bootstrap import resample_weights
from .skew_tests import bootstrap_t_critical, bootstrap_t_replicates, two_sided_p
from .student import student_ppf, student_sf

__all__ = [
    "CHOICES",
    "DEFAULT_FLIPS",
    "DEFAULT_METHOD",
    "PROMISES",
    "TEST_NAMES",
    "FamilyTest",
    "Method",
    "as_method",
    "detectable_effect",
    "family_p_values",
    "paired_family_test",
    "sign_vectors",
]

DEFAULT_FLIPS = 9_999  # sign vectors of the wild bootstrap, family resamples of the bootstrap-t
# Each test's name and its promise, one sentence, as summary.md, summary.json, the page and
# --help show them.
TEST_NAMES: dict[str, str] = {
    "bootstrap_t": "cluster bootstrap-t, called only where the cluster-robust t calls too",
    "t": "cluster-robust t",
    "wild": "wild cluster bootstrap-t",
}
PROMISES: dict[str, str] = {
    "bootstrap_t": "at most 5% of comparisons get any false better/worse when the two models "
    "are exchangeable within families (an A/A pair), and, as measured by the calibration "
    "study, on equal-mean pairs with different spreads (steady k=2, erratic) at 8 to 128 "
    "families; not promised where one model is several times steadier than the other at "
    "the same mean (steady k=9)",
    "t": "level measured on exchangeable pairs only",
    "wild": "level measured on exchangeable pairs only",
}
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
    n_flips: int  # sign vectors or family resamples used; 0 for the t test
    method: str = "t"


def as_method(name: object) -> Method:
    """``name`` as a verdict test's name (``compare --test``, kept in compare.json)."""
    if name in (*CHOICES, "wild"):
        return cast(Method, name)
    raise ValueError(f"unknown verdict test {name!r}: choose bootstrap_t or t")


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


def _t_p(flips: _Flips, testable: np.ndarray, null: np.ndarray | float) -> np.ndarray:
    """Two-sided p of "difference null" from Student's t with G-1 degrees of freedom."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(flips.delta - null) / flips.se()
        # No spread at all: any difference from the null is certain, none is no evidence.
        t = np.where(np.isnan(t), 0.0, t)
        p = 2 * student_sf(t, np.maximum(flips.groups - 1, 1))
    return np.where(testable, p, np.nan)


def _t_critical(flips: _Flips, level: float) -> np.ndarray:
    """Student's t quantile at ``level`` with G-1 degrees of freedom, per column."""
    return np.asarray(student_ppf(level, np.maximum(flips.groups - 1, 1)), np.float64)


def _flips(
    diff_sums: np.ndarray, counts: np.ndarray, n_flips: int, seed: int
) -> tuple[_Flips, np.ndarray]:
    """The flips of (F, K) or (F,) sums and counts, and which columns can be tested."""
    d = np.asarray(diff_sums, np.float64)
    n = np.asarray(counts, np.float64)
    d, n = (d[:, None], n[:, None]) if d.ndim == 1 else (d, n)
    # The t test needs no flips (n_flips 0): only the sums of squares _Flips keeps.
    signs = sign_vectors(d.shape[0], n_flips, seed) if n_flips else np.empty((0, d.shape[0]))
    flips = _Flips(d, n, signs)
    return flips, (flips.groups >= 2) & (flips.total > 0)


def family_p_values(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    null: np.ndarray | float = 0.0,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
    method: Method = DEFAULT_METHOD,
) -> np.ndarray:
    """The test's p-value of "difference ``null``" per column (NaN under two families)."""
    flips, testable = _flips(diff_sums, counts, n_flips if method == "wild" else 0, seed)
    if method == "bootstrap_t":
        t, reps, _ = _replicates(diff_sums, counts, n_flips, seed, null)
        boot = two_sided_p(t, reps, "symmetric", testable)
        return np.maximum(boot, _t_p(flips, testable, null))
    if method == "t":
        return _t_p(flips, testable, null)
    h = np.where(testable, flips.delta - null, 0.0)
    return np.where(testable, flips.p(h), np.nan)


def detectable_effect(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    level: float,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
    method: Method = DEFAULT_METHOD,
) -> np.ndarray:
    """Minimum detectable effect per column at 80% power, two-sided at ``level``: (the
    critical |t| + the t (or normal, for the flips) quantile at 0.8) times the standard error."""
    flips, testable = _flips(diff_sums, counts, n_flips if method == "wild" else 0, seed)
    if method == "bootstrap_t":
        reps = _replicates(diff_sums, counts, n_flips, seed)[1]
        mde = _boot_mde(flips, reps, level)
    else:
        mde = _mde(flips, level, method)
    # No spread between families (every difference the same): no MDE to speak of.
    return np.where(testable & (flips.se() > 0), mde, np.nan)


def _mde(flips: _Flips, level: float, method: Method) -> np.ndarray:
    if method == "t":
        crit, power = _t_critical(flips, 1 - level / 2), _t_critical(flips, POWER)
    else:
        crit, power = (
            flips.critical(1 - level),
            np.full(len(flips.delta), NormalDist().inv_cdf(POWER)),
        )
    with np.errstate(invalid="ignore"):  # an infinite critical |t| times a zero se
        return np.asarray((crit + power) * flips.se(), np.float64)


def _replicates(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    n_boot: int,
    seed: int,
    null: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bootstrap-t's observed t, replicate t* and testable columns (families resampled)."""
    if n_boot <= 0:
        raise ValueError("the bootstrap-t needs n_flips > 0 family resamples (or method='t')")
    weights = resample_weights(np.shape(diff_sums)[0], n_boot, seed)
    return bootstrap_t_replicates(diff_sums, counts, weights, null)


def _boot_critical(flips: _Flips, reps: np.ndarray, level: float) -> np.ndarray:
    """The |t| the bootstrap-t must exceed at ``level``: the replicates' critical |t*|, never
    below Student's (both tests must reject)."""
    return np.maximum(bootstrap_t_critical(reps, level), _t_critical(flips, 1 - level / 2))


def _boot_mde(flips: _Flips, reps: np.ndarray, level: float) -> np.ndarray:
    """(the bootstrap-t's critical |t| at ``level`` + Student's t at 0.8, G-1 df) times se."""
    crit = _boot_critical(flips, reps, level)
    with np.errstate(invalid="ignore"):
        return np.asarray((crit + _t_critical(flips, POWER)) * flips.se(), np.float64)


def _t_interval(
    flips: _Flips, alpha: float, p: np.ndarray, critical: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``delta ± critical se`` (Student's ``t_(1-alpha/2)`` unless given), its side of 0
    settled by ``p`` where rounding (or the bootstrap's ties) differs."""
    if critical is None:
        critical = _t_critical(flips, 1 - alpha / 2)
    with np.errstate(invalid="ignore"):  # an infinite critical |t*| times a zero se: 0
        half = np.nan_to_num(critical * np.nan_to_num(flips.se()), nan=0.0, posinf=np.inf)
    lo, hi = flips.delta - half, flips.delta + half
    called, up = p < alpha, flips.delta > 0
    tiny = np.nextafter(0.0, 1.0)  # the smallest positive double: never past a subnormal delta
    lo = np.where(called & up, np.maximum(lo, tiny), np.where(~called & up, np.minimum(lo, 0), lo))
    hi = np.where(
        called & ~up, np.minimum(hi, -tiny), np.where(~called & ~up, np.maximum(hi, 0), hi)
    )
    return lo, hi


def paired_family_test(
    diff_sums: np.ndarray,
    counts: np.ndarray,
    alpha: float = 0.05,
    n_flips: int = DEFAULT_FLIPS,
    seed: int = 20260923,
    m: int = 1,
    interval: bool = True,
    method: Method = DEFAULT_METHOD,
) -> FamilyTest:
    """Test "no difference" for each column of per-family sums of paired differences.

    ``diff_sums`` and ``counts`` are (F, K): per family, the sum of ``other - base`` over
    its common units and how many there were. Returns the difference, its ``1 - alpha``
    interval (inverting the test; NaN when ``interval`` is False, which saves its
    bisection, as for the MDE), p, the CR1 standard error, and the minimum detectable
    effect at 80% power and level ``alpha / m`` (Holm's first step over m cells).
    """
    flips, testable = _flips(diff_sums, counts, n_flips if method == "wild" else 0, seed)
    if method == "bootstrap_t":
        return _bootstrap_t_test(flips, testable, diff_sums, counts, alpha, n_flips, seed, m)
    if method == "t":
        p = _t_p(flips, testable, 0.0)
    else:
        p = np.where(testable, flips.p(np.where(testable, flips.delta, 0.0)), np.nan)
    at_zero = p >= alpha
    lo = hi = np.full(len(p), np.nan)
    if interval and method == "t":
        lo, hi = (np.where(testable, end, np.nan) for end in _t_interval(flips, alpha, p))
    elif interval:
        # Every family's difference exactly 0 (identical answers): the interval is [0, 0]
        # (p is 1), whereas the flips of so few families could not bound it.
        still = testable & (flips.rr == 0) & (flips.delta == 0)
        lo = np.where(testable, _end(flips, alpha, 1.0, at_zero), np.nan)
        hi = np.where(testable, _end(flips, alpha, -1.0, at_zero), np.nan)
        lo, hi = np.where(still, 0.0, lo), np.where(still, 0.0, hi)
    mde = np.full(len(p), np.nan)
    if interval:  # the MDE, like the interval, is for showing; a p-value alone skips both
        mde = _mde(flips, alpha / max(m, 1), method)
    n_used = flips.n_vectors if method == "wild" else 0
    return _result(flips, testable, (p, lo, hi, mde), alpha, n_used, method)


def _result(
    flips: _Flips,
    testable: np.ndarray,
    found: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    alpha: float,
    n_used: int,
    method: str,
) -> FamilyTest:
    """The FamilyTest of ``found`` = (p, lo, hi, mde), NaN where a column cannot be tested."""
    p, lo, hi, mde = found
    return FamilyTest(
        delta=np.where(flips.total > 0, flips.delta, np.nan),
        lo=np.where(testable, lo, np.nan),
        hi=np.where(testable, hi, np.nan),
        p=p,
        se=np.where(testable, flips.se(), np.nan),
        mde=np.where(testable & (flips.se() > 0), mde, np.nan),
        n_families=flips.groups.astype(np.int64),
        n_units=flips.total.astype(np.int64),
        alpha=alpha,
        n_flips=n_used,
        method=method,
    )


def _bootstrap_t_test(
    flips: _Flips,
    testable: np.ndarray,
    diff_sums: np.ndarray,
    counts: np.ndarray,
    alpha: float,
    n_boot: int,
    seed: int,
    m: int,
) -> FamilyTest:
    """The symmetric cluster bootstrap-t: p, ``delta ± q* se`` (q* the critical |t*|) and
    the MDE from the same ``n_boot`` family resamples."""
    t, reps, _ = _replicates(diff_sums, counts, n_boot, seed)
    p = np.maximum(two_sided_p(t, reps, "symmetric", testable), _t_p(flips, testable, 0.0))
    lo, hi = _t_interval(flips, alpha, p, _boot_critical(flips, reps, alpha))
    mde = _boot_mde(flips, reps, alpha / max(m, 1))
    return _result(flips, testable, (p, lo, hi, mde), alpha, n_boot, "bootstrap_t")
