"""Beams against greedy on the sim: paired intervals over seeds, questions counted (issue 42)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.backends.sim import SimParams
from simstudy.beams import PAIRS, beam_sweep, questions_asked
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
    assert "SIMULATED" in out and "off_range 0.5; 2 seeds" in out
    assert all(f"| {greedy} |" in out for greedy, _ in PAIRS)
    assert cli("sim-vs-paper", "--beams", "1") == 2
