"""Whole lines of a run-folder log that contain a byte string, found without splitting
or parsing the others: one job's lines of a 1.6 GB log in about a second."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from runfolder import zlog

_BLOCK = 1 << 22  # bytes read at a time by ``lines_containing``


def _blocks(path: Path) -> Iterator[bytes]:
    """The whole lines of the log ``path`` names, plain or compressed, in blocks of many
    lines each ending in a newline (a torn tail left out)."""
    stored = zlog.stored(path)
    if not stored.exists():
        return
    with stored.open("rb") as handle:
        if stored != path:
            for text, _ in zlog.frames(handle, str(path)):
                yield text[: text.rfind(b"\n") + 1]
            return
        rest = b""
        while chunk := handle.read(_BLOCK):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            rest = chunk[cut:]
            if cut:
                yield chunk[:cut]


def lines_containing(path: Path, needle: bytes) -> Iterator[bytes]:
    """Every whole line of the log ``path`` names that contains ``needle``, unparsed: a scan
    for one job's lines that never splits the others (a 1.6 GB log in about a second)."""
    for block in _blocks(path):
        at = block.find(needle)
        while at >= 0:
            start = block.rfind(b"\n", 0, at) + 1
            end = block.find(b"\n", at) + 1
            yield block[start:end]
            at = block.find(needle, end)


def job_records(path: Path, job: str) -> Iterator[dict[str, Any]]:
    """Every record of the log ``path`` names whose ``job`` is ``job``, in log order, parsed
    from the lines that mention it (a line that is not a record is passed over: the reading
    of the whole log is what refuses it)."""
    for line in lines_containing(path, orjson.dumps(job)):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("job") == job:
            yield record
