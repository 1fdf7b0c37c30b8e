"""How many families a suite needs: simulated replicate comparisons, judged as ``compare``.

Each arm (the baseline spec, each alternative) is simulated in process over a pool of
families: the suite's families at several sim seeds, each (seed, family) one unit. A
replicate draws n units, pairs the two arms on them (the same questions, each arm with
its own draws, as two models answer the same suite), and judges every decoder x
condition cell with the comparison's own test: the verdict test's p-value of "difference 0"
(``analysis.statistics.family_test``'s default: the cluster bootstrap-t over families,
a cell called only where the cluster-robust t calls too),
Holm-corrected over the suite's cells, and the verdict at alpha (``decisions.verdict``). Power is the share of
replicates whose verdict on the focus cell has the sign of the pool's difference; the A/A
row (baseline against itself at other seeds) gives the share of replicates calling any
cell, the family-wise false-positive rate. Everything here is simulated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from analysis.statistics.comparison import HIGHER_IS_BETTER
from analysis.statistics.decisions import Verdict, verdict
from analysis.statistics.family_test import DEFAULT_METHOD, Method, family_p_values
from analysis.statistics.metrics import STATISTICS, family_totals
from analysis.statistics.multiple import holm
from harness.backends.sim import SimParams
from harness.protocol.cases import Suite
from simstudy.profile import design_for, outputs_of
from simstudy.simulate import simulate

ALPHA = 0.05
POWER_SEED = 20260923  # the paper's seed, for the replicates' draws of units


@dataclass(frozen=True)
class Pool:
    """One arm's per-unit sums and counts of one statistic, (units, decoders, conditions)."""

    sums: np.ndarray
    counts: np.ndarray
    decoders: tuple[str, ...]
    conditions: tuple[str, ...]


@dataclass(frozen=True)
class PowerRow:
    """One alternative: its pool difference on the focus cell and its power per n."""

    label: str
    effect: float  # alternative minus baseline on the focus cell, over the whole pool
    power: dict[int, float]  # n families -> share of replicates calling the focus cell
    any_cell: dict[int, float]  # n families -> share calling at least one cell


def pool(suite: Suite, params: SimParams, seeds: Sequence[int], metric: str) -> Pool:
    """The arm ``params`` over ``suite`` at each of ``seeds``, its units stacked."""
    s = STATISTICS.index(metric)
    sums, counts, design = [], [], None
    for seed in seeds:
        outputs = outputs_of(simulate(suite, replace(params, seed=seed)))
        design = design or design_for(outputs, suite.name)
        totals = family_totals(outputs, design)
        sums.append(totals.sums[:, s])
        counts.append(totals.counts[:, s])
    assert design is not None
    return Pool(np.concatenate(sums), np.concatenate(counts), design.decoders, design.conditions)


def judge(
    base: Pool, other: Pool, units: np.ndarray, metric: str, method: Method = DEFAULT_METHOD
) -> tuple[np.ndarray, np.ndarray]:
    """Verdict codes (+1 worse, -1 better, 0 none) and differences of every cell, over
    ``units``, as ``compare --test method`` judges them (NaN cells have no verdict)."""
    if not np.array_equal(base.counts[units], other.counts[units]):
        raise ValueError("the two arms must count the same outputs (a failed output?)")
    diff = (other.sums[units] - base.sums[units]).reshape(len(units), -1)
    counts = base.counts[units].reshape(len(units), -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = diff.sum(axis=0) / counts.sum(axis=0)
    p_holm = holm(family_p_values(diff, counts, 0.0, method=method))
    lower_is_better = metric not in HIGHER_IS_BETTER
    codes = np.zeros(len(delta))
    for k in range(len(delta)):
        v = verdict(float(p_holm[k]), float(delta[k]), ALPHA, lower_is_better)
        codes[k] = {Verdict.WORSE: 1, Verdict.BETTER: -1}.get(v, 0) if v else 0
    return codes, delta


def power_table(
    base: Pool,
    arms: Sequence[tuple[str, Pool]],
    focus: tuple[str, str],
    families: Sequence[int],
    replicates: int,
    metric: str,
    progress: Callable[[], None] | None = None,
    method: Method = DEFAULT_METHOD,
) -> list[PowerRow]:
    """One row per arm: the focus cell's pool effect and, per n, the share of replicates
    in which ``compare --test method`` would call it (in the effect's direction) and any
    cell at all."""
    d = base.decoders.index(focus[0])
    c = base.conditions.index(focus[1])
    cell = d * len(base.conditions) + c
    rng = np.random.default_rng(POWER_SEED)
    units = base.sums.shape[0]
    lower_is_better = metric not in HIGHER_IS_BETTER
    rows = []
    for label, other in arms:
        with np.errstate(invalid="ignore", divide="ignore"):
            effect = float(
                (other.sums[:, d, c].sum() - base.sums[:, d, c].sum()) / base.counts[:, d, c].sum()
            )
        right = (1 if effect > 0 else -1) * (1 if lower_is_better else -1)
        power, any_cell = {}, {}
        for n in families:
            hits = anywhere = 0
            for _ in range(replicates):
                drawn = rng.choice(units, size=n, replace=n > units)
                codes, _ = judge(base, other, drawn, metric, method)
                hits += codes[cell] == right
                anywhere += bool(np.any(codes != 0))
                if progress is not None:
                    progress()
            power[n] = hits / replicates
            any_cell[n] = anywhere / replicates
        rows.append(PowerRow(label, effect, power, any_cell))
    return rows
