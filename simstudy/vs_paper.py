"""The sim beside the paper: its profiles on the paper's two suites, and which figures lead."""

from __future__ import annotations

from dataclasses import replace

from harness.backends.sim import SimParams
from harness.protocol.registry import load_suite
from simstudy.profile import Profile, profile_of_records
from simstudy.simulate import simulate

_TREES = ("tree2", "tree4", "tree10")
# The table: pooled arithmetic figures, then the domain where trees and direct reverse.
HEADLINE = (
    *(f"mape/{d}/arithmetic" for d in ("direct", *_TREES)),
    *(f"nmae/{d}/arithmetic" for d in ("direct", *_TREES)),
    *(f"ordering_gap/{d}/arithmetic" for d in ("direct", *_TREES)),
    *(f"affine_gap/{d}/arithmetic" for d in ("direct", *_TREES)),
    "mape/direct/arithmetic/x10000",
    "mape/tree10/arithmetic/x10000",
    "mape/direct/arithmetic/minus50",
    "mape/tree10/arithmetic/minus50",
    "mape/digits/arithmetic",
    "mape/bits/arithmetic",
    "mape/direct/provided",
    "mape/tree10/provided",
)


EXPLORATORY_SEEDS = 12  # 12 questions: one seed is one draw of a tiny suite; show the mean


def sim_profiles(params: SimParams) -> tuple[Profile, Profile]:
    """The sim's profiles on the affine suite (at ``params.seed``) and on the exploratory
    suite (the mean over EXPLORATORY_SEEDS seeds from it), in process, seconds."""
    affine = profile_of_records(simulate(load_suite("affine"), params), "affine")
    suite = load_suite("exploratory")
    runs = [
        profile_of_records(simulate(suite, replace(params, seed=params.seed + i)), "exploratory")
        for i in range(EXPLORATORY_SEEDS)
    ]
    keys = set.intersection(*(set(r) for r in runs))
    exploratory = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0] if k in keys}
    return affine, exploratory
