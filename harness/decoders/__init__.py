"""Numerical decoders: pure state machines from selected labels to grid values."""

from __future__ import annotations

import re

from harness.decoders.base import Answer, Decoded, Decoder, Question
from harness.decoders.direct import DirectDecoder
from harness.decoders.index import BitsDecoder, DigitsDecoder
from harness.decoders.tree import TreeDecoder
from harness.errors import ConfigError
from harness.grid import Grid

__all__ = [
    "Answer",
    "BitsDecoder",
    "Decoded",
    "Decoder",
    "DigitsDecoder",
    "DirectDecoder",
    "Question",
    "TreeDecoder",
    "make_decoder",
]

KNOWN = "direct, treeK (K >= 2, e.g. tree10), digits, bits"
_TREE = re.compile(r"^tree(\d+)$")


def make_decoder(name: str, grid: Grid, subject: str) -> Decoder:
    """Build the decoder called ``name`` on ``grid``; refuses unknown names with the list."""
    if name == "direct":
        return DirectDecoder(grid, subject)
    if name == "digits":
        return DigitsDecoder(grid, subject)
    if name == "bits":
        return BitsDecoder(grid, subject)
    match = _TREE.match(name)
    if match:
        k = int(match.group(1))
        if k < 2:
            raise ConfigError(f"decoder {name!r}: a tree needs K >= 2, e.g. tree2 or tree10")
        return TreeDecoder(grid, subject, k)
    raise ConfigError(f"unknown decoder {name!r}; known decoders: {KNOWN}")
