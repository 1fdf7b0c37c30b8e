"""Accuracy measured on the log of the ratio value / target (Morley, Brito & Welling 2018,
Space Weather 16, "Measures of model performance based on the log accuracy ratio"); no I/O.

With ``q = ln(value / target)``:

- LAR, the log accuracy ratio, here ``100 * mean |q|`` (×100 so that a small error reads
  like a percentage: |q| ≈ |APE| / 100 near 0);
- MSA, the median symmetric accuracy, ``100 * (exp(median |q|) - 1)`` (%);
- SSPB, the symmetric signed percentage bias, ``100 * sign(M) * (exp(|M|) - 1)`` with
  ``M = median q`` (%; positive: the values run high).

A ratio has no log when the value or the target is 0 (``zero``) or when the two have
opposite signs (``sign_mismatch``). Those outputs are left out of all three and counted
apart; the tables and ``--json`` show both counts beside the metric, so nothing is dropped
silently. A NaN value or target (a failed output) is neither: it is not an ok output.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LogRatios", "lar", "log_ratios", "msa", "sspb"]


@dataclass(frozen=True, eq=False)
class LogRatios:
    """``q = ln(value / target)`` per output (NaN where undefined), and why undefined."""

    q: np.ndarray
    zero: np.ndarray  # bool: value or target is 0
    sign_mismatch: np.ndarray  # bool: both non-zero, opposite signs


def log_ratios(value: np.ndarray, target: np.ndarray) -> LogRatios:
    """``ln(value / target)`` elementwise, NaN where a zero or a sign mismatch leaves none."""
    v, y = np.asarray(value, float), np.asarray(target, float)
    finite = np.isfinite(v) & np.isfinite(y)
    zero = finite & ((v == 0) | (y == 0))
    mismatch = finite & ~zero & (np.sign(v) != np.sign(y))
    defined = finite & ~zero & ~mismatch
    # ln|v| - ln|y|: the ratio itself could overflow for values 1e300 apart.
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(defined, np.log(np.abs(v)) - np.log(np.abs(y)), np.nan)
    return LogRatios(q, zero, mismatch)


def _defined(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, float).ravel()
    return q[np.isfinite(q)]


def lar(q: np.ndarray) -> float:
    """LAR ×100: ``100 * mean |q|`` over the defined ratios (NaN when there is none)."""
    x = _defined(q)
    return float(100.0 * np.abs(x).mean()) if len(x) else float("nan")


def msa(q: np.ndarray) -> float:
    """Median symmetric accuracy (%): ``100 * (exp(median |q|) - 1)`` (NaN when empty)."""
    x = _defined(q)
    return float(100.0 * np.expm1(np.median(np.abs(x)))) if len(x) else float("nan")


def sspb(q: np.ndarray) -> float:
    """Symmetric signed percentage bias (%): ``100 sign(M) (exp(|M|) - 1)``, M = median q."""
    x = _defined(q)
    if not len(x):
        return float("nan")
    m = float(np.median(x))
    return float(100.0 * np.sign(m) * np.expm1(abs(m)))
