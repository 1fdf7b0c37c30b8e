"""The pooled calibration row counts each distinct question once, and ECE has an interval."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import analyze_run, load_run
from analysis.loading.probabilities.answers import load_answers, order_pair
from analysis.statistics.calibration import ece_interval, reliability
from tests.runhelpers import cli


def test_the_pooled_row_counts_a_question_asked_by_three_decoders_once(tmp_path) -> None:
    folder = tmp_path / "run"
    decoders = "tree10,tree10_mean,tree10_median"
    assert cli("run", "--suite", "affine", "--param", "per_operator=2", "--decoders", decoders,
               "--run", str(folder), "--no-progress") == 0  # fmt: skip
    run = load_run(folder)
    p = analyze_run(
        run, 0, answers=load_answers(folder, order_pair(run.manifest.orders))
    ).probabilities
    assert p is not None
    for pooled in p.pooled:
        per_decoder = [r.n for r in p.calibration if r.condition == pooled.condition]
        assert len(per_decoder) == 3 and len(set(per_decoder)) == 1  # the same questions
        assert pooled.n == per_decoder[0]  # once, not three times
        lo, hi = pooled.ece_interval
        assert 0.0 <= lo <= hi <= 1.0


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 30), st.integers(0, 2**31))
def test_ece_interval_brackets_resampled_eces(families: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = families * 8
    p = rng.uniform(0, 1, n)
    right = rng.uniform(0, 1, n) < p  # calibrated by construction
    family = np.repeat(np.arange(families), 8)
    lo, hi = ece_interval(p, right, family, n_boot=400, seed=1)
    assert 0.0 <= lo <= hi <= 1.0
    # One resample that draws every family once is the data itself: its ECE is a replicate's.
    assert reliability(p, right).ece <= 1.0


def test_too_few_families_get_no_interval() -> None:
    p = np.array([0.9, 0.8, 0.7])
    lo, hi = ece_interval(p, np.array([True, True, False]), np.array([0, 1, 2]))
    assert np.isnan(lo) and np.isnan(hi)
