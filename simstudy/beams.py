"""Beams against their greedy trees on the sim, as paired differences over seeds (issue 42).

A width-4 beam answers the same jobs in the same number of requests as its greedy tree but
asks more questions, and what its off-path questions return is set by the sim's
``off_range`` knob (fitted to nothing): the difference is the knob's, not a finding. Per
seed: the beam's MAPE minus the greedy tree's (arithmetic) over their common jobs with
compare's paired 95% family interval, and the ratio of questions asked. All SIMULATED.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from analysis.statistics.metrics import STATISTICS
from analysis.statistics.paired import common_with_reference
from analysis.statistics.paired_test import paired_difference
from harness.backends.sim import SimParams
from harness.protocol.registry import load_suite
from simstudy.profile import design_for, outputs_of
from simstudy.simulate import simulate
from simstudy.sweep import SWEEP_REPLICATES, Interval

PAIRS = (("tree2", "tree2_beam4"), ("tree4", "tree4_beam4"), ("tree10", "tree10_beam4"))


@dataclass(frozen=True)
class BeamSeed:
    """One seed: per greedy tree, beam minus greedy (MAPE pp) and questions beam/greedy."""

    seed: int
    difference: Mapping[str, Interval]
    questions: Mapping[str, float]


def questions_asked(record: Mapping[str, Any]) -> int:
    """Questions one output asked: a beam's step asks every kept branch, a tree's one."""
    return sum(len(step.get("asked", [None])) for step in record.get("trace", ()))


def beam_seed(params: SimParams, affine: Mapping[str, str]) -> BeamSeed:
    """The beams against their greedy trees at ``params.seed`` on the affine suite."""
    decoders = tuple(d for pair in PAIRS for d in pair)
    suite = load_suite("affine", params=dict(affine), decoders=decoders)
    records = simulate(suite, params)
    asked: dict[str, int] = {}
    for r in records:
        if r.get("condition") == "arithmetic":
            asked[r["decoder"]] = asked.get(r["decoder"], 0) + questions_asked(r)
    outputs = outputs_of(records)
    design = design_for(outputs, "affine")
    s, c = STATISTICS.index("mape"), design.conditions.index("arithmetic")
    difference, ratio = {}, {}
    for greedy, beam in PAIRS:
        paired = common_with_reference(outputs, design, greedy)
        assert paired is not None
        test = paired_difference(paired, n_boot=SWEEP_REPLICATES)
        d = design.decoders.index(beam)
        difference[greedy] = Interval(
            float(test.delta[s, d, c]), float(test.lo[s, d, c]), float(test.hi[s, d, c])
        )
        ratio[greedy] = asked[beam] / asked[greedy]
    return BeamSeed(params.seed, difference, ratio)


def beam_sweep(
    params: SimParams, seeds: Sequence[int], affine: Mapping[str, str]
) -> list[BeamSeed]:
    """``beam_seed`` at each of ``seeds``."""
    return [beam_seed(replace(params, seed=seed), affine) for seed in seeds]


def beams_table(runs: Sequence[BeamSeed], off_range: float) -> list[str]:
    """The beams over seeds as Markdown: mean difference, seeds whose interval is below,
    above or holding 0, and the questions ratio (equal requests: same jobs and rounds)."""
    n = len(runs)
    lines = [
        f"## Width-4 beams minus greedy trees, MAPE arithmetic (pp; off_range {off_range:g}; "
        f"{n} seeds; SIMULATED)",
        "",
        "Equal requests (the same jobs, the same rounds); the beam asks more questions. "
        "Decided by `off_range` (what an off-path question returns), fitted to nothing.",
        "",
        "| Greedy tree | beam minus greedy (mean) | seeds: interval below 0 | above 0 | holding 0 "
        "| questions, beam / greedy |",
        "| :-- | --: | --: | --: | --: | --: |",
    ]
    for greedy, _ in PAIRS:
        ivs = [r.difference[greedy] for r in runs]
        below, above = sum(iv.hi < 0 for iv in ivs), sum(iv.lo > 0 for iv in ivs)
        ratios = [r.questions[greedy] for r in runs]
        lines.append(
            f"| {greedy} | {statistics.fmean(iv.delta for iv in ivs):+.2f} | {below} | {above} "
            f"| {n - below - above} | {min(ratios):.2f}-{max(ratios):.2f} |"
        )
    return lines
