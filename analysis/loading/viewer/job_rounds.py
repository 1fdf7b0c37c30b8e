"""The job viewer's columns: one run folder's jobs, outputs, questions and probabilities
(``rounds.py`` reads them from the logs; ``column_cache`` keeps them)."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

__all__ = [
    "COLUMNS",
    "NONE",
    "NO_PROBABILITY",
    "PROBABILITY_SCALE",
    "JobRounds",
    "QuestionSpec",
    "quantised",
]

NONE = 0xFFFFFFFF  # "no string" in a string-id column
PROBABILITY_SCALE = 10_000  # probabilities are shown with four decimals
NO_PROBABILITY = 65535  # none returned


def quantised(probs: np.ndarray) -> np.ndarray:
    """float32 probabilities -> uint16 in 1/PROBABILITY_SCALE (NaN -> NO_PROBABILITY).

    The viewer shows four decimals, so its columns keep no more: half of float32's bytes
    (19 million probabilities in a 100× affine run).
    """
    out = np.full(len(probs), NO_PROBABILITY, np.uint16)
    known = ~np.isnan(probs)
    out[known] = np.clip(np.rint(probs[known] * PROBABILITY_SCALE), 0, PROBABILITY_SCALE)
    return out


# Column name -> array typecode (I: uint32, H: uint16, h: int16, B: uint8, f: float32).
# ``probabilities`` are fixed-point: see ``quantised``.
COLUMNS = {
    "job_id": "I",
    "job_case": "I",
    "job_family": "I",
    "job_domain": "B",
    "job_condition": "B",
    "job_order": "B",
    "job_repeat": "H",
    "out_job": "I",
    "out_decoder": "B",
    "out_ok": "B",
    "out_target": "I",
    "out_value": "I",
    "out_cell": "I",
    "out_grid": "I",
    "out_ape": "f",
    "out_rounds": "h",
    "out_trace_start": "I",
    "out_trace_len": "H",
    "trace_step": "I",
    "q_output": "I",
    "q_round": "H",
    "q_step": "I",
    "q_spec": "I",
    "q_state": "I",
    "q_choice": "h",
    "q_target": "h",
    "q_attempt": "B",
    "probabilities": "H",
}


@dataclass(frozen=True)
class QuestionSpec:
    """A question as sent, minus the state: its type, instructions and options in order."""

    type: str
    instructions: str
    labels: tuple[str, ...]
    texts: tuple[str, ...]


@dataclass(eq=False)
class JobRounds:
    """Columns of one run folder for the job viewer.

    Jobs, outputs (one per (job, decoder); the last line wins), questions (one per wire
    question id of an answered request line, in log order) and their probabilities (one per
    option of each question, in the order sent; in 1/PROBABILITY_SCALE, NO_PROBABILITY where
    none was returned). String columns
    hold ids into ``strings``; ``NONE`` marks an absent value.
    """

    strings: list[str]
    decoders: list[str]
    domains: list[str]
    conditions: list[str]
    orders: list[str]
    specs: list[QuestionSpec]
    # jobs
    job_id: array  # string id
    job_case: array
    job_family: array
    job_domain: array
    job_condition: array
    job_order: array
    job_repeat: array
    # outputs
    out_job: array
    out_decoder: array
    out_ok: array
    out_target: array  # string id of the exact decimal
    out_value: array
    out_cell: array  # string id of "[lo, hi)" text
    out_grid: array  # string id of "L · eps · N" text
    out_ape: array  # float32 percent, NaN where undefined or failed
    out_rounds: array
    out_trace_start: array
    out_trace_len: array
    trace_step: array  # string id of one trace step's JSON text
    # questions
    q_output: array
    q_round: array
    q_step: array  # string id of the decoder step ("2", "d1", "b64")
    q_spec: array
    q_state: array  # string id of the request's state as JSON text
    q_choice: array  # position of the chosen label in the spec, -1 when none
    q_target: array  # position of the target's label, -1 when unknown
    q_attempt: array  # attempt number of the answered line
    probabilities: array  # uint16 fixed-point (``quantised``), per option, in log order
    failed_attempts: dict[tuple[int, int], list[tuple[int, str, str]]]  # (job, round) -> errors
    requests_present: bool

    @property
    def n_outputs(self) -> int:
        """Number of (job, decoder) outputs."""
        return len(self.out_job)
