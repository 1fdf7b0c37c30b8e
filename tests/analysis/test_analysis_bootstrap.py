"""Family bootstrap: resampling, ratio replicates, agreement with scipy, paired differences."""

from __future__ import annotations

import numpy as np
import pytest
from analysis_runs import RunFactory, true_index
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from analysis import (
    STATISTICS,
    BootstrapResult,
    FamilyTotals,
    PairedTotals,
    analyze_run,
    family_bootstrap,
    load_run,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)


@given(st.integers(1, 70), st.integers(1, 50), st.integers(0, 2**32))
def test_weights_draw_each_family_count_times(n_families: int, n_boot: int, seed: int) -> None:
    w = resample_weights(n_families, n_boot, seed)
    assert w.shape == (n_boot, n_families)
    assert np.all(w.sum(axis=1) == n_families)
    assert np.array_equal(w, resample_weights(n_families, n_boot, seed))


def test_weights_match_the_draws_of_default_rng() -> None:
    draws = np.random.default_rng(20260923).integers(0, 5, size=(3, 5))
    w = resample_weights(5, 3, 20260923)
    for b in range(3):
        assert np.array_equal(w[b], np.bincount(draws[b], minlength=5))


def test_ratio_replicates_equal_a_loop_over_replicates() -> None:
    rng = np.random.default_rng(0)
    sums, counts = rng.random((6, 4)) * 10, rng.integers(1, 4, (6, 4)).astype(float)
    w = resample_weights(6, 25, 1)
    fast = ratio_replicates(sums, counts, w)
    for b in range(25):
        chosen = np.repeat(np.arange(6), w[b])
        expected = sums[chosen].sum(axis=0) / counts[chosen].sum(axis=0)
        assert np.allclose(fast[b], expected)


def test_percentile_interval_drops_undefined_replicates() -> None:
    reps = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [np.nan, np.nan]])
    lo, hi = percentile_interval(reps, level=0.5)
    assert (lo[0], hi[0]) == (1.5, 2.5)
    assert np.isnan(lo[1]) and np.isnan(hi[1])


def _totals(family_values: np.ndarray, per_family: int = 8) -> FamilyTotals:
    """One decoder × one condition; each family has ``per_family`` units with the given mean."""
    n = len(family_values)
    sums = np.zeros((n, len(STATISTICS), 1, 1))
    counts = np.zeros_like(sums)
    sums[:, 0, 0, 0] = family_values * per_family
    counts[:, 0, 0, 0] = per_family
    return FamilyTotals(tuple(map(str, range(n))), STATISTICS, sums, counts)


def test_agrees_with_scipy_percentile_bootstrap_on_family_means() -> None:
    # 64 families with equal unit counts: the statistic is the mean of family means, so
    # scipy's percentile bootstrap of np.mean over families estimates the same interval.
    family_means = np.random.default_rng(7).gamma(2.0, 10.0, 64)
    ours = family_bootstrap(_totals(family_means), n_boot=10_000, seed=20260923)
    ref = stats.bootstrap(
        (family_means,),
        np.mean,
        n_resamples=10_000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(1),
    ).confidence_interval
    se = family_means.std(ddof=1) / np.sqrt(64)
    # Monte Carlo error of a 2.5% quantile from 10,000 replicates is ~0.05 SE; allow 0.15 SE.
    assert ours.lo[0, 0, 0] == pytest.approx(ref.low, abs=0.15 * se)
    assert ours.hi[0, 0, 0] == pytest.approx(ref.high, abs=0.15 * se)


def _two_decoder_totals(a: np.ndarray, b: np.ndarray) -> FamilyTotals:
    n = len(a)
    sums = np.zeros((n, len(STATISTICS), 2, 1))
    counts = np.ones_like(sums)
    sums[:, 0, 0, 0], sums[:, 0, 1, 0] = a, b
    return FamilyTotals(tuple(map(str, range(n))), STATISTICS, sums, counts)


def _paired_bootstrap(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> BootstrapResult:
    """Decoder x (values b) against direct (values a) on the same, all-common, units."""
    totals = _two_decoder_totals(a, b)
    paired = PairedTotals(base=_two_decoder_totals(a, a), other=totals)
    return family_bootstrap(totals, paired, "direct", n_boot, seed)


def test_paired_difference_uses_the_same_resamples() -> None:
    a = np.random.default_rng(3).random(20) * 50
    # A constant shift: every resample gives the same difference, so the interval collapses.
    shifted = _paired_bootstrap(a, a + 2.5, 500, 9)
    assert shifted.diff[0, 1, 0] == pytest.approx(2.5)
    assert shifted.diff_lo[0, 1, 0] == pytest.approx(2.5)
    assert shifted.diff_hi[0, 1, 0] == pytest.approx(2.5)
    # Unpaired resampling would widen it to the spread of the two means.
    assert shifted.hi[0, 1, 0] - shifted.lo[0, 1, 0] > 1.0


def test_paired_difference_matches_explicit_loop() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.random(12) * 10, rng.random(12) * 10
    res = _paired_bootstrap(a, b, 300, 11)
    w = resample_weights(12, 300, 11)
    diffs = [(w[i] @ b - w[i] @ a) / 12 for i in range(300)]
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (res.diff_lo[0, 1, 0], res.diff_hi[0, 1, 0]) == pytest.approx((lo, hi))


def test_run_intervals_bracket_the_estimates(runs: RunFactory) -> None:
    def noisy(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
        return min(max(true_index(family) + (family * 7 + len(decoder)) % 5 - 2, 0), 99)

    a = analyze_run(load_run(runs.affine(families=range(12), predict=noisy)), n_boot=400)
    b, point = a.bootstrap, a.metrics.point
    finite = np.isfinite(b.lo)
    assert finite.any()
    assert np.all(b.lo[finite] <= point[finite] + 1e-9)
    assert np.all(point[finite] <= b.hi[finite] + 1e-9)
    assert b.n_families == 12 and b.reference == "direct"
    d = a.design.decoders.index("direct")
    assert np.all(np.nan_to_num(b.diff_lo[:, d]) == 0) and np.all(np.nan_to_num(b.diff[:, d]) == 0)


def test_no_replicates_gives_no_intervals(runs: RunFactory) -> None:
    a = analyze_run(load_run(runs.affine(families=range(2))), n_boot=0)
    assert np.isnan(a.bootstrap.lo).all() and np.isnan(a.bootstrap.diff_lo).all()


def test_fewer_than_five_families_give_no_interval(runs: RunFactory) -> None:
    four = analyze_run(load_run(runs.affine("four", families=range(4))), n_boot=200)
    assert np.isnan(four.bootstrap.lo).all() and np.isnan(four.bootstrap.diff_lo).all()
    assert four.bootstrap.refusal is not None
    assert four.bootstrap.refusal.startswith("only 4 families to resample (fewer than 5)")
    assert np.isfinite(four.bootstrap.diff).any()  # the point differences are still shown
    five = analyze_run(load_run(runs.affine("five", families=range(5))), n_boot=200)
    assert five.bootstrap.refusal is None and np.isfinite(five.bootstrap.lo).any()
    assert (
        analyze_run(load_run(runs.affine("none", families=range(2))), n_boot=0).bootstrap.refusal
        is None
    )


def test_domain_intervals_are_each_domains_own_mape_interval(runs: RunFactory) -> None:
    """Issue 42: the by-domain MAPE intervals resample families as the main table does, on
    the same resamples: each is the MAPE interval of the run cut to that domain's outputs."""
    from analysis.statistics.metrics import family_totals

    def noisy(family: int, domain: str, condition: str, order: str, decoder: str) -> int:
        return min(max(true_index(family) + (family * 7 + len(decoder + domain)) % 5 - 2, 0), 99)

    run = load_run(runs.affine(families=range(12), predict=noisy))
    a = analyze_run(run, n_boot=400, seed=7)
    assert a.bootstrap.domain_lo is not None and a.bootstrap.domain_hi is not None
    out, mape = run.outputs, STATISTICS.index("mape")
    for m, domain in enumerate(a.design.domains):
        rows = np.flatnonzero(out.ok & (out.domain == out.domain_names.index(domain)))
        totals = family_totals(out, a.design, rows=rows)
        alone = family_bootstrap(totals, n_boot=400, seed=7)
        assert np.array_equal(a.bootstrap.domain_lo[:, :, m], alone.lo[mape], equal_nan=True)
        assert np.array_equal(a.bootstrap.domain_hi[:, :, m], alone.hi[mape], equal_nan=True)
        assert np.allclose(a.metrics.mape_by_domain[:, :, m], totals.point()[mape])
    assert np.isfinite(a.bootstrap.domain_lo).any()
