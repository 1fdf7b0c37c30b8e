"""``totals.json``: a run's request totals as its last session left them.

``requests.jsonl`` is the record of every attempt, but a 100x run's is 1.5 GB: too much to
read for a listing. So each session, as it ends (done, stopped by a cap, interrupted),
rewrites this small file atomically with the run's totals and the length of
``requests.jsonl`` they cover. A session killed outright (SIGKILL, power loss) leaves the
previous totals behind, and its requests after them uncounted: a reader compares
``requests_end`` with the log's length and says "at least" when the log has grown since.
``numericjev status`` always counts from the log itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

import orjson

from runfolder.layout import REQUESTS, TOTALS
from runfolder.zlog import stored


class TotalsRecord(TypedDict):
    """``totals.json``: the run's totals, earlier sessions included."""

    run: str  # the manifest's run_id
    utc: str  # when the session that wrote it ended
    requests_end: int  # bytes of requests.jsonl these totals cover
    requests: int  # answered requests
    errors: int  # failed attempts
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cost_known: bool  # False: some answered request carried no cost


def write_totals(folder: Path, record: TotalsRecord) -> None:
    """Replace ``totals.json`` atomically (the caller holds the run lock)."""
    tmp = folder / f".{TOTALS}.tmp"
    tmp.write_bytes(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
    os.replace(tmp, folder / TOTALS)


def read_totals(folder: Path) -> TotalsRecord | None:
    """The totals, or None when the run has none (older runs, a first session killed) or
    they cannot be read (a listing never fails on them: ``status`` counts from the log)."""
    try:
        raw = orjson.loads((folder / TOTALS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    fields = TotalsRecord.__annotations__
    if not isinstance(raw, dict) or any(key not in raw for key in fields):
        return None
    return raw  # type: ignore[return-value]


def totals_current(folder: Path, totals: TotalsRecord) -> bool:
    """True when ``requests.jsonl`` holds nothing beyond what ``totals`` counted."""
    try:
        size = stored(folder / REQUESTS).stat().st_size
    except FileNotFoundError:
        size = 0
    return size == totals["requests_end"]
