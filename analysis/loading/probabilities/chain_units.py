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
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from analysis.loading.columns.interning import Interner

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


def chain_positions(kind: np.ndarray, n_cells: np.ndarray) -> np.ndarray:
    """How many questions an output of ``kind`` asks on an N-cell grid, per output: the
    digits of N − 1, its bits (at least 1), or N − 1 thresholds (exact integer compares)."""
    kind, top = np.asarray(kind, np.int64), np.asarray(n_cells, np.int64) - 1
    digits = 1 + sum((top >= 10**i).astype(np.int64) for i in range(1, 19))
    bits = 1 + sum((top >= 1 << i).astype(np.int64) for i in range(1, 63))
    return np.where(kind == DIGITS, digits, np.where(kind == BITS, bits, top))


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


class ChainAnswers:
    """The requests pass's side: the answers to chain questions, a chunk of rows at a time.

    Per row only ints are kept (unit, position, parsed answer); each distinct (answer,
    kind) is parsed once (the kept answers' for the whole read, a chunk's own answers once
    each). Which rows count is decided at the end, in NumPy (module doc).
    """

    def __init__(self, outputs: ChainOutputs) -> None:
        self.rows = list(outputs.rows.values())
        keys = np.array(list(outputs.rows), np.int64).reshape(-1, 2)
        self.keys = keys
        self.families = tuple(outputs.families.strings)
        self.n_decoders = int(keys[:, 1].max()) + 1 if len(keys) else 0
        n_jobs = int(keys[:, 0].max()) + 1 if len(keys) else 0
        self.unit_at = np.full(n_jobs * self.n_decoders, -1, np.int64)
        self.unit_at[keys[:, 0] * self.n_decoders + keys[:, 1]] = np.arange(len(keys))
        self.kind = np.array([r[2] for r in self.rows], np.int64)
        self.parsed: dict[int, int] = {}  # kept answer id · 3 + kind -> parsed answer
        self.chosen: list[int] = []  # per parsed answer: the selected label's index (-1)
        self.p_at: list[int] = []  # and where its probabilities start in ``p`` (-1: none)
        self.p: list[float] = []
        self.found: dict[str, list[np.ndarray]] = {"unit": [], "position": [], "answer": []}

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
        job, decoder = job.astype(np.int64), decoder.astype(np.int64)
        known = (job * self.n_decoders + decoder < len(self.unit_at)) & (decoder < self.n_decoders)
        unit = np.full(len(job), -1, np.int64)
        unit[known] = self.unit_at[job[known] * self.n_decoders + decoder[known]]
        rows = np.flatnonzero(unit >= 0)
        unit, answer = unit[rows], answer[rows].astype(np.int64)
        key = answer * 3 + self.kind[unit]
        parsed = np.empty(len(rows), np.int64)
        for k in np.unique(key).tolist():
            a, kind = divmod(k, 3)
            at = self.parsed.get(k) if a < fresh_from else None
            if at is None:
                at = self._parse(a, kind, answer_bytes)
                if 0 <= a < fresh_from:
                    self.parsed[k] = at
            parsed[key == k] = at
        self.found["unit"].append(unit)
        self.found["position"].append(position[rows].astype(np.int64))
        self.found["answer"].append(parsed)

    def _parse(self, a: int, kind: int, answer_bytes: Any) -> int:
        """Parse answer ``a`` for ``kind``'s labels; its number among the parsed."""
        chosen, p = (
            _evaluate(orjson.loads(answer_bytes(a)), _LABELS[kind]) if a >= 0 else (-1, None)
        )
        self.chosen.append(chosen)
        self.p_at.append(-1 if p is None else len(self.p))
        if p is not None:
            self.p.extend(p)
        return len(self.chosen) - 1

    def result(self) -> ChainLog:
        """The columns (module doc): mismatched labels dropped, then the first answer per
        (unit, position) counted, those without probabilities left out (and counted)."""
        units: dict[str, np.ndarray] = {"job": self.keys[:, 0], "decoder": self.keys[:, 1]}
        for i, name in enumerate(("condition", "family", "kind", "n_cells", "index")):
            units[name] = np.array([r[i] for r in self.rows], np.int64)
        for i, name in enumerate(_UNIT_FLOATS, start=5):
            units[name] = np.array([r[i] for r in self.rows], np.float64)
        unit, position, answer = (
            np.concatenate(self.found[n]) if self.found[n] else np.zeros(0, np.int64)
            for n in ("unit", "position", "answer")
        )
        chosen = np.array(self.chosen, np.int64)[answer]
        p_at = np.array(self.p_at, np.int64)[answer]
        read = _read_labels(units, unit, position)
        kind = units["kind"][unit]
        count = _counts(units)[unit]
        # A position the output's grid does not ask (a log from another grid) counts nowhere.
        low = np.where(kind == BITS, 0, 1)
        asked = (position >= low) & (position < low + count)
        unit, position, answer = unit[asked], position[asked], answer[asked]
        chosen, p_at, read, kind = chosen[asked], p_at[asked], read[asked], kind[asked]
        matched = (kind == THRESHOLDS) | (chosen == read)
        mismatch = int(len(unit) - np.count_nonzero(matched))
        at = np.flatnonzero(matched)
        _, first = np.unique(unit[at] * _POSITIONS + position[at], return_index=True)
        at = np.sort(at[first])  # log order
        usable = at[p_at[at] >= 0]
        width = np.array([len(labels) for labels in _LABELS], np.int64)[units["kind"][unit[usable]]]
        flat = np.repeat(p_at[usable], width) + (
            np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width)
        )
        return ChainLog(
            units=units,
            family_names=self.families,
            r_unit=unit[usable],
            r_position=position[usable],
            r_chosen=chosen[usable],
            r_start=np.cumsum(width) - width,
            p=np.array(self.p, np.float64)[flat],
            without=len(at) - len(usable),
            mismatch=mismatch,
        )


def _counts(units: dict[str, np.ndarray]) -> np.ndarray:
    """Per unit, how many positions its output asks."""
    return chain_positions(units["kind"], units["n_cells"])


_POSITIONS = 1 << 16  # positions per unit in the (unit, position) key: N − 1 thresholds at most


def _read_labels(
    units: dict[str, np.ndarray], unit: np.ndarray, position: np.ndarray
) -> np.ndarray:
    """Per row, the label index its output read at its position: the digit or bit of the
    read index (-2: unknown, or a threshold's)."""
    index, kind = units["index"][unit], units["kind"][unit]
    count = _counts(units)[unit]
    power = np.clip(count - position, 0, 18)
    digit = (index // np.power(10, power)) % 10
    bit = (index >> np.clip(position, 0, 62)) & 1
    found = np.where(kind == DIGITS, digit, np.where(kind == BITS, bit, -2))
    return np.where(index >= 0, found, -2)


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
