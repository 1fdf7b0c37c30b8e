"""Streaming JSONL reading with the run folder's torn-last-line rule."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from analysis.errors import LogFormatError

__all__ = ["JsonlCounter", "iter_jsonl"]


@dataclass
class JsonlCounter:
    """Mutable tally filled while a JSONL file is read (lines parsed, torn last line)."""

    records: int = 0
    torn_last_line: int = 0


def iter_jsonl(path: Path, counter: JsonlCounter) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each line of ``path``, streaming.

    A line that does not parse as a JSON object is tolerated only when it is the last
    non-empty line (a crash can tear the line being written); it is then counted in
    ``counter.torn_last_line``. Anywhere else it raises LogFormatError.
    """
    pending: tuple[int, str] | None = None  # an unparsable line, fatal unless it is the last
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if pending is not None:
                bad_line, reason = pending
                raise LogFormatError(
                    f"{path} line {bad_line} is not a JSON object ({reason}); only the last line "
                    f"may be torn by a crash, and line {lineno} follows it — repair or delete "
                    f"line {bad_line}"
                )
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                pending = (lineno, str(exc))
                continue
            if not isinstance(record, dict):
                pending = (lineno, f"found {type(record).__name__}")
                continue
            counter.records += 1
            yield lineno, record
    if pending is not None:
        counter.torn_last_line += 1
