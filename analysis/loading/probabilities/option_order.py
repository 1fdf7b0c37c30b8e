"""Answers' probabilities in interval order, for the predicted distributions (no I/O).

A question's options are labelled by their interval's index (``"0"`` .. ``"k−1"``, child j
of Algorithm 1's partition), but they may be listed in any order (a reversed run lists
them backwards). Here each answer's renormalised probabilities are put back in interval
order, with the index of the selected option; an answer whose labels are not the indices
0 .. k−1 gets chosen = −1 (its distribution is not rebuilt).
"""

from __future__ import annotations

import numpy as np

from .interval_steps import CELLS, FORMS, TREE
from .outcome_table import OutcomeTable

__all__ = ["OptionVectors", "option_vectors", "tree_paths"]

OptionVectors = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # p, start, chosen, true


def option_vectors(outcomes: OutcomeTable, used: np.ndarray) -> OptionVectors:
    """For outcomes ``used`` (WITH answers): their probabilities renormalised and in
    interval order, flat; each one's start in that array; the selected option's index
    and the index of the option holding y (-1: none, or labels not 0 .. k−1)."""
    raw, width = outcomes.raw_of(used)
    start = np.cumsum(width) - width
    owner = np.repeat(np.arange(len(used)), width)
    total = np.bincount(owner, raw, minlength=len(used))
    p = np.zeros(len(raw))
    chosen = np.full(len(used), -1, np.int64)
    label_id = outcomes.take("labels", used)
    picked = outcomes.take("picked", used)
    true = outcomes.take("true", used)
    truth = np.full(len(used), -1, np.int64)
    for lid in np.unique(label_id).tolist():
        labels = outcomes.labels[lid] if lid >= 0 else ()
        if not labels or set(labels) != {str(j) for j in range(len(labels))}:
            continue
        order = np.array([int(label) for label in labels])
        rows = np.flatnonzero(label_id == lid)
        at = (start[rows][:, None] + np.arange(len(order))[None, :]).ravel()
        to = (start[rows][:, None] + order[None, :]).ravel()
        p[to] = raw[at] / np.repeat(total[rows], len(order))
        chosen[rows] = order[picked[rows]]
        held = rows[true[rows] >= 0]
        truth[held] = order[true[held]]
    return p, start, chosen, truth


def tree_paths(
    form: np.ndarray, step_start: np.ndarray, step_count: np.ndarray, nested: np.ndarray
) -> np.ndarray:
    """Per unit: a nested path whose every step is a tree or direct-choice question."""
    partitioned = np.isin(form, [FORMS.index(TREE), FORMS.index(CELLS)]).astype(np.int64)
    if not len(step_start):
        return np.zeros(0, bool)
    cum = np.r_[0, np.cumsum(partitioned)]
    start = step_start.astype(np.int64)
    whole = cum[start + step_count.astype(np.int64)] - cum[start] == step_count
    return whole & (nested != 0)
