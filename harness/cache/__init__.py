"""The request cache (docs/cache.md): pay once for an exchange, reuse it everywhere; the
``Caller`` asks ``RequestCache``, and ``store.Store`` is the SQLite file underneath.

May import ``harness.calling``, ``harness.wire`` and errors.
"""

from harness.cache.lookup import RequestCache, open_cache
from harness.cache.store import Entry, Store, default_path

__all__ = ["Entry", "RequestCache", "Store", "default_path", "open_cache"]
