"""Integer columns in the smallest type that holds them: what the analysis keeps per output,
per exchange and per interval unit grows with the logs, so each byte saved there counts
(614,400 outputs and 682,200 exchanges at 100×, ten times as many at 1000×)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

import numpy as np

__all__ = ["extended", "narrow", "narrow_type", "stride_view"]

_TYPES = (np.int8, np.int16, np.int32)


def narrow_type(low: int, high: int) -> type[np.signedinteger]:
    """The smallest of int8, int16, int32 and int64 that holds every value in [low, high]."""
    for dtype in _TYPES:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    return np.int64


def narrow(column: np.ndarray) -> np.ndarray:
    """A copy of integer ``column`` as int8, int16 or int32 when its values fit, else int64.

    Codes, repeats, N, rounds and depths are small: one or two bytes instead of eight. Code
    that builds keys from several such columns casts to int64 first (NumPy keeps the narrow
    type in ``column * k`` and would wrap).
    """
    if not len(column):
        return column.astype(np.int8)
    return column.astype(narrow_type(int(column.min()), int(column.max())))


def extended(stride: array[int], row: Sequence[int]) -> array[int]:
    """``stride`` with ``row`` appended, widened to int64 first if a value needs it.

    Rows are appended to one growing ``array`` (one ``extend`` per row is the cheapest
    append in Python); int32 halves int64's bytes until a value does not fit (a vast N).
    """
    size = len(stride)
    try:
        stride.extend(row)
    except OverflowError:  # extend appends item by item: drop the part-row first
        stride = array("q", stride[:size])
        stride.extend(row)
    return stride


def stride_view(stride: array[int], width: int) -> np.ndarray:
    """A stride array as a (rows, width) NumPy view (no copy)."""
    return np.frombuffer(stride, np.dtype(f"i{stride.itemsize}")).reshape(-1, width)
