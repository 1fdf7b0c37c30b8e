"""Numerical decoders: pure state machines from selected labels to grid values."""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.decoders.actual_bits import ActualBitsDecoder
from harness.decoders.actual_digits import ActualDigitsDecoder
from harness.decoders.base import Answer, Decoded, Decoder, Question
from harness.decoders.direct import DirectDecoder
from harness.decoders.index import BitsDecoder, DigitsDecoder
from harness.decoders.sets import SetsDecoder
from harness.decoders.thresholds import (
    AdaptiveThresholdDecoder,
    ParallelThresholdDecoder,
    ThresholdCdfDecoder,
)
from harness.decoders.tree import TreeDecoder
from harness.errors import ConfigError
from harness.grid import Grid

__all__ = [
    "ActualBitsDecoder",
    "ActualDigitsDecoder",
    "AdaptiveThresholdDecoder",
    "Answer",
    "BitsDecoder",
    "Decoded",
    "Decoder",
    "DigitsDecoder",
    "DirectDecoder",
    "ParallelThresholdDecoder",
    "Question",
    "SetsDecoder",
    "ThresholdCdfDecoder",
    "TreeDecoder",
    "make_decoder",
]

KNOWN = (
    "direct, treeK (K >= 2, e.g. tree10), digits, bits, and on small grids sets, "
    "actual_digits, bits4, adaptive_thresholds, parallel_thresholds, threshold_cdf"
)
# The exploratory suite's decoders (paper, Appendix "Exploratory Records") and the threshold
# CDF read-out (Appendix "CDF Construction"); each checks that the grid suits it.
_EXPLORATORY: dict[str, Callable[[Grid, str], Decoder]] = {
    "sets": SetsDecoder,
    "actual_digits": ActualDigitsDecoder,
    "bits4": ActualBitsDecoder,
    "adaptive_thresholds": AdaptiveThresholdDecoder,
    "parallel_thresholds": ParallelThresholdDecoder,
    "threshold_cdf": ThresholdCdfDecoder,
}
_TREE = re.compile(r"^tree([1-9]\d*|0)$")


def make_decoder(name: str, grid: Grid, subject: str) -> Decoder:
    """Build the decoder called ``name`` on ``grid``; refuses unknown names with the list."""
    if name == "direct":
        return DirectDecoder(grid, subject)
    if name == "digits":
        return DigitsDecoder(grid, subject)
    if name == "bits":
        return BitsDecoder(grid, subject)
    if name in _EXPLORATORY:
        return _EXPLORATORY[name](grid, subject)
    match = _TREE.match(name)
    if match:
        k = int(match.group(1))
        if k < 2:
            raise ConfigError(f"decoder {name!r}: a tree needs K >= 2, e.g. tree2 or tree10")
        return TreeDecoder(grid, subject, k)
    raise ConfigError(f"unknown decoder {name!r}; known decoders: {KNOWN}")
