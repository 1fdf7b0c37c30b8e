"""Calibration of the returned probabilities of interval questions (no I/O).

The paper does not assume the returned probabilities are calibrated (§3) and leaves open
whether they estimate the conditional error rates (Appendix, "Conditional error
probabilities"). Here the renormalised probability p of the selected option is set against
the event "the selected interval holds the target y", over every interval question that
had an option holding y (questions asked after a path left y's interval have no right
answer and are left out):

- reliability: ``N_BINS`` equal-width bins of p, [0, 0.1), [0.1, 0.2), …, [0.9, 1.0]; per
  bin the number of questions, the mean p and the share whose selection held y;
- expected calibration error, ECE = Σ_b (n_b/n)·|accuracy_b − mean p_b| over those bins,
  with a 95% family-bootstrap interval (the families resampled as for the main table);
- entropy H = −Σ p_j log2 p_j of the whole returned distribution (bits), its mean on
  right and on wrong selections, and the AUROC of H for telling a wrong selection from a
  right one (the probability that a wrong one has the higher entropy; ties count ½).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.columns.compact import narrow_type
from analysis.loading.probabilities.answer_log import BLOCK, gathered
from analysis.loading.probabilities.answers import AnswerLog

from .bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, MIN_FAMILIES, resample_weights

__all__ = [
    "N_BINS",
    "CalibrationRow",
    "Reliability",
    "auroc",
    "calibration_rows",
    "ece_interval",
    "reliability",
]

N_BINS = 10


@dataclass(frozen=True)
class Reliability:
    """Binned reliability; ``confidence`` and ``accuracy`` are NaN in empty bins."""

    edges: tuple[float, ...]
    count: tuple[int, ...]
    confidence: tuple[float, ...]
    accuracy: tuple[float, ...]
    n: int
    ece: float  # NaN without questions


def _bin_of(p: np.ndarray, bins: int) -> np.ndarray:
    """Each ``p``'s reliability bin (equal widths, the last closed), a block at a time."""
    index = np.empty(len(p), np.int8 if bins <= 127 else np.int64)
    for at in range(0, len(p), BLOCK):
        part = p[at : at + BLOCK]
        # 1e-9: a renormalised 0.3 may come out one ulp below; the inputs have 2 decimals.
        index[at : at + BLOCK] = np.clip(np.floor(part * bins + 1e-9).astype(np.int64), 0, bins - 1)
    return index


def _sums(
    cell: np.ndarray, p: np.ndarray, right: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ``cell`` (0..size-1): the rows, the sum of ``p`` and the rows ``right``, a block
    at a time. ``p`` is summed row by row in order into each cell, as ``np.bincount`` with
    weights sums it, so the sums are bit for bit the same; the counts are exact."""
    sum_p = np.zeros(size)
    for at in range(0, len(cell), BLOCK):
        np.add.at(sum_p, cell[at : at + BLOCK].astype(np.intp), p[at : at + BLOCK])
    return _counts(cell, size), sum_p, _counts(cell[right.astype(bool, copy=False)], size)


def _counts(values: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount(values, minlength=size)`` a block at a time (no int64 copy of all)."""
    count = np.zeros(size, np.int64)
    for at in range(0, len(values), BLOCK):
        found = np.bincount(values[at : at + BLOCK].astype(np.intp), minlength=size)
        if len(found) > len(count):
            found[: len(count)] += count
            count = found
        else:
            count[: len(found)] += found
    return count


def reliability(p: np.ndarray, right: np.ndarray, bins: int = N_BINS) -> Reliability:
    """Bin ``p`` (in [0, 1]) into ``bins`` equal widths, the last closed, against ``right``."""
    return _reliability(_sums(_bin_of(p, bins), p, right, bins), bins)


def _reliability(sums: tuple[np.ndarray, np.ndarray, np.ndarray], bins: int) -> Reliability:
    count, sum_p, n_right = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = sum_p / count
        accuracy = n_right.astype(np.float64) / count
    n = int(count.sum())
    gaps = np.abs(np.nan_to_num(accuracy - confidence))
    ece = float((count * gaps).sum() / n) if n else float("nan")
    return Reliability(
        edges=tuple(float(e) for e in np.linspace(0.0, 1.0, bins + 1)),
        count=tuple(int(c) for c in count),
        confidence=tuple(float(c) for c in confidence),
        accuracy=tuple(float(a) for a in accuracy),
        n=n,
        ece=ece,
    )


def auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(score of a positive > score of a negative) + ½·P(equal), from average ranks."""
    if not len(positive) or not len(negative):
        return float("nan")
    values, inverse = np.unique(np.concatenate([positive, negative]), return_inverse=True)
    inverse = inverse.reshape(-1)
    n_pos = len(positive)
    pos = np.bincount(inverse[:n_pos], minlength=len(values))
    return _auroc(pos, np.bincount(inverse[n_pos:], minlength=len(values)))


def _auroc(pos: np.ndarray, neg: np.ndarray) -> float:
    """``auroc`` from the positives and negatives at each distinct score, in ascending
    order. The rank sum is taken in integers (twice the 1-based average ranks): the same
    value a float sum of the ranks gives while it is exact (below 2**52)."""
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if not n_pos or not n_neg:
        return float("nan")
    counts = pos.astype(np.int64) + neg
    twice_rank = 2 * np.cumsum(counts) - (counts - 1)
    u_stat = int(np.dot(pos.astype(np.int64), twice_rank)) / 2 - n_pos * (n_pos + 1) / 2.0
    return float(u_stat / (n_pos * n_neg))


@dataclass(frozen=True)
class CalibrationRow:
    """Calibration of one decoder × condition (all its interval questions)."""

    decoder: str
    condition: str
    reliability: Reliability
    mean_selected: float
    accuracy: float
    entropy_right: float  # mean bits on selections that held y
    entropy_wrong: float
    n_wrong: int
    auroc: float
    ece_interval: tuple[float, float] = (float("nan"), float("nan"))  # 95% family bootstrap

    @property
    def n(self) -> int:
        """Questions counted."""
        return self.reliability.n


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else float("nan")


def ece_interval(
    p: np.ndarray,
    right: np.ndarray,
    family: np.ndarray,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    bins: int = N_BINS,
) -> tuple[float, float]:
    """95% percentile interval of ECE over ``n_boot`` resamples of the families (``family``:
    a code per question); NaN with fewer than MIN_FAMILIES families."""
    codes, dense = np.unique(family, return_inverse=True)
    return _ece_interval(dense.reshape(-1), len(codes), _bin_of(p, bins), p, right, n_boot, seed)


def _ece_interval(
    dense: np.ndarray,
    n_f: int,
    index: np.ndarray,
    p: np.ndarray,
    right: np.ndarray,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    bins: int = N_BINS,
) -> tuple[float, float]:
    """``ece_interval`` from each row's family (0..n_f-1) and bin."""
    if n_f < MIN_FAMILIES or not len(p):
        return float("nan"), float("nan")
    cell = dense.astype(narrow_type(0, n_f * bins))
    cell *= bins
    cell += index
    count, sum_p, n_right = _sums(cell, p, right, n_f * bins)
    del cell
    count_f = count.reshape(n_f, bins).astype(np.float64)
    sum_p, sum_right = sum_p.reshape(n_f, bins), n_right.reshape(n_f, bins).astype(np.float64)
    w = resample_weights(n_f, n_boot, seed).astype(np.float64)
    n_b, p_b, r_b = w @ count_f, w @ sum_p, w @ sum_right  # (B, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        ece = np.nansum(np.abs(r_b - p_b), axis=1) / n_b.sum(axis=1)
    lo, hi = np.percentile(ece, [2.5, 97.5])
    return float(lo), float(hi)


def _row(log: AnswerLog, chosen: np.ndarray, decoder: str, condition: str) -> CalibrationRow:
    """The row of the questions ``chosen`` (a mask). Read through the outcome ids: per
    question only its outcome, family and the float column a mean needs, never a column of
    every question, and the AUROC from counts per outcome."""
    outcome = log.q_outcome[chosen]
    family = gathered(log.units["family"], log.q_unit[chosen])  # codes: 0, 1, ...
    p = gathered(log.o_selected, outcome)
    right = gathered(log.o_holds == 1, outcome)
    index = gathered(_bin_of(log.o_selected, N_BINS), outcome)
    n_wrong = int(len(right) - np.count_nonzero(right))
    # Families numbered in sorted order, as np.unique numbers them.
    present = np.flatnonzero(_counts(family, 0))
    dense = np.zeros(len(present) and int(present[-1]) + 1, narrow_type(0, len(present)))
    dense[present] = np.arange(len(present))
    family_rank = gathered(dense, family)
    del family
    sums = _sums(index, p, right, N_BINS)
    interval = _ece_interval(family_rank, len(present), index, p, right)
    del family_rank, index
    mean_selected = _mean(p)
    del p
    # The AUROC from how many wrong and right questions each outcome (one entropy) has.
    n_o = len(log.o_selected)
    wrong_at, right_at = _counts(outcome[~right], n_o), _counts(outcome[right], n_o)
    met = np.flatnonzero(wrong_at + right_at)
    values, which = np.unique(log.o_entropy[met], return_inverse=True)
    by_value = [
        np.bincount(which.reshape(-1), at[met], len(values)).astype(np.int64)
        for at in (wrong_at, right_at)
    ]
    return CalibrationRow(
        decoder=decoder,
        condition=condition,
        reliability=_reliability(sums, N_BINS),
        mean_selected=mean_selected,
        accuracy=(len(right) - n_wrong) / len(right) if len(right) else float("nan"),
        entropy_right=_mean(gathered(log.o_entropy, outcome[right])),
        entropy_wrong=_mean(gathered(log.o_entropy, outcome[~right])),
        n_wrong=n_wrong,
        auroc=_auroc(*by_value),
        ece_interval=interval,
    )


def calibration_rows(
    log: AnswerLog,
    decoders: tuple[str, ...],
    conditions: tuple[str, ...],
    mask: np.ndarray | None = None,
) -> tuple[tuple[CalibrationRow, ...], tuple[CalibrationRow, ...]]:
    """Per decoder × condition rows, and one pooled row per condition (decoder ``"all"``).

    Only decoders and conditions with answerable questions get a row; ``mask`` selects units.
    """
    u = log.units
    # Per question, a block at a time (13.7 million questions at 1000×).
    q_ok = gathered(log.o_holds >= 0, log.q_outcome)
    if mask is not None:
        q_ok &= gathered(mask, log.q_unit)
    decoder_of = gathered(u["decoder"], log.q_unit)
    condition_of = gathered(u["condition"], log.q_unit)
    names = log.names
    present_d = [names["decoder"][d] for d in np.unique(decoder_of[q_ok])]
    present_c = [names["condition"][c] for c in np.unique(condition_of[q_ok])]
    dec_order = [d for d in decoders if d in present_d] + [
        d for d in present_d if d not in decoders
    ]
    cond_order = [c for c in conditions if c in present_c]
    cond_order += [c for c in present_c if c not in conditions]
    rows, pooled = [], []
    for condition in cond_order:
        in_condition = q_ok & (condition_of == names["condition"].index(condition))
        for decoder in dec_order:
            chosen = in_condition & (decoder_of == names["decoder"].index(decoder))
            if chosen.any():
                rows.append(_row(log, chosen, decoder, condition))
            del chosen
        # Each distinct question once: tree, tree_mean and tree_median ask the same ones.
        pooled.append(_row(log, in_condition & log.q_first, "all", condition))
    rank = {d: i for i, d in enumerate(dec_order)}
    rows.sort(key=lambda r: (rank[r.decoder], cond_order.index(r.condition)))
    return tuple(rows), tuple(pooled)
