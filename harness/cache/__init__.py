"""The request cache (docs/cache.md): pay once for an exchange, reuse it everywhere.

``RequestCache`` is what the ``Caller`` asks before an exchange is sent and tells after a
live answer passed validation; ``store.Store`` is the SQLite file underneath.

May import ``harness.calling``, ``harness.wire`` and errors.
"""

from harness.cache.keys import cache_key
from harness.cache.lookup import RequestCache, open_cache
from harness.cache.store import Entry, Store, default_path

__all__ = ["Entry", "RequestCache", "Store", "cache_key", "default_path", "open_cache"]
