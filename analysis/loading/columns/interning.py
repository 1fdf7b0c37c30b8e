"""Interned strings, and any JSON value as text: the viewer's data keeps each distinct
question text, criteria label or trace step once, however many jobs share it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import orjson

__all__ = ["CompactNames", "Interner", "NameCodes", "as_text"]

_BLOCK = 1 << 16  # names encoded at once


class Interner:
    """Strings to dense ids in first-seen order."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.strings: list[str] = []

    def code(self, text: str) -> int:
        """The id of ``text``, a new one the first time it is seen."""
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.strings)
            self.strings.append(text)
        return found


def as_text(value: Any) -> str:
    """A string as is; any other JSON value as its compact JSON text."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


class CompactNames(Sequence[str]):
    """Strings in code order held as one UTF-8 buffer, not a ``str`` object each, and found
    by their hashes: the million job names of a 1000× run were 178 MiB as Python strings
    and their dictionary, ~64 MB here. ``codes_of`` looks names up a list at a time
    (``NameCodes``: one at a time); a hash met twice is told apart by the names themselves."""

    def __init__(self, strings: list[str]) -> None:
        parts, sizes = [], np.empty(len(strings), np.int64)
        for at in range(0, len(strings), _BLOCK):  # a block at a time: no bytes object each
            encoded = [s.encode("utf-8", "surrogatepass") for s in strings[at : at + _BLOCK]]
            sizes[at : at + len(encoded)] = [len(b) for b in encoded]
            parts.append(b"".join(encoded))
        self.data = b"".join(parts)
        del parts
        self.offsets = np.zeros(len(strings) + 1, np.int64)
        np.cumsum(sizes, out=self.offsets[1:])
        hashes = np.fromiter(map(hash, strings), np.int64, len(strings))
        self.order = np.argsort(hashes, kind="stable").astype(np.int32)
        self.hashes = hashes[self.order]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        start, end = int(self.offsets[index]), int(self.offsets[index + 1])
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def __eq__(self, other: object) -> bool:
        """Equal to the same names in the same order (another CompactNames, a tuple, a list)."""
        if isinstance(other, CompactNames):
            return self.data == other.data and np.array_equal(self.offsets, other.offsets)
        if isinstance(other, tuple | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (mutable arrays, equal to tuples)

    def codes_of(self, names: list[str]) -> np.ndarray:
        """The code of each of ``names`` (int64), -1 where it is not one of the names."""
        wanted = np.fromiter(map(hash, names), np.int64, len(names))
        end = len(self.hashes)
        at = np.minimum(np.searchsorted(self.hashes, wanted), max(end - 1, 0))
        codes = np.full(len(names), -1, np.int64)
        if not end:
            return codes
        hit = np.flatnonzero(self.hashes[at] == wanted)
        first = self.order[at[hit]]
        data, starts, ends = self.data, self.offsets[first], self.offsets[first + 1]
        same = [
            data[s:e] == names[i].encode("utf-8", "surrogatepass")
            for i, s, e in zip(hit.tolist(), starts.tolist(), ends.tolist(), strict=True)
        ]
        codes[hit[same]] = first[same]
        for i in hit[~np.array(same, bool)].tolist():  # a hash met twice: the names decide
            j = int(at[i]) + 1
            while j < end and self.hashes[j] == wanted[i]:
                if self[int(self.order[j])] == names[i]:
                    codes[i] = self.order[j]
                    break
                j += 1
        return codes


class NameCodes(Mapping[str, int]):
    """``CompactNames`` as a mapping from each name to its code."""

    def __init__(self, names: CompactNames) -> None:
        self.names = names

    def __getitem__(self, name: str) -> int:
        found = int(self.names.codes_of([name])[0])
        if found < 0:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
