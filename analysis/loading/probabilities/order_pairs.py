"""Which questions the two option orders of one case asked alike (paper: order control).

The ascending and reversed runs of one case, condition and repeat ask the same first
question; their paths may part later. A step is shared when both paths reached it with the
same form, parent interval and options (and, for bisection, the same cuts): only there can
their two returned distributions be averaged label by label. No I/O.

The steps' questions are read from the distinct paths (``path_table.PathStore``), not from
per-unit copies, and the pairs are walked a block at a time: at 1000× there are 6.5 million
shared steps, and each int64 temporary over all of them at once costs 50 MB or more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.loading.columns.compact import narrow_type

from .interval_steps import CUTS, FORMS

__all__ = ["Questions", "group_key", "pair_steps", "pair_units"]

_BLOCK = 1 << 15  # pairs walked at once: ~10 int64 temporaries per shared step, ~6 MB


@dataclass(frozen=True)
class Questions:
    """What each step of each distinct path asked: ``form``, parent ``a``..``b`` and ``k``
    per path step, ``start`` (path -> its first step) and ``cuts`` (path step -> bounds)."""

    form: np.ndarray
    a: np.ndarray
    b: np.ndarray
    k: np.ndarray
    start: np.ndarray
    cuts: dict[int, tuple[int, ...]]


def group_key(columns: list[np.ndarray], room: int = 1) -> np.ndarray:
    """One integer per row whose order is the rows' lexicographic order over ``columns``
    (equal rows, equal keys): mixed radix when the ranges' product fits, else ranks. Its
    type holds ``room`` times the largest key: int32 when that fits, else int64."""
    if not len(columns[0]):
        return np.empty(0, np.int64)
    lows = [int(c.min()) for c in columns]
    spans = [int(c.max()) - low + 1 for c, low in zip(columns, lows, strict=True)]
    product = math.prod(spans) * room
    if product < 2**62:
        small = product < 2**31 and all(c.dtype.itemsize <= 4 for c in columns)
        key: np.ndarray[Any, np.dtype[np.signedinteger[Any]]] = np.zeros(
            len(columns[0]), np.int32 if small else np.int64
        )
        for column, low, span in zip(columns, lows, spans, strict=True):
            # In place: no copy of each column (4 million units at 1000×). A sum beyond
            # int32 wraps and the subtraction wraps it back: the key itself fits.
            key *= span
            key += column
            key -= low
        return key
    stacked = np.stack([c.astype(np.int64) for c in columns], axis=1)
    return np.unique(stacked, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def pair_units(
    unit: dict[str, np.ndarray], order_names: Sequence[str], orders: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """(first-order unit, second-order unit) of every (case, condition, repeat, decoder)
    both ``orders`` reached, in that key's order; of two units of one order and key, the
    later one."""
    codes = [order_names.index(o) if o in order_names else -2 for o in orders]
    first = unit["order"] == codes[0]
    second = unit["order"] == codes[1]
    rows = np.flatnonzero(first | second).astype(narrow_type(0, len(first)))
    # One sort of (key, side): each key's last unit of each side, the first side's just
    # before the second's.
    columns = [unit[name][rows] for name in ("case", "condition", "repeat", "decoder")]
    key = group_key(columns, room=2)
    del columns
    key *= 2
    key += second[rows]
    by_key = np.argsort(key, kind="stable")
    key, rows = key[by_key], rows[by_key]
    del by_key
    last = np.ones(len(key), bool)  # the last (latest row) of each run of equal keys
    last[:-1] = key[1:] != key[:-1]
    key, rows = key[last], rows[last]
    if codes[0] == codes[1]:  # one order named twice: each unit is its own pair
        return rows, rows
    both = np.flatnonzero((key[:-1] % 2 == 0) & (key[1:] == key[:-1] + 1))
    return rows[both], rows[both + 1]


def pair_steps(
    unit: dict[str, np.ndarray],
    path: np.ndarray,
    questions: Questions,
    order_names: Sequence[str],
    orders: tuple[str, str],
    pair: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first-order unit, second-order unit, depth) of every shared step, as arrays.

    ``unit`` holds ``PathTable`` unit columns, ``path`` each unit's distinct path. Writes
    ``pair`` (the step column): ``2·pair id + side`` (side 0: the first of ``orders``) at
    each shared step, leaving -1 elsewhere.
    """
    first_units, second_units = pair_units(unit, order_names, orders)
    count, start = unit["step_count"], unit["step_start"]
    unit_type, depth_type = narrow_type(0, len(path)), narrow_type(0, int(count.max(initial=0)))
    found: tuple[list[np.ndarray], ...] = ([], [], [])  # first units, second units, depths
    cuts_form, pairs = FORMS.index(CUTS), 0
    for at in range(0, len(first_units), _BLOCK):
        a, b = first_units[at : at + _BLOCK], second_units[at : at + _BLOCK]
        # Every depth both paths reached, then the steps whose question is the same.
        reach = np.minimum(count[a], count[b]).astype(np.int64)
        owner = np.repeat(np.arange(len(a)), reach)
        depth = np.arange(len(owner)) - np.repeat(np.cumsum(reach) - reach, reach)
        qa = questions.start[path[a]][owner] + depth
        qb = questions.start[path[b]][owner] + depth
        same = np.ones(len(owner), bool)
        for column in (questions.form, questions.a, questions.b, questions.k):
            same &= column[qa] == column[qb]
        bisection = same & (questions.form[qa] == cuts_form)
        for i in np.flatnonzero(bisection):  # only probabilistic-bisection steps carry cuts
            if questions.cuts.get(int(qa[i])) != questions.cuts.get(int(qb[i])):
                same[i] = False
        owner, depth = owner[same], depth[same]
        ids = np.arange(pairs, pairs + len(owner), dtype=np.int64)
        pairs += len(owner)
        pair[start[a][owner] + depth] = 2 * ids
        pair[start[b][owner] + depth] = 2 * ids + 1
        found[0].append(a[owner].astype(unit_type))
        found[1].append(b[owner].astype(unit_type))
        found[2].append((depth + 1).astype(depth_type))
    types = (unit_type, unit_type, depth_type)
    # One column at a time, its blocks dropped once joined: never two copies of all three.
    joined = [_joined(parts, dtype) for parts, dtype in zip(found, types, strict=True)]
    return joined[0], joined[1], joined[2]


def _joined(parts: list[np.ndarray], dtype: type[np.signedinteger[Any]]) -> np.ndarray:
    """``parts`` concatenated, emptying the list as it goes."""
    column = np.concatenate(parts) if parts else np.empty(0, dtype)
    parts.clear()
    return column
