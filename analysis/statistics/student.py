"""Student's t distribution's tail and quantile, from ``scipy.special``.

Not ``scipy.stats``: importing it costs every command about 50 MB of memory and a second
of start-up, for the two functions the verdict tests need.
"""

from __future__ import annotations

import numpy as np
from scipy.special import stdtr, stdtrit

__all__ = ["student_ppf", "student_sf"]


def student_sf(t: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """P(T > t) for Student's t with ``df`` degrees of freedom (elementwise)."""
    return np.asarray(stdtr(df, -np.asarray(t, np.float64)), np.float64)


def student_ppf(q: np.ndarray | float, df: np.ndarray | float) -> np.ndarray:
    """The ``q`` quantile of Student's t with ``df`` degrees of freedom (elementwise)."""
    return np.asarray(stdtrit(df, q), np.float64)
