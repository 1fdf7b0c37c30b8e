"""``sessions.jsonl``: one line per ``run`` or ``resume`` invocation, appended as it starts.

The manifest is written once and describes the run as it began; this log records every
session after it (the code, model URL and limits in effect, and what ``--allow-mismatch``
let through). Runs made before it existed have no such file: readers get an empty list.
"""

from __future__ import annotations

from pathlib import Path

from runfolder.jsonl import JsonlAppender, JsonlReader, require_writable
from runfolder.layout import SESSIONS
from runfolder.records import SessionRecord


def append_session(folder: Path, record: SessionRecord) -> None:
    """Append one session record (the caller holds the run lock).

    Checked for NaN and infinities as well (orjson would write them as null): its limits come
    from the command line.
    """
    require_writable(record, SESSIONS)
    with JsonlAppender(folder / SESSIONS) as log:
        log.write(record)


def read_sessions(folder: Path) -> list[SessionRecord]:
    """Every session of a run folder, oldest first; [] for a run made before sessions.jsonl."""
    return list(JsonlReader[SessionRecord](folder / SESSIONS))
