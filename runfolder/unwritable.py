"""What JSON cannot carry exactly, found field by field (``jsonl.dumps_line`` names it)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson writes, and reads back as an integer


def find_unwritable(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first field of ``value`` that JSON cannot carry exactly, as (field path, problem).

    Walks the whole value, so it is only called after orjson has refused a record (or for
    the rare manifest and session records). ``path`` is dotted; list items are ``[i]``.
    """
    kind = type(value)
    if value is None or kind is bool or kind is str:
        if kind is str:
            try:
                value.encode()
            except UnicodeEncodeError:
                return path, "a string with a lone surrogate (not valid UTF-8)"
        return None
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return None
        digits = len(str(abs(value)))
        shown = str(value) if digits <= 30 else f"an integer of {digits} digits"
        return path, f"{shown}, beyond the 64-bit range JSON readers keep exactly"
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"{value}, which JSON cannot hold")
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}.{key!r}".lstrip("."), "a key that is not a string"
            found = find_unwritable(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = find_unwritable(item, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return path, f"a {kind.__name__}, which JSON cannot hold (write decimals as strings)"
