"""Paired means on common units: two sides' statistics over the units ok on both (no I/O).

A difference of two means is a paired comparison only when both means are over the same
units. Failures are never neutral (a deep tree decoder is exposed to more rounds, so it
fails more often), and a run cut short covers some jobs and not others; a mean over each
side's own outputs would then compare different questions. So:

- ``analyze`` compares each decoder with the reference (direct) on the jobs where both
  have an ok output;
- ``diff`` compares run A with run B on the (job, decoder) outputs ok in both runs.

Every other output is left out of both sides, and the number of common units is reported
with the difference. The families are resampled as for any other statistic; on each
replicate both sides are taken over the common units only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.logs.outputs import Outputs

from .design import Design
from .metrics import FamilyTotals, family_totals, log_ratio_codes, positions

__all__ = [
    "PairedTotals",
    "common_outputs",
    "common_with_reference",
    "job_codes",
]


@dataclass(frozen=True, eq=False)
class PairedTotals:
    """Two sides' per-family sums and counts over their common units, each (F, S, D, C).

    ``base`` is the side subtracted: the reference decoder (booked under each decoder it is
    compared with) or run A. ``other`` is each decoder, or run B. Both count the same units.
    """

    base: FamilyTotals
    other: FamilyTotals

    def __post_init__(self) -> None:
        # Common units: every unit counted on one side is counted on the other (same job,
        # same target, same pair partners), so a mismatch is a bug in building the sides.
        if not np.array_equal(self.base.counts, self.other.counts):
            raise ValueError("paired sides must count the same units")

    def delta(self) -> np.ndarray:
        """``other − base`` per statistic × decoder × condition; NaN with no common unit."""
        return self.other.point() - self.base.point()

    def units(self) -> np.ndarray:
        """How many common units each difference is over, shape (S, D, C)."""
        return self.other.counts.sum(axis=0)


def job_codes(outputs: Outputs) -> tuple[np.ndarray, int]:
    """A dense int code per row for its job id (first-seen order), and how many jobs."""
    return outputs.job_code.astype(np.int64), len(outputs.job_names)


def common_with_reference(
    outputs: Outputs, design: Design, reference: str | None
) -> PairedTotals | None:
    """Each decoder and ``reference`` over the jobs where both have an ok output.

    None when the design has no such reference decoder. The reference's column compares
    it with itself (a difference of exactly 0 over its own ok jobs).
    """
    if reference is None or reference not in design.decoders:
        return None
    jobs, n_jobs = outputs.job_code, len(outputs.job_names)  # int32: one per output
    dec = positions(outputs.decoder_names, design.decoders, outputs.decoder)
    ok_rows = _rows(np.flatnonzero(outputs.ok & (dec >= 0)))
    ok_by_job = np.zeros((n_jobs, len(design.decoders)), dtype=bool)
    ok_by_job[jobs[ok_rows], dec[ok_rows]] = True
    r = design.decoders.index(reference)
    # LAR's units are the common ones where both sides have a log ratio (log_accuracy.py).
    has_log = np.isfinite(log_ratio_codes(outputs))[outputs.number]
    log_by_job = np.zeros_like(ok_by_job)
    log_by_job[jobs[ok_rows], dec[ok_rows]] = has_log[ok_rows]
    # Each decoder's ok outputs whose job also has an ok reference output.
    rows = ok_rows[ok_by_job[jobs[ok_rows], r]]
    other = family_totals(
        outputs, design, rows=rows, log_ok=has_log[rows] & log_by_job[jobs[rows], r]
    )
    # The reference's ok outputs, booked once under every decoder that is ok on the same job:
    # a decoder at a time (issue 29), so that the rows booked are one decoder's (a million at
    # 1000×), not all of them. Each decoder's cells are its own, so the sums are the same.
    ref_rows = ok_rows[dec[ok_rows] == r]
    del ok_rows, dec
    ref_ok = ok_by_job[jobs[ref_rows]]
    del ok_by_job
    sums, counts = np.zeros_like(other.sums), np.zeros_like(other.counts)
    for d in range(len(design.decoders)):
        rows = ref_rows[ref_ok[:, d]]
        if len(rows):
            both = has_log[rows] & log_by_job[jobs[rows], d]
            part = family_totals(
                outputs, design, rows=rows, as_decoder=np.full(len(rows), d), log_ok=both
            )
            sums += part.sums
            counts += part.counts
    base = FamilyTotals(other.families, other.statistics, sums, counts)
    return PairedTotals(base, other)


def _rows(rows: np.ndarray) -> np.ndarray:
    """Row numbers as int32 where they fit: half the bytes of the int64 ``flatnonzero`` gives
    (6.1 million ok outputs at 1000×)."""
    return rows.astype(np.int32) if len(rows) and rows[-1] < 2**31 else rows


def _ok_keys(outputs: Outputs) -> dict[tuple[str, str], int]:
    names, jobs = outputs.decoder_names, outputs.job_names
    code, decoder = outputs.job_code, outputs.decoder
    return {(jobs[code[i]], names[decoder[i]]): i for i in np.flatnonzero(outputs.ok).tolist()}


def common_outputs(
    a: Outputs,
    b: Outputs,
    design: Design,
    families: tuple[str, ...],
    scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairedTotals:
    """Run A (base) and run B (other) over the (job, decoder) outputs ok in both runs.

    ``design`` and ``families`` must cover both runs (diff builds them from the union).
    ``scores``: each run's predicted-distribution scores (``metrics.family_totals``), kept
    to the common outputs scored on both sides.
    """
    keys_b = _ok_keys(b)
    pairs = [(i, j) for key, i in _ok_keys(a).items() if (j := keys_b.get(key)) is not None]
    rows_a = np.array([i for i, _ in pairs], np.int64)
    rows_b = np.array([j for _, j in pairs], np.int64)
    # LAR's units: the common outputs where both runs have a log ratio (log_accuracy.py).
    both = (
        np.isfinite(log_ratio_codes(a))[a.number[rows_a]]
        & np.isfinite(log_ratio_codes(b))[b.number[rows_b]]
    )
    kept_a = kept_b = None
    if scores is not None:
        # Scores' units: the common outputs where both runs have a score (n/a on either
        # side, e.g. no probabilities or a true leaf of mass 0, leaves the pair out).
        on_both = np.isfinite(scores[0][:, rows_a]) & np.isfinite(scores[1][:, rows_b])
        kept_a, kept_b = np.full_like(scores[0], np.nan), np.full_like(scores[1], np.nan)
        kept_a[:, rows_a] = np.where(on_both, scores[0][:, rows_a], np.nan)
        kept_b[:, rows_b] = np.where(on_both, scores[1][:, rows_b], np.nan)
    return PairedTotals(
        base=family_totals(a, design, families, rows=rows_a, log_ok=both, scores=kept_a),
        other=family_totals(b, design, families, rows=rows_b, log_ok=both, scores=kept_b),
    )
