"""Distinct answer outcomes, each evaluated once, as columns an outcome id indexes (no I/O).

An outcome (``answer_outcomes.evaluate``) depends only on the answer, the question and
the step's trace (choice, option count, true option, form). The join gives each distinct
(answer id, question id, choice, k, truth, form) of a chunk of rows an outcome id with
``np.unique`` and evaluates only the ones not met before; the question rows then keep an
outcome id, and what a table reads per question (selected and true probability, whether
the pick holds y, entropy, options) is a column over the distinct outcomes.

On the simulator a 100× affine run has 6,191 distinct outcomes for 1.4 million questions;
on a real model the probabilities differ from answer to answer, so the outcomes grow with
the questions answered: 61 bytes of columns each, plus the raw probabilities. Only the
keys of answers kept for the whole read (``asked.ANSWERS_KEPT``) are remembered in
``ids``; an outcome of a chunk's own answer gets its row and no key.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from .answer_outcomes import WITH, evaluate
from .asked import AskedChunk

__all__ = ["OutcomeTable"]

_FLOATS = ("total", "selected", "true_p", "entropy")
# Each int column's array type: on a real model there is a row per answered question, so
# they are kept narrow (29 bytes a row, not 56); an overflow raises, it never wraps.
_INTS = {
    "kind": "b",
    "labels": "i",
    "key": "i",
    "picked": "i",
    "true": "i",
    "raw_start": "q",
    "width": "i",
}


class OutcomeTable:
    """Outcome ids for rows of (answer, question, step); per-outcome columns (``column``)."""

    def __init__(self, choices: Sequence[str]) -> None:
        self.choices = choices
        self.ids: dict[tuple[int, ...], int] = {}
        self.ints = {name: array(code) for name, code in _INTS.items()}
        self.floats = {name: array("d") for name in _FLOATS}
        self.raw = array("d")  # every WITH outcome's raw probabilities, flat
        # Label tuples and asked keys (the first-of-identical-questions rule) as ids.
        self.label_ids: dict[tuple[str, ...], int] = {}
        self.labels: list[tuple[str, ...]] = []
        self.key_ids: dict[Any, int] = {}
        self.parsed: dict[int, Any] = {}  # question set -> decoded, for the current chunk

    def __len__(self) -> int:
        return len(self.ints["kind"])

    def ids_of(
        self,
        answer: np.ndarray,
        question: np.ndarray,
        step: dict[str, np.ndarray],
        chunk: AskedChunk,
    ) -> np.ndarray:
        """The outcome id of each row (``step``: the rows' choice, k, truth and form;
        ``chunk``: the rows' tables). An outcome of one of the chunk's own answers is not
        remembered: its answer id never recurs."""
        parts = [answer, question, step["choice"], step["k"], step["truth"], step["form"]]
        if not len(answer):
            return np.empty(0, np.int32)
        columns = [np.asarray(p, np.int64) for p in parts]
        packed = _packed(columns)
        if packed is None:  # ids too large to pack in 63 bits: sort the rows whole
            rows, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
        else:
            _, first, inverse = np.unique(packed, return_index=True, return_inverse=True)
            rows = np.stack([c[first] for c in columns], axis=1)
        found = np.empty(len(rows), np.int32)
        for j, key in enumerate(map(tuple, rows.tolist())):
            at = self.ids.get(key)
            if at is None:
                at = self._add(key, chunk)
                if key[0] < chunk.fresh_from:
                    self.ids[key] = at
            found[j] = at
        self.parsed.clear()
        return found[inverse.reshape(-1)]

    def _add(self, key: tuple[int, ...], chunk: AskedChunk) -> int:
        a, q, choice, k, truth, form = key
        said = None if a < 0 else orjson.loads(chunk.answer_bytes(a))
        at, qid = chunk.questions[q]
        found = self.parsed.get(at)
        if found is None:
            found = self.parsed[at] = orjson.loads(chunk.question_sets[at])
        asks = found.get(qid)
        kind, labels, picked, true, total, raw, selected, true_p, entropy, asked = evaluate(
            said, asks, self.choices[choice], k, truth, form
        )
        label_id = -1
        if labels is not None:
            label_id = self.label_ids.setdefault(labels, len(self.labels))
            if label_id == len(self.labels):
                self.labels.append(labels)
        key_id = -1 if asked is None else self.key_ids.setdefault(asked, len(self.key_ids))
        width = len(raw) if kind == WITH and raw is not None else 0
        ints = (kind, label_id, key_id, picked, true, len(self.raw), width)
        for name, value in zip(_INTS, ints, strict=True):
            self.ints[name].append(value)
        for name, x in zip(_FLOATS, (total, selected, true_p, entropy), strict=True):
            self.floats[name].append(x)
        if width:
            assert raw is not None
            self.raw.extend(raw)
        return len(self) - 1

    def take(self, name: str, ids: np.ndarray) -> np.ndarray:
        """Column ``name`` at outcome ``ids`` (a copy: the columns keep growing)."""
        if name in self.floats:
            return np.frombuffer(self.floats[name], np.float64)[ids]
        column = self.ints[name]
        return np.frombuffer(column, np.dtype(column.typecode))[ids].astype(np.int64)

    def raw_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The raw probabilities of WITH outcomes ``ids``, flat, and each one's width."""
        width = self.take("width", ids)
        start = self.take("raw_start", ids)
        owner = np.repeat(np.arange(len(ids)), width)
        j = np.arange(len(owner)) - np.repeat(np.cumsum(width) - width, width)
        return np.frombuffer(self.raw, np.float64)[start[owner] + j], width


def _packed(columns: list[np.ndarray]) -> np.ndarray | None:
    """The rows as one int64 each (mixed radix over the columns' ranges), or None when
    they need more than 63 bits. Every column is >= -1."""
    packed = np.zeros(len(columns[0]), np.int64)
    span = 1
    for column in columns:
        low = int(column.min())
        size = int(column.max()) - low + 1
        span *= size
        if span >= 1 << 63:
            return None
        packed = packed * size + (column - low)
    return packed
