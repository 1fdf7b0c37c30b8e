"""The Distributions section: each output's predicted distribution judged by proper scores.

Ours, not the paper's. Per decoder × condition, over the outputs whose whole distribution
was answered with probabilities (``output_scores``: trees and direct choice, index digits
and bits, threshold CDFs; others are counted as n/a, never scored 0): the CRPS (exact for
the piecewise-uniform distribution; in % of U−L, the unit of NMAE, to which it reduces for
a point mass), the log score of the leaf holding y (scored at the centre of y's cell;
plain −ln m, and the density form −ln(m·N/w) that compares decoders whose partitions differ; outputs whose true leaf had no mass are counted apart,
not in the mean), the PIT histogram, and the coverage and interval score (% of U−L) of
the central 50/80/90% intervals; each mean with its 95% family-bootstrap interval (the
calibration tables' replicates and seed). Per decision step: the ranked probability score
and the log loss of the questions with an option holding y. No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from analysis.loading.probabilities.answers import AnswerLog
from analysis.loading.probabilities.chain_units import CHAIN_DECODERS, DIGITS

from .bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .chain_leaves import chain_steps
from .output_scores import SCORES, ScoredOutputs, all_families, score_blocks
from .proper_scores import step_log_loss, step_rps_at

__all__ = [
    "LOG_SPAN",
    "PIT_BINS",
    "SCORES",
    "DistributionRow",
    "DistributionStats",
    "StepRow",
    "distribution_stats",
]

PIT_BINS = 10
STEP_BLOCK = 1 << 18  # questions read at once by the step table
LOG_SPAN = 2.0  # decades of |y| from which the CRPS on log10|y| is shown beside y's


@dataclass(frozen=True)
class DistributionRow:
    """One decoder × condition."""

    decoder: str
    condition: str
    n: int  # outputs of the cell with a distribution's form (interval paths, chains, CDFs)
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
    # Decoders with ok outputs but no distribution's form (neither interval paths nor chains)
    not_scored: tuple[str, ...] = ()
    # Decades spanned by the scored outputs' |y| (log10 max/min, |y| floored at half a
    # cell): the section shows the CRPS on log10|y| from LOG_SPAN decades on.
    span_decades: float = float("nan")

    @property
    def log_scale(self) -> bool:
        """Whether the targets span orders of magnitude (the log-scale CRPS is shown)."""
        return bool(self.span_decades >= LOG_SPAN)


def _ranked(wanted: tuple[str, ...], present: Sequence[str]) -> list[str]:
    return [n for n in wanted if n in present] + [n for n in present if n not in wanted]


class _CellSums:
    """Per (family, cell) sums and counts of each of SCORES, and per cell the PIT bins, the
    scored outputs and those whose true leaf had no mass, added a block at a time: the
    section's memory follows the cells and families, not the outputs."""

    def __init__(self, n_families: int, n_cells: int) -> None:
        self.n_cells, size = n_cells, n_families * n_cells
        self.sums = np.zeros((size, len(SCORES)))
        self.counts = np.zeros((size, len(SCORES)))
        self.pits = np.zeros(n_cells * PIT_BINS, np.int64)
        self.scored = np.zeros(n_cells, np.int64)
        self.zero = np.zeros(n_cells, np.int64)
        self.families = np.zeros(n_families, bool)  # those with a scored output
        self.y_log = (np.inf, -np.inf)

    def add(self, found: ScoredOutputs, n_conditions: int) -> None:
        """One block of scored outputs."""
        scores, n = found.scores, self.n_cells
        cell = found.decoder * n_conditions + found.condition
        key = found.family * n + cell
        for i, name in enumerate(SCORES):
            finite = np.isfinite(scores[name])
            self.sums[:, i] += np.bincount(key[finite], scores[name][finite], len(self.sums))
            self.counts[:, i] += np.bincount(key[finite], minlength=len(self.sums))
        self.families[found.family] = True
        self.scored += np.bincount(cell, minlength=n)
        self.zero += np.bincount(cell[~np.isfinite(scores["log_score"])], minlength=n)
        pit_bin = np.minimum((scores["pit"] * PIT_BINS).astype(np.int64), PIT_BINS - 1)
        self.pits += np.bincount(cell * PIT_BINS + pit_bin, minlength=len(self.pits))
        y_log = scores["y_log10"][np.isfinite(scores["y_log10"])]
        if len(y_log):
            self.y_log = (min(self.y_log[0], y_log.min()), max(self.y_log[1], y_log.max()))

    def means(self, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Each (cell, score) mean over finite values, its 95% family-bootstrap interval
        (NaN with fewer than MIN_FAMILIES families or no replicates) and the families
        resampled (those with a scored output)."""
        n_s = len(SCORES)
        sums = self.sums.reshape(-1, self.n_cells * n_s)
        counts = self.counts.reshape(-1, self.n_cells * n_s)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = (sums.sum(0) / counts.sum(0)).reshape(self.n_cells, n_s)
        present = np.flatnonzero(self.families)
        n_f = len(present)
        if n_f < MIN_FAMILIES or n_boot <= 0:
            nan = np.full((self.n_cells, n_s), np.nan)
            return mean, nan, nan, n_f
        weights = resample_weights(n_f, n_boot, seed)
        lo, hi = percentile_interval(ratio_replicates(sums[present], counts[present], weights))
        return mean, lo.reshape(self.n_cells, n_s), hi.reshape(self.n_cells, n_s), n_f


def distribution_stats(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    mask: np.ndarray | None = None,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    chain_mask: np.ndarray | None = None,
) -> DistributionStats:
    """Every row of the section, in the given decoder and condition order; ``mask`` selects
    units, ``chain_mask`` chain units. A cell with outputs but none scored has a row with
    ``scored`` 0 (n/a)."""
    keep = np.ones(len(log), bool) if mask is None else mask
    u, names, chains = log.units, log.names, log.chains.units
    n_d, n_c = len(names["decoder"]), len(names["condition"])
    cells = _CellSums(len(all_families(log)), n_d * n_c)
    # The steps' table is made beside the blocks' scores (numpy lets go of the GIL).
    with ThreadPoolExecutor(1) as side:
        steps = side.submit(_step_rows, log, keep, decoders, conditions, chain_mask)
        for found in score_blocks(log, keep, chain_mask):
            cells.add(found, n_c)
    means, lo, hi, n_f = cells.means(n_boot, seed)
    cell_of = u["decoder"].astype(np.int64) * n_c + u["condition"]
    n_all = np.bincount(cell_of[keep], minlength=n_d * n_c)
    chain_cell = chains["decoder"] * n_c + chains["condition"]
    chain_keep = np.ones(len(chain_cell), bool) if chain_mask is None else chain_mask
    n_all += np.bincount(chain_cell[chain_keep], minlength=n_d * n_c)
    rows = []
    for decoder in _ranked(decoders, names["decoder"]):
        for condition in _ranked(conditions, names["condition"]):
            c = names["decoder"].index(decoder) * n_c + names["condition"].index(condition)
            if not n_all[c]:
                continue
            rows.append(
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
    others = {d for d, n in log.not_intervals if n and d not in CHAIN_DECODERS}
    y_lo, y_hi = cells.y_log
    return DistributionStats(
        tuple(rows),
        steps.result(),
        n_f,
        tuple(d for d in _ranked(decoders, sorted(others)) if d in others),
        float(y_hi - y_lo) if y_hi >= y_lo else float("nan"),
    )


def _step_rows(
    log: AnswerLog,
    keep: np.ndarray,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    chain_keep: np.ndarray | None = None,
) -> tuple[StepRow, ...]:
    """RPS and log loss per decoder × condition × depth, over tree-path questions whose
    labels are the option indices and some option holds y, and the digits' and bits'
    questions with an option holding y (``chain_leaves.chain_steps``)."""
    u, names, c = log.units, log.names, log.chains
    c_unit, c_depth, c_truth, c_start = chain_steps(c, chain_keep)
    n_c = len(names["condition"])
    top = int(max(log.q_depth.max(initial=0), c_depth.max(initial=0))) + 1
    size = len(names["decoder"]) * n_c * top
    n, loss_n = np.zeros(size, np.int64), np.zeros(size, np.int64)
    rps_sum, loss_sum = np.zeros(size), np.zeros(size)

    def add(key: np.ndarray, rps: np.ndarray, loss: np.ndarray) -> None:
        nonlocal n, rps_sum, loss_sum, loss_n
        n += np.bincount(key, minlength=size)
        rps_sum += np.bincount(key, rps, minlength=size)
        had = np.isfinite(loss)
        loss_sum += np.bincount(key[had], loss[had], minlength=size)
        loss_n += np.bincount(key[had], minlength=size)

    wanted = keep & u["tree_path"]
    # A block of questions at a time: nothing per question of the whole run is made.
    for q0 in range(0, len(log.q_outcome), STEP_BLOCK):
        outcome = log.q_outcome[q0 : q0 + STEP_BLOCK]
        unit = log.q_unit[q0 : q0 + STEP_BLOCK]
        truth = log.o_truth[outcome].astype(np.int64)
        mine = np.flatnonzero((truth >= 0) & wanted[unit])
        outcome, unit, truth = outcome[mine], unit[mine], truth[mine]
        start = log.o_p_start[outcome]
        depth = log.q_depth[q0 : q0 + STEP_BLOCK][mine].astype(np.int64)
        cell = u["decoder"][unit].astype(np.int64) * n_c + u["condition"][unit]
        rps = step_rps_at(log.o_p, start, log.o_options[outcome].astype(np.int64), truth)
        add(cell * top + depth, rps, step_log_loss(log.o_p[start + truth]))
    if len(c_unit):
        width = np.where(c.units["kind"][c_unit] == DIGITS, 10, 2)
        cell = c.units["decoder"][c_unit] * n_c + c.units["condition"][c_unit]
        rps = step_rps_at(c.p, c_start, width, c_truth)
        add(cell * top + c_depth, rps, step_log_loss(c.p[c_start + c_truth]))
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
