"""What one answer to one interval question comes to, as a plain tuple (no I/O, no state).

``outcome_table.OutcomeTable`` asks this once per distinct (answer, question, step) among
the answered questions on units' paths. The outcome depends only on the answer, the
question and the step's trace (choice, option count, true option, form), so the per-question
Python is paid once per distinct triple (a 100× affine run asks 1.4 million questions, of
which a few thousand distinct ones on the simulator).
"""

from __future__ import annotations

import math
from itertools import repeat
from typing import Any

import orjson

from .interval_steps import FORMS, HALVING

__all__ = ["MISMATCH", "UNUSABLE", "UNUSABLE_LABELLED", "WITH", "WITHOUT", "Outcome", "evaluate"]

# Outcome kinds, in the order the join's checks run.
MISMATCH = 0  # the selected label is not the one the trace recorded: not used
WITHOUT = 1  # no ``probabilities`` object
UNUSABLE = 2  # criteria that do not fit the step
UNUSABLE_LABELLED = 3  # fitting criteria (their label set is registered), but no usable sum
WITH = 4  # probabilities read and renormalised

# (kind, labels, picked, true, total, raw, selected, true probability, entropy, asked key):
# fields past ``kind`` are None or 0 where the kind has none.
Outcome = tuple[
    int,
    tuple[str, ...] | None,
    int,
    int,
    float,
    list[float] | None,
    float,
    float,
    float,
    tuple[Any, ...] | None,
]

_HALVING = FORMS.index(HALVING)
_DIGITS = [str(n) for n in range(256)]  # option labels of the true option
_NONE: Outcome = (MISMATCH, None, 0, 0, 0.0, None, 0.0, 0.0, 0.0, None)


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return max(float(value), 0.0)
    return 0.0


class _PLogs(dict[float, float]):
    """x -> x·log2 x (0 for x <= 0), each computed once: answers repeat a few values."""

    def __missing__(self, x: float) -> float:
        found = x * math.log2(x) if x > 0 else 0.0
        if len(self) < 100_000:
            self[x] = found
        return found


_PLOG = _PLogs()


def evaluate(answer: Any, question: Any, choice: str, k: int, truth: int, form: int) -> Outcome:
    """The outcome of ``answer`` to ``question`` at a step whose trace selected ``choice``
    among ``k`` options, with the true option ``truth`` (-1: none) and ``form`` (a FORMS
    index). Probabilities are read as the server sent them: a missing label gets 0, a
    value that is not a number counts as 0, and the vector is renormalised to sum 1."""
    if not isinstance(answer, dict) or answer.get("choice") != choice:
        return _NONE
    probabilities = answer.get("probabilities")
    if not isinstance(probabilities, dict):
        return (WITHOUT, *_NONE[1:])
    criteria = question.get("criteria") if isinstance(question, dict) else None
    # The options are the question's criteria labels, as many as the step had.
    if not isinstance(criteria, dict) or choice not in criteria or len(criteria) != k:
        return (UNUSABLE, *_NONE[1:])
    labels = tuple(criteria)
    unusable: Outcome = (UNUSABLE_LABELLED, labels, *_NONE[2:])
    raw = list(map(probabilities.get, labels, repeat(0.0)))  # a missing label: 0
    try:
        total = math.fsum(raw)  # fast path: every entry a number
        clean = min(raw) >= 0 and math.isfinite(total)
    except TypeError:
        clean = False
    if not clean:
        raw = [_number(probabilities.get(label, 0.0)) for label in labels]
        total = math.fsum(raw)
    if total <= 0:
        return unusable
    position = {label: i for i, label in enumerate(labels)}
    picked = position[choice]
    true = -1
    if truth >= 0:
        if form != _HALVING:
            label = _DIGITS[truth] if truth < 256 else str(truth)
            true = position.get(label, -2)
        else:
            true = picked if truth == 0 else 1 - picked
        if true < 0:  # labels are not the option indices the trace implies
            return unusable
    try:
        key: tuple[Any, ...] = (question.get("instructions"), tuple(criteria.items()))
        hash(key)
    except TypeError:  # an object or list description (allowed on the wire)
        key = (orjson.dumps(question),)
    # H = −Σ (x/T)·log2(x/T) = log2 T − Σ x·log2 x / T, over the raw values x.
    spread = math.fsum(map(_PLOG.__getitem__, raw))
    return (
        WITH,
        labels,
        picked,
        true,
        total,
        raw,
        raw[picked] / total,
        math.nan if true < 0 else raw[true] / total,
        max(math.log2(total) - spread / total, 0.0),
        key,
    )
