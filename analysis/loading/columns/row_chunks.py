"""Rows of small integers (and of floats) gathered a chunk at a time into narrow column pieces.

A reader that keeps one int32 stride array for every row of a log holds 4 bytes per field
per row until the end, and then the narrowed copies beside it (at 1000×, 6.1 million
outputs: 320 MB of strides for 90 MB of columns). Here only the current chunk is a stride
array (int16 until a value needs more); every ``chunk`` rows it becomes one narrow piece per
column, so a row costs what its final columns cost.
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from .compact import narrow

__all__ = ["CHUNK_ROWS", "FloatChunks", "RowChunks", "joined", "release_freed"]

CHUNK_ROWS = 1 << 16


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim  # glibc only
    except (OSError, AttributeError):  # another C library: nothing to call
        return None
    return trim


_TRIM = _malloc_trim()


def release_freed() -> None:
    """Hand the heap pages a pass freed back to the OS (glibc's ``malloc_trim``; elsewhere
    nothing). The chunks, dictionaries and decoded lines a pass frees leave holes among what
    it keeps, which the C allocator keeps resident otherwise (~130 MB after the outputs pass
    of a 1000× run, whose columns and job names are ~260 MB)."""
    if _TRIM is not None:
        _TRIM(0)


def joined(pieces: list[np.ndarray], dtype: np.dtype[Any]) -> np.ndarray:
    """The ``pieces`` end to end as one ``dtype`` array, each piece freed once copied (the
    list is emptied): the whole column and one piece are held at once, never every piece
    beside its copy."""
    whole = np.empty(sum(len(piece) for piece in pieces), dtype)
    at = 0
    pieces.reverse()
    while pieces:
        piece = pieces.pop()
        whole[at : at + len(piece)] = piece
        at += len(piece)
    return whole


class RowChunks:
    """``width`` integers per row: ``append`` a row, ``put`` one over an earlier row, and
    ``columns`` for the whole columns, each as ``compact.narrow`` would give it."""

    def __init__(self, width: int, chunk: int = CHUNK_ROWS) -> None:
        self.width = width
        self.stride = array("h")  # the current chunk, ``width`` per row
        self.limit = width * chunk  # stride items at which the chunk becomes pieces
        self.pieces: list[list[np.ndarray]] = [[] for _ in range(width)]
        self.base = 0  # rows already in ``pieces``
        self.late: dict[int, tuple[int, ...]] = {}  # rows put over rows already in pieces

    def __len__(self) -> int:
        return self.base + len(self.stride) // self.width

    def append(self, row: tuple[int, ...]) -> None:
        """Add one row (``width`` integers, each within int64)."""
        try:
            self.stride.extend(row)
        except OverflowError:  # a value past the stride's type: widened until it fits
            self._extend(row)
        if len(self.stride) >= self.limit:
            self._flush()

    def extend(self, flat: list[int]) -> None:
        """Add ``len(flat) // width`` rows given end to end (``width`` integers each): one
        ``array.fromlist`` for many rows, where ``append``'s ``array.extend`` of a tuple
        goes through an iterator and resizes the array once per item."""
        while True:
            try:
                self.stride.fromlist(flat)  # all or nothing: a value past the type adds none
                break
            except OverflowError:
                self._widen()
        if len(self.stride) >= self.limit:
            self._flush()

    def put(self, at: int, row: tuple[int, ...]) -> None:
        """Replace row ``at`` (a log that wrote the same key twice keeps the last)."""
        if at < self.base:  # already in a piece: put over it when the columns are built
            self.late[at] = row
            return
        start = (at - self.base) * self.width
        while True:
            try:
                self.stride[start : start + self.width] = array(self.stride.typecode, row)
                return
            except OverflowError:
                self._widen()

    def columns(self) -> list[np.ndarray]:
        """The whole columns, narrow; the pieces are freed a column at a time."""
        self._flush()
        # Each piece is as narrow as its own values allow, so the widest is as narrow as the
        # whole column allows: joined, they give ``narrow`` of the whole column.
        columns = [joined(pieces, np.result_type(np.int8, *pieces)) for pieces in self.pieces]
        if self.late:
            at = np.fromiter(self.late, np.int64, len(self.late))
            rows = np.array(list(self.late.values()), np.int64).reshape(-1, self.width)
            for i, column in enumerate(columns):
                wide = column.astype(np.int64)
                wide[at] = rows[:, i]
                columns[i] = narrow(wide)
            self.late = {}
        return columns

    def _extend(self, row: tuple[int, ...]) -> None:
        size = len(self.stride)
        size -= size % self.width  # where the row starts: its first items may be in
        while True:
            del self.stride[size:]  # extend appends item by item
            try:
                self.stride.extend(row)
                return
            except OverflowError:
                self._widen()

    def _widen(self) -> None:
        """The current chunk's stride one type wider: int16, int32, then int64."""
        if self.stride.typecode == "q":
            raise OverflowError("a whole number past 64 bits")
        self.stride = array("i" if self.stride.typecode == "h" else "q", self.stride)

    def _flush(self) -> None:
        """The current chunk as narrow pieces; the stride starts again as int16."""
        if not self.stride:
            return
        dtype = np.dtype(f"i{self.stride.itemsize}")
        rows = np.frombuffer(self.stride, dtype).reshape(-1, self.width)
        for column, pieces in enumerate(self.pieces):
            pieces.append(narrow(rows[:, column]))
        self.base += len(rows)
        del rows
        self.stride = array("h")


class FloatChunks:
    """``width`` floats per row, each column's piece kept as float32 where every value of it
    is one exactly (token counts, a zero cost), else as float64: ``columns`` gives the
    float64 columns one array per column would have held, value for value."""

    def __init__(self, width: int, chunk: int = CHUNK_ROWS) -> None:
        self.width = width
        self.stride = array("d")
        self.limit = width * chunk
        self.pieces: list[list[np.ndarray]] = [[] for _ in range(width)]

    def append(self, row: tuple[float, ...]) -> None:
        """Add one row of ``width`` floats."""
        self.stride.extend(row)
        if len(self.stride) >= self.limit:
            self._flush()

    def extend(self, flat: list[float]) -> None:
        """Add ``len(flat) // width`` rows given end to end (as ``RowChunks.extend``)."""
        self.stride.fromlist(flat)
        if len(self.stride) >= self.limit:
            self._flush()

    def column(self, index: int) -> np.ndarray:
        """One whole column as float64, its pieces freed (ask for each column once, after
        the last row): the columns are taken one at a time, never all at once."""
        self._flush()
        return joined(self.pieces[index], np.dtype(np.float64))

    def _flush(self) -> None:
        if not self.stride:
            return
        rows = np.frombuffer(self.stride, np.float64).reshape(-1, self.width)
        for column, pieces in enumerate(self.pieces):
            values = rows[:, column]
            with np.errstate(over="ignore"):  # past float32's range: kept as float64
                single = values.astype(np.float32)
            exact = np.array_equal(single, values, equal_nan=True)
            pieces.append(single if exact else values.copy())
        del rows
        self.stride = array("d")
