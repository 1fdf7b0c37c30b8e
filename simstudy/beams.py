"""Beams against their greedy trees on the sim, as paired differences over seeds (issue 42).

A width-4 beam answers the same jobs in the same number of requests as its greedy tree but
asks more questions, and what its off-path questions return is set by the sim's
``off_range`` knob (fitted to nothing): the difference is the knob's, not a finding. Per
seed, two comparisons, each the beam's MAPE minus the greedy side's (arithmetic) over their
common jobs with compare's paired 95% family interval:

- equal requests: the greedy tree as it runs (the same jobs and rounds);
- equal questions: the greedy tree asked each job R times, with fresh draws for a repeated
  question (``fresh_repeats``), its R read-outs combined by their median (a vote that needs
  no new decoder; for R = 2 the mean). The beam asks a non-whole multiple of the tree's
  questions (1.8-2.9), so R is taken both ways, rounded down (the greedy side asks fewer,
  at least once) and up (it asks more): equal questions lie between the two, and a sign
  both share is the comparison's. The sim reads a job's state once, so repeats average out
  question noise only, not a misread state.

Over seeds: the mean difference with a Student t 95% interval over the per-seed differences
(seeds are independent draws of the whole suite). All SIMULATED.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from analysis.statistics.metrics import STATISTICS
from analysis.statistics.paired import common_with_reference
from analysis.statistics.paired_test import paired_difference
from harness.backends.sim import SimParams
from harness.protocol.registry import load_suite
from simstudy.intervals import over_seeds
from simstudy.profile import design_for, outputs_of
from simstudy.simulate import simulate
from simstudy.sweep import SWEEP_REPLICATES, Interval

PAIRS = (("tree2", "tree2_beam4"), ("tree4", "tree4_beam4"), ("tree10", "tree10_beam4"))


@dataclass(frozen=True)
class Budgeted:
    """The beam against its greedy tree asked each job ``repeats`` times (median read-out):
    beam minus that side (MAPE pp) and the beam's questions over that side's."""

    repeats: int
    difference: Interval
    questions: float


@dataclass(frozen=True)
class BeamSeed:
    """One seed, per greedy tree: beam minus greedy (MAPE pp) at equal requests and
    questions beam / greedy; and against the tree asked R times, R rounded down
    (``fewer``) and up (``more``) from that ratio (equal questions)."""

    seed: int
    difference: Mapping[str, Interval]
    questions: Mapping[str, float]
    fewer: Mapping[str, Budgeted]
    more: Mapping[str, Budgeted]


def questions_asked(record: Mapping[str, Any]) -> int:
    """Questions one output asked: a beam's step asks every kept branch, a tree's one."""
    return sum(len(step.get("asked", [None])) for step in record.get("trace", ()))


def _asked(records: Iterable[Mapping[str, Any]], repeats: Mapping[str, int]) -> dict[str, int]:
    """Questions per decoder over the arithmetic outputs of repeats below ``repeats``
    (a decoder not named there: repeat 0 only)."""
    asked: dict[str, int] = {}
    for r in records:
        if r.get("condition") == "arithmetic" and r["repeat"] < repeats.get(r["decoder"], 1):
            asked[r["decoder"]] = asked.get(r["decoder"], 0) + questions_asked(r)
    return asked


def voted(records: Iterable[Mapping[str, Any]], repeats: Mapping[str, int]) -> list[dict[str, Any]]:
    """One record per job of each decoder in ``repeats``: its first repeat's, the value
    replaced by the median of its first ``repeats[decoder]`` ok read-outs (failed when none)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in records:
        if r["decoder"] in repeats and r["repeat"] < repeats[r["decoder"]]:
            base = str(r["job"]).rsplit("/r", 1)[0]
            groups.setdefault((r["decoder"], base), []).append(r)
    out = []
    for group in groups.values():
        group.sort(key=lambda r: r["repeat"])
        values = sorted(Fraction(str(r["value"])) for r in group if r["status"] == "ok")
        first = dict(group[0])
        if values:
            mid = statistics.median(values)
            exact = Decimal(mid.numerator) / Decimal(mid.denominator)
            first.update(value=format(exact, "f"), status="ok")
        else:
            first.update(value=None, status="failed")
        out.append(first)
    return out


def _beam_minus_greedy(records: list[Mapping[str, Any]]) -> dict[str, Interval]:
    """Per greedy tree, its beam's MAPE minus its own (arithmetic) with the paired interval."""
    outputs = outputs_of(records)
    design = design_for(outputs, "affine")
    s, c = STATISTICS.index("mape"), design.conditions.index("arithmetic")
    difference = {}
    for greedy, beam in PAIRS:
        paired = common_with_reference(outputs, design, greedy)
        assert paired is not None
        test = paired_difference(paired, n_boot=SWEEP_REPLICATES)
        d = design.decoders.index(beam)
        difference[greedy] = Interval(
            float(test.delta[s, d, c]), float(test.lo[s, d, c]), float(test.hi[s, d, c])
        )
    return difference


def beam_seed(params: SimParams, affine: Mapping[str, str]) -> BeamSeed:
    """The beams against their greedy trees at ``params.seed`` on the affine suite, at
    equal requests and (both ways round) at equal questions."""
    decoders = tuple(d for pair in PAIRS for d in pair)
    suite = load_suite("affine", params=dict(affine), decoders=decoders)
    records = simulate(suite, params)
    asked = _asked(records, {})
    ratio = {greedy: asked[beam] / asked[greedy] for greedy, beam in PAIRS}
    # The greedy trees again, each job repeated, every repeated question a fresh draw.
    trees = load_suite("affine", params=dict(affine), decoders=tuple(ratio))
    most = max(math.ceil(r) for r in ratio.values())
    again = simulate(replace(trees, repeats=most), replace(params, fresh_repeats=1.0))
    beams = [r for r in records if r["decoder"] not in ratio]

    def budgeted(repeats: Mapping[str, int]) -> dict[str, Budgeted]:
        spent = _asked(again, repeats)
        difference = _beam_minus_greedy([*beams, *voted(again, repeats)])
        return {
            greedy: Budgeted(repeats[greedy], difference[greedy], asked[beam] / spent[greedy])
            for greedy, beam in PAIRS
        }

    return BeamSeed(
        params.seed,
        _beam_minus_greedy(records),
        ratio,
        budgeted({g: max(1, math.floor(r)) for g, r in ratio.items()}),
        budgeted({g: math.ceil(r) for g, r in ratio.items()}),
    )


def beam_sweep(
    params: SimParams, seeds: Sequence[int], affine: Mapping[str, str]
) -> list[BeamSeed]:
    """``beam_seed`` at each of ``seeds``."""
    return [beam_seed(replace(params, seed=seed), affine) for seed in seeds]


def beams_table(runs: Sequence[BeamSeed], off_range: float) -> list[str]:
    """The beams over seeds as Markdown: per greedy tree and comparison, the mean difference
    with its interval over seeds, the seeds whose own interval is below, above or holding 0,
    and the questions each side asks."""
    n = len(runs)
    lines = [
        f"## Width-4 beams minus greedy trees, MAPE arithmetic (pp; off_range {off_range:g}; "
        f"seeds {runs[0].seed}-{runs[-1].seed}; SIMULATED)",
        "",
        "Decided by `off_range` (what an off-path question returns), fitted to nothing. "
        "Equal requests: the greedy tree as it runs (the same jobs and rounds; the beam asks "
        "more questions). Equal questions: the greedy tree asked each job R times (fresh "
        "draws), its read-outs' median, R the beam's questions over the tree's rounded down "
        "(fewer) and up (more): equal questions lie between the two rows. "
        f"Mean: over the {n} seeds, with a Student t 95% interval over them; the seed counts "
        "use each seed's paired 95% family interval.",
        "",
        "| Greedy tree | at equal | beam minus greedy, mean [95% over seeds] | seeds: interval "
        "below 0 | above 0 | holding 0 | questions, beam / greedy side |",
        "| :-- | :-- | --: | --: | --: | --: | --: |",
    ]
    for greedy, _ in PAIRS:
        rows = [
            ("requests", [r.difference[greedy] for r in runs], [r.questions[greedy] for r in runs])
        ]
        for way, side in (
            ("fewer", [r.fewer[greedy] for r in runs]),
            ("more", [r.more[greedy] for r in runs]),
        ):
            repeats = _range([b.repeats for b in side], "d")
            rows.append(
                (
                    f"questions, greedy x{repeats} ({way})",
                    [b.difference for b in side],
                    [b.questions for b in side],
                )
            )
        for label, ivs, asked in rows:
            below, above = sum(iv.hi < 0 for iv in ivs), sum(iv.lo > 0 for iv in ivs)
            mean, lo, hi = over_seeds([iv.delta for iv in ivs])
            lines.append(
                f"| {greedy} | {label} | {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] | "
                f"{below} | {above} | {n - below - above} | {_range(asked, '.2f')} |"
            )
    return lines


def _range(values: Sequence[float], spec: str) -> str:
    """``min-max`` of ``values`` (one figure when they are equal)."""
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}-{hi}"
