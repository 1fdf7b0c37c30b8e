"""The Probabilities section: first divergence, calibration, order-averaged answers (no I/O).

Everything here reads an ``AnswerLog`` (outputs joined with the answers of their interval
questions); nothing here changes the paper's own tables. ``diff_probabilities`` computes
the same figures for two runs over the outputs ok in both (the team's rule for any
difference), and says how many.

Order averaging: for the ascending and reversed runs of one case, condition and repeat,
question by question where both orders asked the same question at the same step (same
parent interval and options) and an option still held y, the two renormalised
distributions are averaged label by label; its argmax (a t-way tie counts 1/t when it
includes the true option) is set against each order's own selected label.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from analysis.loading.probabilities.answer_log import gathered
from analysis.loading.probabilities.answers import AnswerCounts, AnswerLog
from analysis.loading.probabilities.interval_paths import INELIGIBLE, LEFT_OUT

from .bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    MIN_FAMILIES,
    percentile_interval,
    ratio_replicates,
    resample_weights,
)
from .calibration import CalibrationRow, calibration_rows
from .distributions import DistributionStats, distribution_stats
from .divergence import DivergenceGroup, divergence_groups

_NAN = float("nan")

__all__ = [
    "OrderRow",
    "ProbabilityDiff",
    "ProbabilityStats",
    "diff_probabilities",
    "order_rows",
    "probability_stats",
]


@dataclass(frozen=True)
class OrderRow:
    """Order-averaged distributions against each order alone, for one decoder × condition."""

    decoder: str
    condition: str
    n: int  # shared questions answered with probabilities by both orders
    n_cases: int  # distinct (first, second) output pairs they come from
    first: float  # share whose first-order selection is the true option
    second: float
    averaged: float
    # 95% family-bootstrap intervals of first, second, averaged and gain (NaN: none).
    intervals: tuple[tuple[float, float], ...] = ((_NAN, _NAN),) * 4

    @property
    def gain(self) -> float:
        """Averaged minus the better single order (share of questions)."""
        return self.averaged - max(self.first, self.second)


@dataclass(frozen=True, eq=False)
class ProbabilityStats:
    """All figures of the Probabilities section for one run (or one side of a diff)."""

    available: bool  # some interval question came back with probabilities
    counts: AnswerCounts
    units: int  # ok outputs read as interval paths (within the mask)
    outputs_read: int
    not_intervals: tuple[tuple[str, int], ...]  # (decoder, ok outputs) not interval choices
    left_out: tuple[tuple[str, str, int], ...]  # (decoder, reason, outputs) not in the bound table
    divergence: tuple[DivergenceGroup, ...]
    calibration: tuple[CalibrationRow, ...]
    pooled: tuple[CalibrationRow, ...]  # per condition, all decoders
    orders: tuple[OrderRow, ...]
    order_names: tuple[str, str]
    # Each output's predicted distribution scored (None: no answer carried probabilities).
    distributions: DistributionStats | None = None


def order_rows(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    mask: np.ndarray | None = None,
) -> tuple[OrderRow, ...]:
    """Per decoder × condition: accuracy of each order alone and of the averaged answers."""
    # Per pair, a block at a time (6 million pairs at 1000×): its units and their cell.
    first_unit = gathered(log.pair_first, log.pair_id)
    second_unit = gathered(log.pair_second, log.pair_id)
    keep = np.ones(len(log.pair_id), bool)
    if mask is not None:
        keep = gathered(mask, first_unit) & gathered(mask, second_unit)
    u, names = log.units, log.names
    decoder_of = gathered(u["decoder"], first_unit)
    condition_of = gathered(u["condition"], first_unit)
    rows = []
    ranked_d = [d for d in decoders if d in names["decoder"]]
    ranked_d += [d for d in names["decoder"] if d not in decoders]
    ranked_c = [c for c in conditions if c in names["condition"]]
    ranked_c += [c for c in names["condition"] if c not in conditions]
    n_units = len(log)
    family_of = gathered(u["family"], first_unit)  # both orders of a pair: one family
    found: list[np.ndarray] = []
    for decoder in ranked_d:
        for condition in ranked_c:
            rows_here = np.flatnonzero(
                keep
                & (decoder_of == names["decoder"].index(decoder))
                & (condition_of == names["condition"].index(condition))
            )
            if not len(rows_here):
                continue
            # Distinct (first, second) unit pairs, counted as one int each (not a set of tuples).
            cases = first_unit[rows_here].astype(np.int64) * n_units
            cases += second_unit[rows_here]
            rows.append(
                OrderRow(
                    decoder=decoder,
                    condition=condition,
                    n=len(rows_here),
                    n_cases=len(np.unique(cases)),
                    first=float(log.pair_first_right[rows_here].mean()),
                    second=float(log.pair_second_right[rows_here].mean()),
                    averaged=float(log.pair_averaged_at(rows_here).mean()),
                )
            )
            found.append(rows_here)
    return _with_intervals(log, tuple(rows), found, family_of)


def _with_intervals(
    log: AnswerLog,
    rows: tuple[OrderRow, ...],
    found: list[np.ndarray],
    family_of: np.ndarray,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
) -> tuple[OrderRow, ...]:
    """``rows`` with 95% intervals over resampled families (the main table's resampling, as
    ECE's): each share a ratio of per-family sums, the gain a difference of replicates."""
    families, dense = np.unique(family_of, return_inverse=True)
    n_f = len(families)
    if n_f < MIN_FAMILIES or not rows or n_boot <= 0:
        return rows
    sums = np.zeros((n_f, len(rows), 3))
    counts = np.zeros((n_f, len(rows), 1))
    for k, at in enumerate(found):
        fam = dense.reshape(-1)[at]
        counts[:, k, 0] = np.bincount(fam, None, n_f)
        for j, right in enumerate(
            (log.pair_first_right[at], log.pair_second_right[at], log.pair_averaged_at(at))
        ):
            sums[:, k, j] = np.bincount(fam, right.astype(np.float64), n_f)
    counts = np.broadcast_to(counts, sums.shape)
    reps = ratio_replicates(
        sums.reshape(n_f, -1), counts.reshape(n_f, -1), resample_weights(n_f, n_boot, seed)
    ).reshape(n_boot, len(rows), 3)
    gain = reps[:, :, 2] - np.maximum(reps[:, :, 0], reps[:, :, 1])
    lo, hi = percentile_interval(
        np.concatenate([reps, gain[:, :, None]], axis=2).reshape(n_boot, -1)
    )
    lo, hi = lo.reshape(len(rows), 4), hi.reshape(len(rows), 4)
    return tuple(
        replace(r, intervals=tuple((float(a), float(b)) for a, b in zip(lo[k], hi[k], strict=True)))
        for k, r in enumerate(rows)
    )


def _left_out(log: AnswerLog, keep: np.ndarray) -> tuple[tuple[str, str, int], ...]:
    names = log.names["decoder"]
    decoder, code = log.units["decoder"][keep], log.units["ineligible"][keep]
    found = []
    for reason in sorted(LEFT_OUT):  # not nested, or the target outside the range
        times = np.bincount(decoder[code == reason].astype(np.int64), minlength=len(names))
        found += [(names[d], INELIGIBLE[reason], int(t)) for d, t in enumerate(times.tolist()) if t]
    return tuple(sorted(found))


def probability_stats(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    orders: tuple[str, str] = ("ascending", "reversed"),
    mask: np.ndarray | None = None,
    chain_mask: np.ndarray | None = None,
) -> ProbabilityStats:
    """Every figure of the section, rows in the given decoder and condition order (``mask``:
    the units, ``chain_mask``: the chain units, of the Distributions rows; None: all)."""
    keep = np.ones(len(log), bool) if mask is None else mask
    calibration, pooled = calibration_rows(log, decoders, conditions, mask)
    return ProbabilityStats(
        available=log.has_probabilities,
        counts=log.counts,
        units=int(keep.sum()),
        outputs_read=log.outputs_read,
        not_intervals=log.not_intervals,
        left_out=_left_out(log, keep),
        divergence=divergence_groups(log, decoders, conditions, mask),
        calibration=calibration,
        pooled=pooled,
        orders=order_rows(log, decoders, conditions, mask),
        order_names=orders,
        distributions=(
            distribution_stats(log, decoders, conditions, mask, chain_mask=chain_mask)
            if log.has_probabilities or len(log.chains.r_unit)
            else None
        ),
    )


@dataclass(frozen=True, eq=False)
class ProbabilityDiff:
    """The section's figures for runs A and B over the outputs ok in both."""

    a: ProbabilityStats
    b: ProbabilityStats
    n_common: int  # (job, decoder) interval outputs ok in both runs
    only_a: int  # ok interval outputs of A with no ok counterpart in B
    only_b: int


def diff_probabilities(
    a: AnswerLog,
    b: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    orders: tuple[str, str] = ("ascending", "reversed"),
) -> ProbabilityDiff:
    """Both runs' figures, each computed only on the (job, decoder) units both have ok."""
    keys_a, keys_b = a.keys(), b.keys()
    common = set(keys_a) & set(keys_b)
    mask_a = np.fromiter((k in common for k in keys_a), bool, len(keys_a))
    mask_b = np.fromiter((k in common for k in keys_b), bool, len(keys_b))
    # Digits, bits and threshold outputs (``chain_units``): likewise the ones in both runs.
    chains_a, chains_b = _chain_keys(a), _chain_keys(b)
    both = set(chains_a) & set(chains_b)
    chain_a = np.fromiter((k in both for k in chains_a), bool, len(chains_a))
    chain_b = np.fromiter((k in both for k in chains_b), bool, len(chains_b))
    return ProbabilityDiff(
        a=probability_stats(a, decoders, conditions, orders, mask_a, chain_a),
        b=probability_stats(b, decoders, conditions, orders, mask_b, chain_b),
        n_common=len(common),
        only_a=len(keys_a) - len(common),
        only_b=len(keys_b) - len(common),
    )


def _chain_keys(log: AnswerLog) -> list[tuple[str, str]]:
    """(job, decoder) of every chain unit, in order."""
    jobs, decoders, u = log.names["job"], log.names["decoder"], log.chains.units
    return [
        (jobs[j], decoders[d])
        for j, d in zip(u["job"].tolist(), u["decoder"].tolist(), strict=True)
    ]
