"""Python's cyclic garbage collector, set for a run's event loop (``fewer_collections``).

Young collections every 700 allocations caught exchanges in flight and promoted them into
full collections (docs/performance.md, "HTTP, with the aiohttp sender", has the figures);
so a run freezes what exists and collects the young generation less often. Nothing a run
records depends on this.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 50_000  # allocations between young collections (CPython's default: 700)

_lock = threading.Lock()  # runs may start and end in several threads
_depth = 0  # runs inside fewer_collections now (a comparison runs several in one loop)
_saved: tuple[tuple[int, int, int], bool] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Freeze what exists and collect the young generation less often, until the block ends.
    Re-entrant (the outermost block sets and restores); objects a caller froze before (e.g.
    before forking) are left as they are: then nothing is frozen or unfrozen here."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            freeze = gc.get_freeze_count() == 0
            _saved = (gc.get_threshold(), freeze)
            if freeze:
                gc.freeze()
            young, *older = _saved[0]
            gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                threshold, froze = _saved
                _saved = None
                gc.set_threshold(*threshold)
                if froze:
                    gc.unfreeze()
