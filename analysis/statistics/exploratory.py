"""The exploratory suite's own computation: threshold query groups whose raw answers
decreased before projection (paper, "Numerical distributions need a separate validation")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.loading.logs.outputs import Outputs

__all__ = ["ThresholdDecreases", "threshold_decreases"]


@dataclass(frozen=True)
class ThresholdDecreases:
    """Query groups (jobs) of one threshold decoder whose raw CDF answers decreased.

    A query group is one job (question × option order × repeat): its threshold questions
    are asked together, so the job is the unit the paper counts ("25 of 48").
    """

    decoder: str
    decreased: int  # distinct jobs with extra.decreased true
    groups: int  # distinct jobs with the flag recorded (the "of n")
    unrecorded: int  # distinct jobs with an output of this decoder but no flag (failed)


def threshold_decreases(
    outputs: Outputs, decoders: tuple[str, ...]
) -> tuple[ThresholdDecreases, ...]:
    """``k of n`` per decoder of ``decoders`` (in that order) that records ``extra.decreased``.

    Decoders without any recorded flag (every non-threshold decoder) are left out.
    """
    found = []
    for decoder in decoders:
        if decoder not in outputs.decoder_names:
            continue
        rows = np.flatnonzero(outputs.decoder == outputs.decoder_names.index(decoder))
        flags = outputs.decreased[rows]
        if not np.any(flags >= 0):
            continue

        def jobs(keep: np.ndarray, rows: np.ndarray = rows) -> set[str]:
            # Distinct job ids: the loader keeps one row per (job, decoder) already, but
            # counting ids states the unit and would stay right if that ever changed.
            return {outputs.job_names[i] for i in outputs.job_code[rows[keep]].tolist()}

        recorded = jobs(flags >= 0)
        everything = jobs(np.ones(len(rows), dtype=bool))
        found.append(
            ThresholdDecreases(
                decoder=decoder,
                decreased=len(jobs(flags == 1)),
                groups=len(recorded),
                unrecorded=len(everything - recorded),
            )
        )
    return tuple(found)
