"""Seeded uniform and normal numbers from a hash of what they belong to.

Hashing replaces ``random.Random(seed)`` because seeding a Mersenne Twister per question
cost more than the rest of the sim's answer together, and a hash of the wire body is what
lets the in-process sim and ``numericjev serve-sim`` give identical answers.
"""

from __future__ import annotations

import hashlib
import math
import struct

import orjson

_WORDS = struct.Struct(">8Q").unpack
_TWO_TO_MINUS_64 = 2.0**-64


def uniforms(text: bytes) -> tuple[float, ...]:
    """Eight independent uniforms in [0, 1) from ``text``."""
    digest = hashlib.blake2b(text, digest_size=64).digest()
    m = _TWO_TO_MINUS_64
    return tuple(w * m for w in _WORDS(digest))


class Draws:
    """Uniform numbers in [0, 1) derived from a hash of ``parts``: deterministic and cheap."""

    __slots__ = ("_values",)

    def __init__(self, *parts: object) -> None:
        self._values = uniforms(orjson.dumps(parts))

    def __getitem__(self, i: int) -> float:
        return self._values[i]


def normal(u: float, v: float) -> float:
    """A standard normal from two uniforms in [0, 1) (Box-Muller)."""
    return math.sqrt(-2.0 * math.log(1.0 - u)) * math.cos(2.0 * math.pi * v)
