"""The sim's claims checked over seeds: every leg of the sign pattern, every cell's spread.

One seed of the sim is one draw: a claim the docs make about the sim ("trees have a lower
NMAE than direct choice") is a claim about the share of seeds it holds at. ``sweep`` runs
the affine suite (and the exploratory suite, twelve seeds per sweep seed, as
``sim-vs-paper`` shows it) at each seed, and ``summarise`` gives each headline cell's mean,
spread and share of seeds within 25% of the paper, each leg's share of seeds, and each
tree's MAPE against direct choice with compare's paired interval. Everything is simulated.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from analysis.statistics.metrics import STATISTICS
from analysis.statistics.paired import common_with_reference
from analysis.statistics.paired_test import PairedDifference, paired_difference
from harness.backends.sim import SimParams
from harness.protocol.cases import Suite
from harness.protocol.registry import load_suite
from simstudy.intervals import over_seeds, share_interval
from simstudy.paper import affine_profile
from simstudy.profile import Profile, design_for, outputs_of, profile_of
from simstudy.simulate import simulate
from simstudy.vs_paper import EXPLORATORY_SEEDS, HEADLINE

TREES = ("tree2", "tree4", "tree10")
BETWEEN = ("tree4 - tree2", "tree10 - tree4")  # neighbouring K, the later minus the earlier
NEAR = 0.25  # "near the paper": within 25% of its value
HOLDS = 0.9  # a leg the docs may state as the sim's: it holds at 90% of seeds or more
SWEEP_REPLICATES = 2000  # > 0: the tree-vs-direct interval is asked for (compare's t draws none)
# The pooled arithmetic cells of the headline: MAPE, NMAE, ordering and affine gaps.
POOLED = tuple(k for k in HEADLINE if k.count("/") == 2 and k.endswith("/arithmetic"))[:16]


@dataclass(frozen=True)
class Interval:
    """A paired difference (tree minus direct, MAPE points) with its 95% interval."""

    delta: float
    lo: float
    hi: float

    @property
    def excludes_zero(self) -> bool:
        """The interval lies wholly on one side of 0."""
        return self.lo > 0 or self.hi < 0


@dataclass(frozen=True)
class SeedFigures:
    """One seed's figures: the affine and exploratory profiles, each tree's MAPE against
    direct choice (arithmetic) with its interval."""

    seed: int
    affine: Profile
    exploratory: Profile
    tree_vs_direct: Mapping[str, Interval]
    # Neighbouring trees paired ("tree4 - tree2", "tree10 - tree4"): does K matter?
    between_trees: Mapping[str, Interval] = field(default_factory=dict)


def _gap_leg(gap: str, tree: str) -> Callable[[SeedFigures], bool]:
    return lambda s: s.affine[f"{gap}/{tree}/arithmetic"] < s.affine[f"{gap}/direct/arithmetic"]


def _nmae_leg(tree: str) -> Callable[[SeedFigures], bool]:
    return lambda s: s.affine[f"nmae/{tree}/arithmetic"] < s.affine["nmae/direct/arithmetic"]


def _paper_interval_leg(tree: str) -> Callable[[SeedFigures], bool]:
    return lambda s: not s.tree_vs_direct[tree].excludes_zero


def _between_leg(pair: str) -> Callable[[SeedFigures], bool]:
    return lambda s: s.between_trees[pair].excludes_zero


def _mapes(s: SeedFigures) -> list[float]:
    return [s.affine[f"mape/{t}/arithmetic"] for t in TREES]


# Every leg of the sign pattern was made to hold: each hazard was tuned until it did.
TUNED = "built in: the hazards were tuned to it"


@dataclass(frozen=True)
class Leg:
    """One claim about the sim, tested at one seed; ``pattern``: a leg of the paper's sign
    pattern, which the docs state as the sim's (and ``make test`` checks)."""

    name: str
    test: Callable[[SeedFigures], bool]
    pattern: bool = True
    built_in: str = TUNED  # why the leg holds by construction ("": a finding)


LEGS: tuple[Leg, ...] = (
    *(Leg(f"NMAE {t} < direct", _nmae_leg(t)) for t in TREES),
    *(Leg(f"order gap {t} < direct", _gap_leg("ordering_gap", t)) for t in TREES),
    *(Leg(f"affine gap {t} < direct", _gap_leg("affine_gap", t)) for t in TREES),
    Leg(
        "MAPE tree10 > direct on x10000",
        lambda s: s.affine["mape/tree10/arithmetic/x10000"] > s.affine["mape/direct/arithmetic/x10000"],
        built_in="built in: `long`, families 4, 22, 30 at ~900% APE at every seed",
    ),
    Leg(
        f"exploratory MAPE tree4 < direct (mean of {EXPLORATORY_SEEDS} seeds)",
        lambda s: s.exploratory["mape/tree4/arithmetic"] < s.exploratory["mape/direct/arithmetic"],
    ),
    # The paper's own findings beyond the signs: checked, not claimed for the sim. "K matters"
    # was a leg of the pattern that could not fail (three noisy means differing at two
    # decimals); as paired intervals it holds at a few seeds only, so it is no leg of it.
    *(
        Leg(f"MAPE {pair} interval excludes 0 (K matters)", _between_leg(pair), False, "")
        for pair in BETWEEN
    ),
    Leg("MAPE tree2 < tree4 < tree10 (the paper's order)", lambda s: _mapes(s) == sorted(_mapes(s)), False, ""),
    *(
        Leg(f"MAPE {t} - direct interval holds 0 (as the paper's)", _paper_interval_leg(t), False, "")
        for t in TREES
    ),
)  # fmt: skip


def seed_figures(
    affine: Suite, exploratory: Suite, params: SimParams, explored: int = EXPLORATORY_SEEDS
) -> SeedFigures:
    """The sim's figures at ``params.seed``: the affine suite at that seed, the exploratory
    suite's mean over ``explored`` seeds of its own block (seed * EXPLORATORY_SEEDS on)."""
    outputs = outputs_of(simulate(affine, params))
    profile = profile_of(outputs, "affine")
    design = design_for(outputs, "affine")
    paired = common_with_reference(outputs, design, "direct")
    assert paired is not None
    test = paired_difference(paired, n_boot=SWEEP_REPLICATES)
    s, c = STATISTICS.index("mape"), design.conditions.index("arithmetic")
    vs = _intervals(test, design.decoders, s, c, TREES)
    between: dict[str, Interval] = {}
    for pair in BETWEEN:
        later, earlier = pair.split(" - ")
        if later in design.decoders and earlier in design.decoders:
            against = common_with_reference(outputs, design, earlier)
            assert against is not None
            test = paired_difference(against, n_boot=SWEEP_REPLICATES)
            between[pair] = _intervals(test, design.decoders, s, c, (later,))[later]
    first = params.seed * EXPLORATORY_SEEDS
    runs = [
        profile_of(outputs_of(simulate(exploratory, replace(params, seed=first + i))), None)
        for i in range(explored)
    ]
    keys = set.intersection(*(set(r) for r in runs))
    mean = {k: statistics.fmean(r[k] for r in runs) for k in sorted(keys)}
    return SeedFigures(params.seed, profile, mean, vs, between)


def _intervals(
    test: PairedDifference, decoders: Sequence[str], s: int, c: int, names: Sequence[str]
) -> dict[str, Interval]:
    """Each of ``names``' paired difference (MAPE, arithmetic) with its interval."""
    return {
        t: Interval(float(test.delta[s, d, c]), float(test.lo[s, d, c]), float(test.hi[s, d, c]))
        for t in names
        if t in decoders
        for d in (decoders.index(t),)
    }


def sweep(
    params: SimParams,
    seeds: Sequence[int],
    affine_params: Mapping[str, str] | None = None,
    progress: Callable[[SeedFigures], None] | None = None,
    explored: int = EXPLORATORY_SEEDS,
) -> list[SeedFigures]:
    """``seed_figures`` at each of ``seeds`` (``affine_params``: a smaller affine suite;
    ``explored``: exploratory seeds averaged per sweep seed)."""
    affine = load_suite("affine", params=dict(affine_params or {}))
    exploratory = load_suite("exploratory")
    out = []
    for seed in seeds:
        figures = seed_figures(affine, exploratory, replace(params, seed=seed), explored)
        out.append(figures)
        if progress is not None:
            progress(figures)
    return out


@dataclass(frozen=True)
class CellSpread:
    """One headline cell over the seeds: mean, s.d., range, and the share within 25% of the paper."""

    key: str
    paper: float
    mean: float
    sd: float
    low: float
    high: float
    near: float


def cell_spreads(runs: Sequence[SeedFigures], keys: Sequence[str] = HEADLINE) -> list[CellSpread]:
    """Each cell of ``keys`` over ``runs`` beside the paper's value."""
    paper = affine_profile()
    out = []
    for key in keys:
        values = [r.affine[key] for r in runs if key in r.affine]
        if not values:
            continue
        want = paper[key]
        near = sum(abs(v - want) <= NEAR * want for v in values) / len(values)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        out.append(
            CellSpread(key, want, statistics.fmean(values), sd, min(values), max(values), near)
        )
    return out


def near_counts(runs: Sequence[SeedFigures]) -> list[int]:
    """Per seed: how many of the 16 pooled arithmetic cells lie within 25% of the paper."""
    paper = affine_profile()
    return [sum(abs(r.affine[k] - paper[k]) <= NEAR * paper[k] for k in POOLED) for r in runs]


def leg_shares(runs: Sequence[SeedFigures]) -> list[tuple[Leg, float]]:
    """Each leg of LEGS and the share of ``runs`` it holds at."""
    return [(leg, sum(bool(leg.test(r)) for r in runs) / len(runs)) for leg in LEGS]


def sweep_tables(runs: Sequence[SeedFigures]) -> list[str]:
    """The sweep as Markdown: legs' shares, tree-vs-direct intervals, the cells' spread."""
    n = len(runs)
    lines = [f"## The sign pattern, leg by leg ({n} seeds; SIMULATED)", ""]
    lines += ["| Leg | kind | share of seeds [95% interval] | holds at >= 90% |",
              "| :-- | :-- | --: | :-- |"]  # fmt: skip
    for leg, share in leg_shares(runs):
        kind = "sign pattern" if leg.pattern else "paper's finding"
        kind += f" ({leg.built_in})" if leg.built_in else ""
        hits = round(share * n)
        lo, hi = share_interval(hits, n)
        lines.append(
            f"| {leg.name} | {kind} | {share:.2f} ({hits} of {n}) [{lo:.2f}, {hi:.2f}] | "
            f"{'yes' if share >= HOLDS else 'NO'} |"
        )
    lines += [
        "",
        "The share's interval is exact (Clopper-Pearson) over the seeds; 'holds' reads the "
        "share itself, not its interval.",
    ]
    lines += [
        "",
        f"## MAPE, tree minus direct choice, arithmetic (pp, 95% family interval; {n} seeds)",
        "",
    ]
    lines += ["| Tree | mean difference [95% over seeds] | seeds with interval below 0 | above 0 "
              "| holding 0 |", "| :-- | --: | --: | --: | --: |"]  # fmt: skip
    for t in TREES:
        ivs = [r.tree_vs_direct[t] for r in runs if t in r.tree_vs_direct]
        lines.append(_difference_row(t, ivs))
    lines += [
        "",
        f"## MAPE between neighbouring trees, arithmetic (pp, 95% family interval; {n} seeds)",
        "",
        "Does K matter? The later tree minus the earlier, paired over their common jobs.",
        "",
        "| Pair | mean difference [95% over seeds] | seeds with interval below 0 | above 0 "
        "| holding 0 |",
        "| :-- | --: | --: | --: | --: |",
    ]
    for pair in BETWEEN:
        ivs = [r.between_trees[pair] for r in runs if pair in r.between_trees]
        if ivs:
            lines.append(_difference_row(pair, ivs))
    counts = near_counts(runs)
    lines += ["", f"## Each cell over {n} seeds beside the paper (SIMULATED)", ""]
    lines.append(
        f"Pooled arithmetic cells within 25% of the paper, per seed: mean "
        f"{statistics.fmean(counts):.1f} of {len(POOLED)}, range {min(counts)}-{max(counts)}."
    )
    lines += ["", "| Figure (%) | paper | sim mean | s.d. | min | max | share within 25% |",
              "| :-- | --: | --: | --: | --: | --: | --: |"]  # fmt: skip
    for c in cell_spreads(runs):
        label = c.key.replace("/", " ").replace("ordering_gap", "order gap").replace("_", " ")
        lines.append(
            f"| {label} | {c.paper:.2f} | {c.mean:.2f} | {c.sd:.2f} | {c.low:.2f} | "
            f"{c.high:.2f} | {c.near:.2f} |"
        )
    return lines


def _difference_row(name: str, ivs: Sequence[Interval]) -> str:
    """One row: the mean of the per-seed differences with its t interval over the seeds,
    and how many seeds' own paired intervals lie below, above or around 0."""
    below, above = sum(iv.hi < 0 for iv in ivs), sum(iv.lo > 0 for iv in ivs)
    mean, lo, hi = over_seeds([iv.delta for iv in ivs])
    return (
        f"| {name} | {mean:+.2f} [{lo:+.2f}, {hi:+.2f}] | {below} | {above} | "
        f"{len(ivs) - below - above} |"
    )
