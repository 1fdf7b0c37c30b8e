"""Numerical decoders: pure state machines from answers (labels, and probabilities) to values."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial

from harness.errors import ConfigError
from harness.protocol.decoders.actual_bits import ActualBitsDecoder
from harness.protocol.decoders.actual_digits import ActualDigitsDecoder
from harness.protocol.decoders.base import Answer, Decoded, Decoder, Question
from harness.protocol.decoders.beam import BeamTreeDecoder
from harness.protocol.decoders.bisect import BisectionDecoder
from harness.protocol.decoders.direct import DirectDecoder
from harness.protocol.decoders.index import BitsDecoder, DigitsDecoder
from harness.protocol.decoders.sets import SetsDecoder
from harness.protocol.decoders.thresholds import (
    AdaptiveThresholdDecoder,
    ParallelThresholdDecoder,
    ThresholdCdfDecoder,
)
from harness.protocol.decoders.tree import TreeDecoder
from harness.protocol.decoders.tree_readout import TreeReadoutDecoder
from harness.protocol.grid import Grid

__all__ = [
    "ActualBitsDecoder",
    "ActualDigitsDecoder",
    "AdaptiveThresholdDecoder",
    "Answer",
    "BeamTreeDecoder",
    "BisectionDecoder",
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
    "TreeReadoutDecoder",
    "decoder_factory",
    "make_decoder",
]

KNOWN = (
    "direct, treeK (K >= 2, e.g. tree10), treeK_mean, treeK_median, treeK_beamB (B >= 1, "
    "e.g. tree4_beam2), bisectK (e.g. bisect4), digits, bits, bits_plain, and on small grids "
    "sets, actual_digits, actual_bits, actual_bits_plain, adaptive_thresholds, "
    "parallel_thresholds, threshold_cdf"
)
# The exploratory suite's decoders (paper, Appendix "Exploratory Records") and the threshold
# CDF read-out (Appendix "CDF Construction"); each checks that the grid suits it.
_EXPLORATORY: dict[str, Callable[[Grid, str], Decoder]] = {
    "sets": SetsDecoder,
    "actual_digits": ActualDigitsDecoder,
    "actual_bits": ActualBitsDecoder,
    # The bit-prompt control (paper, Appendix "Exploratory Records"): the same bits asked in
    # underspecified words, of x and of the grid index q.
    "actual_bits_plain": partial(ActualBitsDecoder, plain=True),
    "bits_plain": partial(BitsDecoder, name="bits_plain", plain=True),
    "adaptive_thresholds": AdaptiveThresholdDecoder,
    "parallel_thresholds": ParallelThresholdDecoder,
    "threshold_cdf": ThresholdCdfDecoder,
}
# Names earlier runs recorded for a decoder since renamed: a run folder that lists one
# resumes and replays under the name it was recorded with.
_ALIASES = {"bits4": "actual_bits"}
_NUMBER = r"([1-9]\d*|0)"  # no leading zeros: one spelling per decoder
_TREE = re.compile(rf"^tree{_NUMBER}(?:_(mean|median|beam{_NUMBER}))?$")
_BISECT = re.compile(rf"^bisect{_NUMBER}$")


def make_decoder(name: str, grid: Grid, subject: str) -> Decoder:
    """Build the decoder called ``name`` on ``grid``; refuses unknown names with the list."""
    return decoder_factory(name)(grid, subject)


@lru_cache(maxsize=256)
def decoder_factory(name: str) -> Callable[[Grid, str], Decoder]:
    """What builds the decoder called ``name`` on a grid and subject (its name read once:
    every job builds its decoders); refuses unknown names with the list."""
    if name == "direct":
        return DirectDecoder
    if name == "digits":
        return DigitsDecoder
    if name == "bits":
        return BitsDecoder
    if name in _EXPLORATORY or name in _ALIASES:
        return _EXPLORATORY[_ALIASES.get(name, name)]
    match = _TREE.match(name)
    if match:
        k = int(match.group(1))
        if k < 2:
            raise ConfigError(f"decoder {name!r}: a tree needs K >= 2, e.g. tree2 or tree10")
        variant, beam = match.group(2), match.group(3)
        if variant is None:
            return partial(TreeDecoder, k=k)
        if beam is None:
            return partial(TreeReadoutDecoder, k=k, name=name, readout=variant)
        if int(beam) < 1:
            raise ConfigError(f"decoder {name!r}: a beam keeps B >= 1 intervals, e.g. tree4_beam2")
        return partial(BeamTreeDecoder, k=k, beam=int(beam), name=name)
    match = _BISECT.match(name)
    if match:
        k = int(match.group(1))
        if k < 2:
            raise ConfigError(f"decoder {name!r}: bisection needs K >= 2, e.g. bisect2 or bisect4")
        return partial(BisectionDecoder, k=k, name=name)
    raise ConfigError(f"unknown decoder {name!r}; known decoders: {KNOWN}")
