"""The Distributions section: each output's predicted distribution judged by proper scores.

Ours, not the paper's. Per decoder × condition, over the outputs whose whole path was
answered with probabilities (``predictive.tree_leaves`` rebuilds the distribution; others
are counted as n/a, never scored 0): the CRPS (exact for the piecewise-uniform
distribution; in % of U−L, the unit of NMAE, to which it reduces for a point mass), the log
score of the leaf holding y (scored at the centre of y's cell: ``unit_scores``; plain −ln m, and the density form −ln(m·N/w) that compares
decoders whose partitions differ; outputs whose true leaf had no mass are counted apart,
not in the mean), the PIT histogram, and the coverage and interval score (% of U−L) of
the central 50/80/90% intervals; each mean with its 95% family-bootstrap interval (the
calibration tables' replicates and seed). Per decision step: the ranked probability score
and the log loss of the questions with an option holding y. No I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from analysis.loading.answer_log import gathered
from analysis.loading.answers import AnswerLog

from .bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .predictive import PathSteps, tree_leaves
from .proper_scores import (
    CENTRAL_LEVELS,
    Leaves,
    central_intervals,
    crps,
    interval_score,
    log_scores,
    pit,
    step_log_loss,
    step_rps,
)

__all__ = [
    "PIT_BINS",
    "SCORES",
    "DistributionRow",
    "DistributionStats",
    "StepRow",
    "distribution_stats",
    "unit_scores",
]

PIT_BINS = 10
# Per scored unit, the means the rows report (each with a bootstrap interval).
SCORES = (
    "crps",
    "log_score",
    "log_density",
    *(f"cover{int(100 * a)}" for a in CENTRAL_LEVELS),
    *(f"is{int(100 * a)}" for a in CENTRAL_LEVELS),
)


@dataclass(frozen=True)
class DistributionRow:
    """One decoder × condition."""

    decoder: str
    condition: str
    n: int  # interval outputs of the cell
    scored: int  # of those, with a whole distribution (the rest: n/a)
    zero_mass: int  # scored outputs whose true leaf had mass 0 (log scores left out)
    mean: dict[str, float]  # SCORES -> mean over scored (finite) outputs
    interval: dict[str, tuple[float, float]]  # SCORES -> 95% family-bootstrap interval
    pit_counts: tuple[int, ...]  # PIT_BINS equal-width bins of F(y)


@dataclass(frozen=True)
class StepRow:
    """One decision depth of one decoder × condition."""

    decoder: str
    condition: str
    depth: int
    questions: int  # answered with probabilities, an option holding y
    rps: float
    log_loss: float  # mean over questions whose true option had mass
    zero_mass: int


@dataclass(frozen=True, eq=False)
class DistributionStats:
    """The section's rows, and how many families the intervals resampled."""

    rows: tuple[DistributionRow, ...]
    steps: tuple[StepRow, ...]
    n_families: int


def _scored_units(log: AnswerLog, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The units with a whole distribution, and their question rows sorted by (unit, depth)."""
    u = log.units
    usable = gathered(log.o_chosen >= 0, log.q_outcome)
    counted = np.bincount(log.q_unit[usable], minlength=len(log))
    target = u["target_cells"].astype(np.float64)
    whole = keep & u["tree_path"] & (counted == u["step_count"]) & np.isfinite(target)
    whole &= (target >= 0) & (target < u["n_cells"])
    units = np.flatnonzero(whole)
    rows = np.flatnonzero(usable & gathered(whole, log.q_unit))
    rows = rows[np.lexsort((log.q_depth[rows], log.q_unit[rows]))]
    return units, rows


# Leaves (or options) scored at a time: the per-leaf temporaries stay a few MB, in cache,
# whatever the run's size (a 100x run has ~15 million leaves: direct choice 100 per output).
CHUNK = 1 << 16


def _chunks(k: np.ndarray, group: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Row ranges [r0, r1) holding about ``size`` of ``k`` each, cut only where ``group``
    changes (a path is never split)."""
    if not len(k):
        return []
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    before = np.cumsum(k, dtype=np.int64)[starts] - k[starts]
    cuts = starts[np.flatnonzero(np.r_[True, np.diff(before // size) > 0])]
    ends = np.r_[cuts[1:], len(k)]
    return list(zip(cuts.tolist(), ends.tolist(), strict=True))


def _flat_p(log: AnswerLog, outcome: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The probabilities of the questions ``outcome``, flat, k each, in interval order."""
    at = np.repeat(log.o_p_start[outcome], k) + (
        np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
    )
    return log.o_p[at]


def _scores(leaves: Leaves, y: np.ndarray, n_cells: np.ndarray) -> dict[str, np.ndarray]:
    """Each of SCORES and ``pit`` for the owners of ``leaves``, outcome ``y`` in cells."""
    percent = 100.0 / n_cells
    plain, density = log_scores(leaves, y, n_cells)
    scores = {
        "crps": crps(leaves, y) * percent,
        "log_score": np.where(np.isfinite(plain), plain, np.nan),
        "log_density": np.where(np.isfinite(density), density, np.nan),
        "pit": pit(leaves, y),
    }
    for level in CENTRAL_LEVELS:
        lower, upper = central_intervals(leaves, level)
        name = int(100 * level)
        scores[f"cover{name}"] = ((lower <= y) & (y <= upper)).astype(np.float64)
        scores[f"is{name}"] = interval_score(lower, upper, y, level) * percent
    return scores


def _chunk_scores(
    log: AnswerLog, units: np.ndarray, rows: np.ndarray
) -> Iterator[tuple[slice, dict[str, np.ndarray]]]:
    """Each of SCORES (NaN where not finite) and ``pit`` for ``units`` (``_scored_units``),
    a chunk of them at a time: the chunk's slice of ``units`` and its scores."""
    # Per question row, in the narrowest types (a 100x run has 1.4 million rows): int64
    # copies are made a chunk at a time.
    rank = np.full(len(log), -1, np.int32)
    rank[units] = np.arange(len(units))
    path = rank[log.q_unit[rows]]
    del rank
    options = log.o_options[log.q_outcome[rows]]
    for r0, r1 in _chunks(options, path, CHUNK):
        p0, p1 = int(path[r0]), int(path[r1 - 1]) + 1
        outcome = log.q_outcome[rows[r0:r1]]
        k = options[r0:r1].astype(np.int64)
        mine = units[p0:p1]
        n_cells = log.units["n_cells"][mine].astype(np.float64)
        leaves = tree_leaves(
            PathSteps(
                n=p1 - p0,
                n_cells=n_cells.astype(np.int64),
                path=path[r0:r1].astype(np.int64) - p0,
                k=k,
                chosen=log.o_chosen[outcome],
                p=_flat_p(log, outcome, k),
            )
        )
        # The outcome is y's cell, scored at its centre: the decoders look for the cell
        # holding y (read out as its lower endpoint), and on-grid targets would otherwise sit
        # on their cell's left edge, where a distribution all on the right cell has PIT 0 and
        # covers no central interval. The leaf holding y is the same either way.
        y = np.floor(log.units["target_cells"][mine].astype(np.float64)) + 0.5
        yield slice(p0, p1), _scores(leaves, y, n_cells)


def unit_scores(log: AnswerLog, keep: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The scored units and, per unit, each of SCORES (NaN where not finite) and ``pit``
    (per-output arrays, for pairing outputs; the section itself keeps per-cell sums)."""
    units, rows = _scored_units(log, keep)
    scores = {name: np.empty(len(units)) for name in (*SCORES, "pit")}
    for at, chunk in _chunk_scores(log, units, rows):
        for name, values in chunk.items():
            scores[name][at] = values
    return units, scores


def _ranked(wanted: tuple[str, ...], present: Sequence[str]) -> list[str]:
    return [n for n in wanted if n in present] + [n for n in present if n not in wanted]


class _CellSums:
    """Per (family, cell) sums and counts of each of SCORES, and per cell the PIT bins, the
    scored outputs and those whose true leaf had no mass: the section's memory follows the
    cells and families, whatever the number of outputs."""

    def __init__(self, family: np.ndarray, n_cells: int) -> None:
        self.codes, self.dense = np.unique(family, return_inverse=True)
        self.n_cells, size = n_cells, len(self.codes) * n_cells
        self.sums = np.zeros((size, len(SCORES)))
        self.counts = np.zeros((size, len(SCORES)))
        self.cell_sums = np.zeros((n_cells, len(SCORES)))
        self.cell_counts = np.zeros((n_cells, len(SCORES)))
        self.pits = np.zeros(n_cells * PIT_BINS, np.int64)
        self.scored = np.zeros(n_cells, np.int64)
        self.zero = np.zeros(n_cells, np.int64)

    def add(self, at: slice, cell: np.ndarray, scores: dict[str, np.ndarray]) -> None:
        """The units ``at`` (of the family array given), in cells ``cell``."""
        n = self.n_cells
        key = self.dense.reshape(-1)[at] * n + cell
        for i, name in enumerate(SCORES):
            finite = np.isfinite(scores[name])
            values = scores[name][finite]
            self.sums[:, i] += np.bincount(key[finite], values, minlength=len(self.sums))
            self.counts[:, i] += np.bincount(key[finite], minlength=len(self.sums))
            self.cell_sums[:, i] += np.bincount(cell[finite], values, minlength=n)
            self.cell_counts[:, i] += np.bincount(cell[finite], minlength=n)
        self.scored += np.bincount(cell, minlength=n)
        self.zero += np.bincount(cell[~np.isfinite(scores["log_score"])], minlength=n)
        pit_bin = np.minimum((scores["pit"] * PIT_BINS).astype(np.int64), PIT_BINS - 1)
        self.pits += np.bincount(cell * PIT_BINS + pit_bin, minlength=len(self.pits))

    def means(self, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each (cell, score) mean over finite values and its 95% family-bootstrap interval
        (NaN with fewer than MIN_FAMILIES families or no replicates)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = self.cell_sums / self.cell_counts
        n_f, n_s = len(self.codes), len(SCORES)
        if n_f < MIN_FAMILIES or n_boot <= 0:
            nan = np.full((self.n_cells, n_s), np.nan)
            return mean, nan, nan
        shape = (n_f, self.n_cells * n_s)
        weights = resample_weights(n_f, n_boot, seed)
        reps = ratio_replicates(self.sums.reshape(shape), self.counts.reshape(shape), weights)
        lo, hi = percentile_interval(reps)
        return mean, lo.reshape(self.n_cells, n_s), hi.reshape(self.n_cells, n_s)


def distribution_stats(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    mask: np.ndarray | None = None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
) -> DistributionStats:
    """Every row of the section, in the given decoder and condition order; ``mask`` selects
    units. A cell with interval outputs but none scored has a row with ``scored`` 0."""
    keep = np.ones(len(log), bool) if mask is None else mask
    u, names = log.units, log.names
    n_d, n_c = len(names["decoder"]), len(names["condition"])
    # The steps first: their per-question columns are gone before the units' are made.
    steps = _step_rows(log, keep, decoders, conditions)
    cell_of = u["decoder"].astype(np.int64) * n_c + u["condition"]
    units, rows = _scored_units(log, keep)
    cells = _CellSums(u["family"][units], n_d * n_c)
    for at, scores in _chunk_scores(log, units, rows):
        cells.add(at, cell_of[units[at]], scores)
    del rows
    means, lo, hi = cells.means(n_boot, seed)
    n_all = np.bincount(cell_of[keep], minlength=n_d * n_c)
    rows_out = []
    for decoder in _ranked(decoders, names["decoder"]):
        for condition in _ranked(conditions, names["condition"]):
            c = names["decoder"].index(decoder) * n_c + names["condition"].index(condition)
            if not n_all[c]:
                continue
            rows_out.append(
                DistributionRow(
                    decoder=decoder,
                    condition=condition,
                    n=int(n_all[c]),
                    scored=int(cells.scored[c]),
                    zero_mass=int(cells.zero[c]),
                    mean=dict(zip(SCORES, means[c].tolist(), strict=True)),
                    interval={s: (float(lo[c, i]), float(hi[c, i])) for i, s in enumerate(SCORES)},
                    pit_counts=tuple(cells.pits[c * PIT_BINS : (c + 1) * PIT_BINS].tolist()),
                )
            )
    return DistributionStats(tuple(rows_out), steps, len(cells.codes))


def _step_rows(
    log: AnswerLog, keep: np.ndarray, decoders: tuple[str, ...], conditions: tuple[str, ...]
) -> tuple[StepRow, ...]:
    """RPS and log loss per decoder × condition × depth, over tree-path questions whose
    labels are the option indices and some option holds y."""
    u, names = log.units, log.names
    n_c, top = len(names["condition"]), int(log.q_depth.max(initial=0)) + 1
    size = len(names["decoder"]) * n_c * top
    n, loss_n = np.zeros(size, np.int64), np.zeros(size, np.int64)
    rps_sum, loss_sum = np.zeros(size), np.zeros(size)
    wanted = keep & u["tree_path"]
    # A block of questions at a time (each up to 100 options: about CHUNK options a block):
    # nothing per question of the whole run is made.
    block = max(CHUNK // 100, 1)
    for q0 in range(0, len(log.q_outcome), block):
        outcome = log.q_outcome[q0 : q0 + block]
        unit = log.q_unit[q0 : q0 + block]
        truth = log.o_truth[outcome].astype(np.int64)
        mine = np.flatnonzero((truth >= 0) & wanted[unit])
        outcome, unit, truth = outcome[mine], unit[mine], truth[mine]
        k = log.o_options[outcome].astype(np.int64)
        rps = step_rps(_flat_p(log, outcome, k), k, truth)
        loss = step_log_loss(log.o_p[log.o_p_start[outcome] + truth])
        depth = log.q_depth[q0 : q0 + block][mine].astype(np.int64)
        key = (u["decoder"][unit].astype(np.int64) * n_c + u["condition"][unit]) * top + depth
        n += np.bincount(key, minlength=size)
        rps_sum += np.bincount(key, rps, minlength=size)
        had = np.isfinite(loss)
        loss_sum += np.bincount(key[had], loss[had], minlength=size)
        loss_n += np.bincount(key[had], minlength=size)
    found = []
    for decoder in _ranked(decoders, names["decoder"]):
        for condition in _ranked(conditions, names["condition"]):
            base = names["decoder"].index(decoder) * n_c + names["condition"].index(condition)
            for d in range(1, top):
                i = base * top + d
                if not n[i]:
                    continue
                found.append(
                    StepRow(
                        decoder=decoder,
                        condition=condition,
                        depth=d,
                        questions=int(n[i]),
                        rps=float(rps_sum[i] / n[i]),
                        log_loss=float(loss_sum[i] / loss_n[i]) if loss_n[i] else float("nan"),
                        zero_mass=int(n[i] - loss_n[i]),
                    )
                )
    return tuple(found)
