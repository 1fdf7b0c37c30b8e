"""Index digits, index bits and the threshold CDFs: their outputs and answers, for the
Distributions section (the interval paths are ``interval_paths``; these are not intervals).

A chain decoder's output has one question per position, named by its ``qmap`` step:

=====================================  =======  ==========================  =================
decoder                                step     position (chain order)      labels
=====================================  =======  ==========================  =================
``digits``                             ``dN``   N (the highest digit is 1)  ``"0"`` .. ``"9"``
``bits``, ``bits_plain``               ``bW``   the bit of weight W         ``"0"``, ``"1"``
``parallel_thresholds``,               ``tI``   I (``x <= L + (I−1)·eps``)  ``"yes"``, ``"no"``
``threshold_cdf``
=====================================  =======  ==========================  =================

The outputs pass keeps, per ok output of such a decoder (the last line per (job, decoder)
wins), its condition, family, grid, y in cells and the read grid index; the requests pass
keeps, per answer to one of its questions, the probabilities over the labels (renormalised
as the interval join does: a missing label or a non-number is 0; a sum of 0 or no
probabilities object: none) and the selected label. Which answer counts: the first per
(output, position) whose selected label is the one the output read (digits and bits; a
threshold's output does not depend on its labels). No arithmetic on the distributions here.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .interning import Interner

__all__ = [
    "BITS",
    "CHAIN_DECODERS",
    "DIGITS",
    "THRESHOLDS",
    "ChainAnswers",
    "ChainLog",
    "ChainOutputs",
    "chain_positions",
    "chain_step",
    "empty_chain_log",
]

DIGITS, BITS, THRESHOLDS = 0, 1, 2
CHAIN_DECODERS = {
    "digits": DIGITS,
    "bits": BITS,
    "bits_plain": BITS,
    "parallel_thresholds": THRESHOLDS,
    "threshold_cdf": THRESHOLDS,
}
_LABELS = (tuple(str(d) for d in range(10)), ("0", "1"), ("yes", "no"))
_PREFIX = ("d", "b", "t")


def chain_positions(kind: int, n_cells: int) -> int:
    """How many questions an output of ``kind`` asks on an N-cell grid."""
    if kind == DIGITS:
        return len(str(n_cells - 1))
    if kind == BITS:
        return max(1, (n_cells - 1).bit_length())
    return n_cells - 1


def chain_step(kind: int, key: str) -> int:
    """The position (module doc) of qmap step ``key``; -1 when it is not one of ``kind``'s.
    Bits: the weight's exponent (b64 -> 6)."""
    if not key.startswith(_PREFIX[kind]) or not key[1:].isdigit():
        return -1
    number = int(key[1:])
    if kind == BITS:
        return number.bit_length() - 1 if number > 0 and number & (number - 1) == 0 else -1
    return number if number >= 1 else -1


@dataclass(frozen=True, eq=False)
class ChainLog:
    """Chain outputs and the answers to their questions, as columns.

    Units: ``job``/``decoder``/``condition`` codes into the AnswerLog's names, ``family``
    into ``family_names`` (the chains' own), ``kind``, ``n_cells``, ``index`` (the grid
    index read, -1: none), ``target_cells`` (y in cells), ``lower`` and ``eps`` (floats).
    Rows, one per counted answer with probabilities: ``r_unit``, ``r_position``,
    ``r_chosen`` (index of the selected label), and the renormalised probabilities
    ``p[r_start : r_start + width]`` over the kind's labels in order.
    """

    units: dict[str, np.ndarray]
    family_names: tuple[str, ...]
    r_unit: np.ndarray
    r_position: np.ndarray
    r_chosen: np.ndarray
    r_start: np.ndarray
    p: np.ndarray
    without: int = 0  # answers without usable probabilities (the output is then n/a)
    mismatch: int = 0  # answers whose label is not the one the output read: not used

    def __len__(self) -> int:
        return len(self.units["job"])


_UNIT_INTS = ("job", "decoder", "condition", "family", "kind", "n_cells", "index")
_UNIT_FLOATS = ("target_cells", "lower", "eps")


def empty_chain_log() -> ChainLog:
    """No chain outputs."""
    units: dict[str, np.ndarray] = {n: np.zeros(0, np.int64) for n in _UNIT_INTS}
    units |= {n: np.zeros(0) for n in _UNIT_FLOATS}
    none = np.zeros(0, np.int64)
    return ChainLog(units, (), none, none, none, none, np.zeros(0))


# What an ok chain output line keeps but its job and decoder: condition and family codes,
# kind, N, the grid index read (-1), y in cells, L and eps.
ChainRow = tuple[int, int, int, int, int, float, float, float]


class ChainOutputs:
    """The outputs pass's side: the last line per (job, decoder) of the chain decoders."""

    def __init__(self) -> None:
        self.families = Interner()
        self.rows: dict[tuple[int, int], ChainRow] = {}

    def row(
        self, record: Any, condition: int, kind: int, numbers: tuple[Any, ...], lower: float
    ) -> ChainRow:
        """What an ok line keeps (``numbers``: PathsReader.numbers; exact)."""
        _, position, found, _ = numbers
        index = int(found) if found.denominator == 1 else -1
        family = record.get("family", record.get("case", record["job"]))
        family = family if isinstance(family, str) else str(family)
        eps = float(record["eps"]) if isinstance(record["eps"], str | int | float) else math.nan
        return (
            condition,
            self.families.code(family),
            kind,
            int(record["N"]),
            index,
            float(position),
            lower,
            eps,
        )

    def place(self, job: int, decoder: int, row: ChainRow | None) -> None:
        """The latest line of (job, decoder): a chain output's row, or anything else (None)."""
        if row is None:
            self.rows.pop((job, decoder), None)
        else:
            self.rows[(job, decoder)] = row


@dataclass
class ChainAnswers:
    """The requests pass's side: the answers to chain questions, a chunk of rows at a time."""

    outputs: ChainOutputs
    parsed: dict[tuple[int, int], tuple[int, tuple[float, ...] | None]] = field(
        default_factory=dict
    )
    unit: array[int] = field(default_factory=lambda: array("q"))
    position: array[int] = field(default_factory=lambda: array("q"))
    chosen: array[int] = field(default_factory=lambda: array("q"))
    p: array[float] = field(default_factory=lambda: array("d"))
    seen: set[tuple[int, int]] = field(default_factory=set)
    without: int = 0
    mismatch: int = 0

    def __post_init__(self) -> None:
        rows = self.outputs.rows
        self.keys = list(rows)
        self.unit_of = {key: i for i, key in enumerate(self.keys)}

    def add(
        self,
        job: np.ndarray,
        decoder: np.ndarray,
        position: np.ndarray,
        answer: np.ndarray,
        answer_bytes: Any,
        fresh_from: int,
    ) -> None:
        """Rows in log order: job and decoder codes, position, answer id (-1: none)."""
        rows = self.outputs.rows
        for j, d, pos, a in zip(
            job.tolist(), decoder.tolist(), position.tolist(), answer.tolist(), strict=True
        ):
            unit = self.unit_of.get((j, d))
            if unit is None or (unit, pos) in self.seen:
                continue
            kind, index = rows[self.keys[unit]][2], rows[self.keys[unit]][4]
            chosen, p = self._read(a, kind, answer_bytes, fresh_from)
            if kind != THRESHOLDS and chosen != _read_label(
                kind, index, pos, rows, self.keys[unit]
            ):
                self.mismatch += 1
                continue
            self.seen.add((unit, pos))
            if p is None:
                self.without += 1
                continue
            self.unit.append(unit)
            self.position.append(pos)
            self.chosen.append(chosen)
            self.p.extend(p)

    def _read(
        self, a: int, kind: int, answer_bytes: Any, fresh_from: int
    ) -> tuple[int, tuple[float, ...] | None]:
        """(selected label's index or -1, renormalised probabilities or None) of answer a."""
        if a < 0:
            return -1, None
        known = self.parsed.get((a, kind))
        if known is not None:
            return known
        found = _evaluate(orjson.loads(answer_bytes(a)), _LABELS[kind])
        if a < fresh_from:
            self.parsed[(a, kind)] = found
        return found

    def result(self, n_decoders: int) -> ChainLog:
        """The columns (module doc)."""
        rows = self.outputs.rows
        units: dict[str, np.ndarray] = {}
        keys = np.array(self.keys, np.int64).reshape(-1, 2)
        units["job"], units["decoder"] = keys[:, 0], keys[:, 1]
        values = list(rows.values())
        for i, name in enumerate(("condition", "family", "kind", "n_cells", "index")):
            units[name] = np.array([r[i] for r in values], np.int64)
        for i, name in enumerate(_UNIT_FLOATS, start=5):
            units[name] = np.array([r[i] for r in values], np.float64)
        kind = units["kind"]
        width = np.array([len(_LABELS[k]) for k in range(3)], np.int64)
        unit = np.frombuffer(self.unit, np.int64).copy()
        r_width = width[kind[unit]] if len(unit) else np.zeros(0, np.int64)
        return ChainLog(
            units=units,
            family_names=tuple(self.outputs.families.strings),
            r_unit=unit,
            r_position=np.frombuffer(self.position, np.int64).copy(),
            r_chosen=np.frombuffer(self.chosen, np.int64).copy(),
            r_start=np.cumsum(r_width) - r_width,
            p=np.frombuffer(self.p, np.float64).copy(),
            without=self.without,
            mismatch=self.mismatch,
        )


def _read_label(kind: int, index: int, position: int, rows: dict[Any, ChainRow], key: Any) -> int:
    """The label index the output read at ``position``: its digit or bit (-2: unknown)."""
    if index < 0:
        return -2
    if kind == BITS:
        return (index >> position) & 1
    count = chain_positions(DIGITS, rows[key][3])
    return int(str(index).zfill(count)[position - 1]) if 1 <= position <= count else -2


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return max(float(value), 0.0)
    return 0.0


def _evaluate(said: Any, labels: tuple[str, ...]) -> tuple[int, tuple[float, ...] | None]:
    """An answer's selected label index (-1: not one of ``labels``) and its probabilities
    over ``labels`` renormalised (None: no probabilities object, or a sum of 0)."""
    if not isinstance(said, dict):
        return -1, None
    choice = said.get("choice")
    chosen = labels.index(choice) if choice in labels else -1
    probabilities = said.get("probabilities")
    if not isinstance(probabilities, dict):
        return chosen, None
    raw = [_number(probabilities.get(label, 0.0)) for label in labels]
    total = sum(raw)
    if not total > 0:
        return chosen, None
    return chosen, tuple(x / total for x in raw)
