"""Beams against greedy on the sim: paired intervals over seeds, questions counted (issue 42)."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.backends.sim import SimParams
from simstudy.beams import PAIRS, beam_sweep, questions_asked, voted
from simstudy.intervals import over_seeds
from tests.runhelpers import cli

TINY = {"per_operator": "2"}  # 8 families: enough for an interval (5 or more)


def test_a_beam_step_counts_every_branch_it_asks() -> None:
    beam = {"trace": [{"asked": [["0", "1"], ["1", "2"]]}, {"asked": [["0", "1"]]}]}
    assert questions_asked(beam) == 3
    assert questions_asked({"trace": [{"choice": "1"}, {"choice": "0"}]}) == 2


def test_each_beam_has_a_paired_interval_per_seed_and_asks_more() -> None:
    runs = beam_sweep(SimParams(), range(2), TINY)
    for run in runs:
        for greedy, _ in PAIRS:
            iv = run.difference[greedy]
            assert iv.lo <= iv.delta <= iv.hi
            assert run.questions[greedy] > 1  # same requests, more questions
            # Equal questions, both ways round: the greedy side asked R times, R the beam's
            # questions over the tree's rounded down (it asks fewer) and up (it asks more).
            fewer, more = run.fewer[greedy], run.more[greedy]
            assert more.repeats == fewer.repeats + 1 >= 2
            assert fewer.questions >= 1 >= more.questions
            for iv in (fewer.difference, more.difference):
                assert iv.lo <= iv.delta <= iv.hi and iv != run.difference[greedy]


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=5), st.integers(1, 5))
def test_a_voted_read_out_is_the_median_of_the_first_r(values: list[int], r: int) -> None:
    records = [
        {
            "job": f"s/c/a/asc/r{k}",
            "decoder": "tree2",
            "repeat": k,
            "status": "ok",
            "value": str(v),
        }
        for k, v in enumerate(values)
    ]
    (one,) = voted(records, {"tree2": r})
    first = sorted(Fraction(v) for v in values[:r])
    mid = (first[(len(first) - 1) // 2] + first[len(first) // 2]) / 2
    assert Fraction(one["value"]) == mid and one["job"] == "s/c/a/asc/r0"


def test_the_mean_over_seeds_has_a_t_interval() -> None:
    mean, lo, hi = over_seeds([1.0, 2.0, 3.0])  # mean 2, s.d. 1, t(0.975, 2) = 4.303
    assert mean == 2.0 and hi - 2.0 == pytest.approx(4.303 / 3**0.5, abs=1e-3)
    assert lo == pytest.approx(4.0 - hi)


def test_off_range_moves_the_beams() -> None:
    # The knob decides what an off-path question returns: 0 and 1 give other differences.
    at = {
        off: beam_sweep(replace(SimParams(), off_range=off), range(1), TINY)[0]
        for off in (0.0, 1.0)
    }
    assert at[0.0].difference["tree2"].delta != at[1.0].difference["tree2"].delta


def test_sim_vs_paper_beams_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("sim-vs-paper", "--beams", "2", "--param", "per_operator=2") == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out and "off_range 0.5; seeds 0-1" in out
    for greedy, _ in PAIRS:
        assert f"| {greedy} | requests |" in out
        assert f"| {greedy} | questions, greedy x" in out and "(fewer)" in out and "(more)" in out
    assert cli("sim-vs-paper", "--beams", "1") == 2
