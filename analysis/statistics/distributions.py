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
from dataclasses import dataclass

import numpy as np

from analysis.loading.answer_log import gathered
from analysis.loading.answers import AnswerLog
from analysis.loading.chain_units import CHAIN_DECODERS, DIGITS

from .bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .chain_leaves import chain_steps
from .output_scores import SCORES, scored_outputs
from .proper_scores import step_log_loss, step_rps

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


def _intervals(
    family: np.ndarray, cell: np.ndarray, values: np.ndarray, n_cells: int, n_boot: int, seed: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """95% family-bootstrap intervals of each (cell, score) mean; values (units, scores),
    NaN left out. Returns lo, hi of shape (cells, scores) and the families resampled."""
    codes, dense = np.unique(family, return_inverse=True)
    n_f, n_s = len(codes), values.shape[1]
    nan = np.full((n_cells, n_s), np.nan)
    if n_f < MIN_FAMILIES or n_boot <= 0:
        return nan, nan, n_f
    finite = np.isfinite(values)
    slot = (dense.reshape(-1) * n_cells + cell)[:, None] * n_s + np.arange(n_s)[None, :]
    size = n_f * n_cells * n_s
    sums = np.bincount(slot[finite], values[finite], minlength=size).reshape(n_f, -1)
    counts = np.bincount(slot[finite], minlength=size).astype(np.float64).reshape(n_f, -1)
    reps = ratio_replicates(sums, counts, resample_weights(n_f, n_boot, seed))
    lo, hi = percentile_interval(reps)
    return lo.reshape(n_cells, n_s), hi.reshape(n_cells, n_s), n_f


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
    cell_of = u["decoder"].astype(np.int64) * n_c + u["condition"]
    found = scored_outputs(log, keep, chain_mask)
    scores = found.scores
    cell = found.decoder * n_c + found.condition
    values = np.stack([scores[name] for name in SCORES], axis=1)
    lo, hi, n_f = _intervals(found.family, cell, values, n_d * n_c, n_boot, seed)
    finite = np.isfinite(values)
    sums = np.zeros((n_d * n_c, len(SCORES)))
    counts = np.zeros((n_d * n_c, len(SCORES)))
    np.add.at(sums, cell, np.where(finite, values, 0.0))
    np.add.at(counts, cell, finite)
    n_all = np.bincount(cell_of[keep], minlength=n_d * n_c)
    chain_cell = chains["decoder"] * n_c + chains["condition"]
    chain_keep = np.ones(len(chain_cell), bool) if chain_mask is None else chain_mask
    n_all += np.bincount(chain_cell[chain_keep], minlength=n_d * n_c)
    n_scored = np.bincount(cell, minlength=n_d * n_c)
    zero = np.bincount(cell[~np.isfinite(scores["log_score"])], minlength=n_d * n_c)
    pit_bin = np.minimum((scores["pit"] * PIT_BINS).astype(np.int64), PIT_BINS - 1)
    pits = np.bincount(cell * PIT_BINS + pit_bin, minlength=n_d * n_c * PIT_BINS)
    rows = []
    for decoder in _ranked(decoders, names["decoder"]):
        for condition in _ranked(conditions, names["condition"]):
            c = names["decoder"].index(decoder) * n_c + names["condition"].index(condition)
            if not n_all[c]:
                continue
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = sums[c] / counts[c]
            rows.append(
                DistributionRow(
                    decoder=decoder,
                    condition=condition,
                    n=int(n_all[c]),
                    scored=int(n_scored[c]),
                    zero_mass=int(zero[c]),
                    mean=dict(zip(SCORES, mean.tolist(), strict=True)),
                    interval={s: (float(lo[c, i]), float(hi[c, i])) for i, s in enumerate(SCORES)},
                    pit_counts=tuple(pits[c * PIT_BINS : (c + 1) * PIT_BINS].tolist()),
                )
            )
    others = {d for d, n in log.not_intervals if n and d not in CHAIN_DECODERS}
    y_log = scores["y_log10"][np.isfinite(scores["y_log10"])]
    return DistributionStats(
        tuple(rows),
        _step_rows(log, keep, decoders, conditions, chain_mask),
        n_f,
        tuple(d for d in _ranked(decoders, sorted(others)) if d in others),
        float(y_log.max() - y_log.min()) if len(y_log) else float("nan"),
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
    u, names = log.units, log.names
    truth = gathered(log.o_truth, log.q_outcome)
    rows = np.flatnonzero((truth >= 0) & gathered(keep & u["tree_path"], log.q_unit))
    outcome = log.q_outcome[rows]
    k = log.o_options[outcome].astype(np.int64)
    at = np.repeat(log.o_p_start[outcome], k) + (
        np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
    )
    p = log.o_p[at]
    rps = step_rps(p, k, truth[rows])
    loss = step_log_loss(log.o_p[log.o_p_start[outcome] + truth[rows]])
    unit = log.q_unit[rows]
    depth = log.q_depth[rows].astype(np.int64)
    decoder = u["decoder"][unit].astype(np.int64)
    condition = u["condition"][unit].astype(np.int64)
    c = log.chains
    c_unit, c_depth, c_truth, c_start = chain_steps(c, chain_keep)
    if len(c_unit):
        width = np.where(c.units["kind"][c_unit] == DIGITS, 10, 2)
        flat = np.repeat(c_start, width) + (
            np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        )
        rps = np.r_[rps, step_rps(c.p[flat], width, c_truth)]
        loss = np.r_[loss, step_log_loss(c.p[c_start + c_truth])]
        depth = np.r_[depth, c_depth]
        decoder = np.r_[decoder, c.units["decoder"][c_unit]]
        condition = np.r_[condition, c.units["condition"][c_unit]]
    n_c, top = len(names["condition"]), int(depth.max(initial=0)) + 1
    key = (decoder * n_c + condition) * top + depth
    size = len(names["decoder"]) * n_c * top
    n = np.bincount(key, minlength=size)
    rps_sum = np.bincount(key, rps, minlength=size)
    had = np.isfinite(loss)
    loss_sum = np.bincount(key[had], loss[had], minlength=size)
    loss_n = np.bincount(key[had], minlength=size)
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
