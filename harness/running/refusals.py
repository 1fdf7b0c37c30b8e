"""What refuses a run before anything is written: checked before a run folder, a lock or a
``sessions.jsonl`` line is made, so that a refused command leaves nothing behind and the
same command, fixed, is not refused with "already holds a run"."""

from __future__ import annotations

from harness.backends import Backend
from harness.cache import open_cache
from harness.running.folder import RunPlan, check_price


def check_before_writing(plan: RunPlan) -> None:
    """Refuse, before a folder, a lock or a session line is made, what would refuse the run
    later: a spend cap without a price (``check_price``) and a request cache that cannot be
    opened (opened here, then closed; the session opens it again as it starts)."""
    check_price(plan)
    probe_cache(plan.backend, plan.settings.cache)


def probe_cache(backend: Backend, mode: str) -> None:
    """Open (and close) the request cache a run of ``backend`` would use under ``mode``: one
    that cannot be opened is refused here, in one line, before anything is written."""
    cache = open_cache(backend.describe(), "", mode)
    if cache is not None:
        # The cache's own close, not the store's: it takes back the presence row that opening
        # it wrote, else the session's cache would wait for this one (single flight).
        cache.close()
