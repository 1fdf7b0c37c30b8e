"""Each output's predicted distribution scored: trees and direct choice (``predictive``),
index digits, index bits and threshold CDFs (``chain_leaves``), one row per scored output.

The outcome is y's cell, scored at its centre: the decoders look for the cell holding y
(read out as its lower endpoint), and on-grid targets would otherwise sit on their cell's
left edge, where a distribution all on the right cell has PIT 0 and covers no central
interval. The leaf holding y is the same either way (log score unchanged). CRPS and
interval scores are in % of U−L (the unit of NMAE); log scores in nats; ``log_density``
is −ln(m·N/w) for a leaf of w cells. Only outputs whose y lies in [L, U) and whose whole
distribution was answered with probabilities are scored; the others are n/a. No I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np

from analysis.loading.logs.outputs import Outputs
from analysis.loading.probabilities.answer_log import gathered
from analysis.loading.probabilities.answers import AnswerLog
from analysis.loading.probabilities.chain_units import BITS, DIGITS, THRESHOLDS, chain_positions

from .chain_leaves import chain_leaves, whole_chains
from .log_scale import log_leaves, log_target
from .predictive import PathSteps, tree_leaves
from .proper_scores import (
    CENTRAL_LEVELS,
    Leaves,
    central_intervals,
    crps,
    interval_score,
    log_scores,
    massive,
    pit,
)

__all__ = [
    "COLUMNS",
    "SCORES",
    "ScoredOutputs",
    "all_families",
    "chain_counts",
    "score_blocks",
    "score_columns",
    "score_leaves",
    "scored_outputs",
    "scored_rows",
]

# Per scored output, the means the rows report (each with a bootstrap interval).
SCORES = (
    "crps",
    "crps_log10",
    "log_score",
    "log_density",
    *(f"cover{int(100 * a)}" for a in CENTRAL_LEVELS),
    *(f"is{int(100 * a)}" for a in CENTRAL_LEVELS),
)

# The per-output scores the metrics take (``metrics.SCORED``: crps, logscore): the CRPS and
# the density form of the log score, which compares outputs whose partitions differ.
COLUMNS = ("crps", "log_density")


@dataclass(frozen=True, eq=False)
class ScoredOutputs:
    """Scored outputs: codes into the AnswerLog's names (job, decoder, condition), family
    codes into ``family_names``, and per output each of SCORES and ``pit`` (NaN: not
    finite, e.g. the log score of a true leaf of mass 0)."""

    job: np.ndarray
    decoder: np.ndarray
    condition: np.ndarray
    family: np.ndarray
    family_names: tuple[str, ...]
    scores: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.job)


def score_leaves(
    leaves: Leaves,
    target_cells: np.ndarray,
    n_cells: np.ndarray,
    lower: np.ndarray,
    eps: np.ndarray,
) -> dict[str, np.ndarray]:
    """SCORES and ``pit`` of each owner's leaves (in cells) at y's cell centre; ``lower``
    and ``eps`` (the grid's L and ε) place the cells for the CRPS on log10|y| (decades)."""
    # Leaves of mass 0 (unexpanded siblings of probability 0) are most of them: 3 in 4 of
    # the sim's 100x affine run, 9 in 10 of its trees'. Every score reads them as gaps.
    leaves = massive(leaves)
    y = np.floor(target_cells) + 0.5
    percent = 100.0 / n_cells
    plain, density = log_scores(leaves, y, n_cells)
    on_log = log_leaves(leaves, lower, eps)
    scores = {
        "crps": crps(leaves, y) * percent,
        "crps_log10": crps(on_log, log_target(y, lower, eps)),
        "y_log10": log_target(y, lower, eps),
        "log_score": np.where(np.isfinite(plain), plain, np.nan),
        "log_density": np.where(np.isfinite(density), density, np.nan),
        "pit": pit(leaves, y),
    }
    for level in CENTRAL_LEVELS:
        low, high = central_intervals(leaves, level)
        name = int(100 * level)
        # An end within a billionth of a cell of y holds it: a quantile interpolated to the
        # centre of y's cell lands there only up to rounding.
        near = 1e-9
        scores[f"cover{name}"] = ((low <= y + near) & (y <= high + near)).astype(np.float64)
        scores[f"is{name}"] = interval_score(low, high, y, level) * percent
    return scores


def _in_range(target: np.ndarray, n_cells: np.ndarray) -> np.ndarray:
    return np.isfinite(target) & (target >= 0) & (target < n_cells)


def _tree_units(log: AnswerLog, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tree units with a whole distribution, and their question rows by (unit, depth)."""
    u = log.units
    usable = gathered(log.o_chosen >= 0, log.q_outcome)
    counted = np.bincount(log.q_unit[usable], minlength=len(log))
    target = u["target_cells"].astype(np.float64)
    whole = keep & u["tree_path"] & (counted == u["step_count"])
    whole &= _in_range(target, u["n_cells"])
    units = np.flatnonzero(whole)
    rows = np.flatnonzero(usable & gathered(whole, log.q_unit))
    rows = rows[np.lexsort((log.q_depth[rows], log.q_unit[rows]))]
    return units, rows


def chain_counts(log: AnswerLog, keep: np.ndarray | None = None) -> np.ndarray:
    """Per chain unit (within ``keep``): True when it is scored (whole, y in [L, U))."""
    c = log.chains
    whole = whole_chains(c) & _in_range(c.units["target_cells"], c.units["n_cells"])
    return whole if keep is None else whole & keep


def all_families(log: AnswerLog) -> tuple[str, ...]:
    """The scored outputs' family code space: the units' names, then the chains' families
    they lack."""
    names = tuple(log.names["family"])
    known = set(names)
    return names + tuple(n for n in dict.fromkeys(log.chains.family_names) if n not in known)


# Leaves scored at a time: each score makes a few temporaries per leaf, so a block's stay a
# few MB (in cache) whatever the run's size: a 100x affine run has ~17 million leaves.
CHUNK = 1 << 17
THREADS = 2  # blocks scored at once


def _cuts(weight: np.ndarray) -> list[tuple[int, int]]:
    """Ranges [lo, hi) of consecutive outputs holding about CHUNK leaves each (``weight``:
    leaves per output; one output is never split)."""
    if not len(weight):
        return []
    bucket = (np.cumsum(weight) - weight) // CHUNK
    cuts = np.flatnonzero(np.r_[True, np.diff(bucket) > 0])
    return list(zip(cuts.tolist(), np.r_[cuts[1:], len(weight)].tolist(), strict=True))


def score_blocks(
    log: AnswerLog, keep: np.ndarray | None = None, chain_keep: np.ndarray | None = None
) -> Iterator[ScoredOutputs]:
    """Every scored output (module doc), a block of about CHUNK leaves at a time; ``keep``
    selects tree units, ``chain_keep`` chain units (None: all)."""
    keep = np.ones(len(log), bool) if keep is None else keep
    u, c = log.units, log.chains
    family_names = all_families(log)
    code = {name: i for i, name in enumerate(family_names)}
    chain_family = np.array([code[n] for n in c.family_names], np.int64)

    def block(columns: dict[str, np.ndarray], scores: dict[str, np.ndarray]) -> ScoredOutputs:
        job, decoder, condition, family = (
            np.asarray(columns[k], np.int64) for k in ("job", "decoder", "condition", "family")
        )
        return ScoredOutputs(job, decoder, condition, family, family_names, scores)

    units, rows = _tree_units(log, keep)
    # Per question row (sorted by unit, depth): its path's place in ``units``.
    path = np.searchsorted(units, log.q_unit[rows])
    outcome = log.q_outcome[rows]
    options = log.o_options[outcome].astype(np.int64)
    at = np.r_[np.searchsorted(path, np.arange(len(units))), len(rows)]

    def tree_block(lo: int, hi: int) -> ScoredOutputs:
        mine, r = units[lo:hi], slice(at[lo], at[hi])
        k, picked = options[r], outcome[r]
        flat = np.repeat(log.o_p_start[picked], k) + (
            np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
        )
        leaves = tree_leaves(
            PathSteps(
                n=hi - lo,
                n_cells=u["n_cells"][mine].astype(np.int64),
                path=path[r] - lo,
                k=k,
                chosen=log.o_chosen[picked],
                p=log.o_p[flat],
            )
        )
        scores = score_leaves(
            leaves,
            u["target_cells"][mine].astype(np.float64),
            u["n_cells"][mine].astype(np.float64),
            u["lower"][mine],
            u["eps"][mine],
        )
        return block({k: u[k][mine] for k in ("job", "decoder", "condition", "family")}, scores)

    chained = np.flatnonzero(chain_counts(log, chain_keep))
    kind, n_cells = c.units["kind"][chained], c.units["n_cells"][chained]
    width = np.where(kind == DIGITS, 10, np.where(kind == BITS, 2, 1))

    def chain_block(lo: int, hi: int) -> ScoredOutputs:
        mine = chained[lo:hi]
        scores = score_leaves(
            chain_leaves(c, mine),
            c.units["target_cells"][mine],
            c.units["n_cells"][mine].astype(np.float64),
            c.units["lower"][mine],
            c.units["eps"][mine],
        )
        columns = {k: c.units[k][mine] for k in ("job", "decoder", "condition")}
        return block({**columns, "family": chain_family[c.units["family"][mine]]}, scores)

    tree_leaf_count = np.bincount(path, options, minlength=len(units))
    chain_leaf_count = np.where(kind == THRESHOLDS, n_cells, width * chain_positions(kind, n_cells))
    work = [partial(tree_block, lo, hi) for lo, hi in _cuts(tree_leaf_count)]
    work += [partial(chain_block, lo, hi) for lo, hi in _cuts(chain_leaf_count)]
    # numpy lets go of the GIL in the per-leaf work, so blocks score side by side; ``map``
    # hands them back in order, and the caller consumes each as it comes.
    with ThreadPoolExecutor(THREADS) as pool:
        yield from pool.map(lambda score: score(), work)


def scored_outputs(
    log: AnswerLog, keep: np.ndarray | None = None, chain_keep: np.ndarray | None = None
) -> ScoredOutputs:
    """Every scored output (``score_blocks``), joined."""
    parts = list(score_blocks(log, keep, chain_keep))
    if not parts:
        empty = np.zeros(0, np.int64)
        scores = {name: np.zeros(0) for name in (*SCORES, "y_log10", "pit")}
        return ScoredOutputs(empty, empty, empty, empty, all_families(log), scores)

    def joined(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])

    return ScoredOutputs(
        job=joined("job"),
        decoder=joined("decoder"),
        condition=joined("condition"),
        family=joined("family"),
        family_names=parts[0].family_names,
        scores={name: np.concatenate([p.scores[name] for p in parts]) for name in parts[0].scores},
    )


def score_columns(
    outputs: Outputs, found: ScoredOutputs, names: AnswerLog, wanted: tuple[str, ...] = COLUMNS
) -> np.ndarray:
    """``wanted`` (default ``COLUMNS``) × outputs rows: each scored output's scores at its
    row in ``outputs`` (matched by job and decoder name), NaN elsewhere (n/a). ``names``:
    the log ``found`` was scored from."""
    columns = np.full((len(wanted), len(outputs)), np.nan)
    if not len(found):
        return columns
    job_row = {name: i for i, name in enumerate(outputs.job_names)}
    jobs = np.array([job_row.get(n, -1) for n in names.names["job"]], np.int64)
    dec_row = {name: i for i, name in enumerate(outputs.decoder_names)}
    decs = np.array([dec_row.get(n, -1) for n in names.names["decoder"]], np.int64)
    n_dec = len(outputs.decoder_names)
    row_at = np.full(len(outputs.job_names) * n_dec, -1, np.int64)
    row_at[outputs.job_code.astype(np.int64) * n_dec + outputs.decoder] = np.arange(len(outputs))
    job, dec = jobs[found.job], decs[found.decoder]
    known = (job >= 0) & (dec >= 0)
    at = np.full(len(found), -1, np.int64)
    at[known] = row_at[job[known] * n_dec + dec[known]]
    hit = at >= 0
    for i, name in enumerate(wanted):
        columns[i, at[hit]] = found.scores[name][hit]
    return columns


def scored_rows(outputs: Outputs, found: ScoredOutputs, names: AnswerLog) -> np.ndarray:
    """Per outputs row: True when that output was scored."""
    marks = ScoredOutputs(
        found.job, found.decoder, found.condition, found.family, found.family_names,
        {"one": np.ones(len(found))},
    )  # fmt: skip
    return score_columns(outputs, marks, names, ("one",))[0] == 1.0
