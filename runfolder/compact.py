"""``numericjev compact RUN``: a run folder's plain logs rewritten as zstd frames.

Lossless: every whole line, in order, byte for byte (a torn tail, which no reader counts, is
left out). Kill-safe: each compressed log is written beside the plain one, forced to disk,
renamed into place, and only then is the plain one removed; until that moment the plain log
is the one every reader uses (``zlog.stored``), so a kill at any point leaves a folder that
reads the same, and compacting again finishes the job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from runfolder.jsonl import whole_lines
from runfolder.layout import OUTPUTS, REQUESTS
from runfolder.lock import RunLock
from runfolder.totals import read_totals, totals_current, write_totals
from runfolder.zlog import compress_frame, compressed

FRAME_BYTES = 1 << 20  # lines per frame: larger frames compress a little better


@dataclass(frozen=True)
class Compacted:
    """One log compacted: its name, and its size before and after (bytes)."""

    name: str
    before: int
    after: int


def _compact_log(path: Path) -> Compacted | None:
    """Rewrite ``path`` as ``path.zst``; None when there is no plain log to compact."""
    if not path.exists():
        return None
    before = path.stat().st_size
    target = compressed(path)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("wb") as out:
        pending = bytearray()
        for line in whole_lines(path):
            pending += line
            if len(pending) >= FRAME_BYTES:
                out.write(compress_frame(bytes(pending)))
                pending.clear()
        if pending:
            out.write(compress_frame(bytes(pending)))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
    path.unlink()  # from here the compressed log is the one read
    return Compacted(path.name, before, target.stat().st_size)


def compact_run(folder: Path) -> list[Compacted]:
    """Compact ``folder``'s logs under its lock (a run writing to it is refused, named)."""
    lock = RunLock(folder)
    lock.acquire()
    try:
        totals = read_totals(folder)
        current = totals is not None and totals_current(folder, totals)
        done = [c for c in (_compact_log(folder / n) for n in (REQUESTS, OUTPUTS)) if c]
        if totals is not None and current:  # still a summary of the whole log
            requests = compressed(folder / REQUESTS)
            if requests.exists():
                write_totals(folder, {**totals, "requests_end": requests.stat().st_size})
        return done
    finally:
        lock.release()
