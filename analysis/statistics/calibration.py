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

from analysis.loading.answers import AnswerLog

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


def reliability(p: np.ndarray, right: np.ndarray, bins: int = N_BINS) -> Reliability:
    """Bin ``p`` (in [0, 1]) into ``bins`` equal widths, the last closed, against ``right``."""
    # 1e-9: a renormalised 0.3 may come out one ulp below; the inputs have 2 decimals.
    index = np.clip(np.floor(p * bins + 1e-9).astype(np.int64), 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.bincount(index, p, bins) / count
        accuracy = np.bincount(index, right.astype(np.float64), bins) / count
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
    scores = np.concatenate([positive, negative])
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # 1-based average ranks
    n_pos, n_neg = len(positive), len(negative)
    u_stat = ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2.0
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
    n_f = len(codes)
    if n_f < MIN_FAMILIES or not len(p):
        return float("nan"), float("nan")
    index = np.clip(np.floor(p * bins + 1e-9).astype(np.int64), 0, bins - 1)
    cell = dense * bins + index
    size = n_f * bins
    count = np.bincount(cell, minlength=size).reshape(n_f, bins).astype(np.float64)
    sum_p = np.bincount(cell, p, size).reshape(n_f, bins)
    sum_right = np.bincount(cell, right.astype(np.float64), size).reshape(n_f, bins)
    w = resample_weights(n_f, n_boot, seed).astype(np.float64)
    n_b, p_b, r_b = w @ count, w @ sum_p, w @ sum_right  # (B, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        ece = np.nansum(np.abs(r_b - p_b), axis=1) / n_b.sum(axis=1)
    lo, hi = np.percentile(ece, [2.5, 97.5])
    return float(lo), float(hi)


def _row(log: AnswerLog, rows: np.ndarray, decoder: str, condition: str) -> CalibrationRow:
    # Read through the outcome ids, only at ``rows``: no column over every question.
    p, right = log.per_question("selected", rows), log.per_question("holds", rows) == 1
    entropy = log.per_question("entropy", rows)
    family = log.units["family"][log.q_unit[rows]]
    return CalibrationRow(
        decoder=decoder,
        condition=condition,
        reliability=reliability(p, right),
        mean_selected=_mean(p),
        accuracy=_mean(right.astype(np.float64)),
        entropy_right=_mean(entropy[right]),
        entropy_wrong=_mean(entropy[~right]),
        n_wrong=int((~right).sum()),
        auroc=auroc(entropy[~right], entropy[right]),
        ece_interval=ece_interval(p, right, family),
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
    q_ok = (log.o_holds >= 0)[log.q_outcome]
    if mask is not None:
        q_ok &= mask[log.q_unit]
    decoder_of = u["decoder"][log.q_unit]
    condition_of = u["condition"][log.q_unit]
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
            chosen = np.flatnonzero(in_condition & (decoder_of == names["decoder"].index(decoder)))
            if len(chosen):
                rows.append(_row(log, chosen, decoder, condition))
        # Each distinct question once: tree, tree_mean and tree_median ask the same ones.
        pooled.append(_row(log, np.flatnonzero(in_condition & log.q_first), "all", condition))
    rank = {d: i for i, d in enumerate(dec_order)}
    rows.sort(key=lambda r: (rank[r.decoder], cond_order.index(r.condition)))
    return tuple(rows), tuple(pooled)
