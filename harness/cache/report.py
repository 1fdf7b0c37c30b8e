"""What a run folder's log says about the request cache: hits, misses, USD saved."""

from __future__ import annotations

from pathlib import Path

import orjson

from runfolder import REQUESTS, whole_lines

_MARK = b'"cache":{"hit":true'


def cache_line(folder: Path) -> str | None:
    """One line for ``status``: exchanges answered from the cache (from which runs) and
    live, and the USD the cached answers cost when first paid; None without hits."""
    hits = live = 0
    saved = 0.0
    runs: set[str] = set()
    for raw in whole_lines(folder / REQUESTS):
        if _MARK not in raw:
            live += b'"status":200' in raw  # answered live (a miss, or no cache)
            continue
        mark = orjson.loads(raw)["cache"]
        hits += 1
        saved += mark.get("saved_usd") or 0.0
        runs.add(str(mark.get("from_run")))
    if not hits:
        return None
    return (
        f"cache: {hits:,} hits (answers paid by {', '.join(sorted(runs))}), {live:,} answered "
        f"live; USD {saved:.6f} saved"
    )
