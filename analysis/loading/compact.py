"""Integer columns in the smallest type that holds them: what the analysis keeps per output,
per exchange and per interval unit grows with the logs, so each byte saved there counts
(614,400 outputs and 682,200 exchanges at 100×, ten times as many at 1000×)."""

from __future__ import annotations

import numpy as np

__all__ = ["narrow"]

_TYPES = (np.int8, np.int16, np.int32)


def narrow(column: np.ndarray) -> np.ndarray:
    """A copy of integer ``column`` as int8, int16 or int32 when its values fit, else int64.

    Codes, repeats, N, rounds and depths are small: one or two bytes instead of eight. Code
    that builds keys from several such columns casts to int64 first (NumPy keeps the narrow
    type in ``column * k`` and would wrap).
    """
    if not len(column):
        return column.astype(np.int8)
    low, high = int(column.min()), int(column.max())
    for dtype in _TYPES:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return column.astype(dtype)
    return column.astype(np.int64)
