"""Interned strings, and any JSON value as text: the viewer's data keeps each distinct
question text, criteria label or trace step once, however many jobs share it."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["Interner", "as_text"]


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
