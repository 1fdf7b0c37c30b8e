"""``numericjev run --ray [ADDRESS] --workers N``: N shards as Ray actors, one rate limit,
one writer.

The driver (this process) writes one ordinary run folder; the shards stream their records
back (``actor``); one ``RateLimiter`` actor paces every attempt (``limiter``); a lost shard
starts again elsewhere (``driver``). What a user sees: docs/scaling.md ("A Ray cluster").
Ray is an optional extra, imported only where used.
"""

from harness.spreading.raylaunch.driver import Ray
from harness.spreading.raylaunch.limiter import RateLimiter, RemotePacer

__all__ = ["RateLimiter", "Ray", "RemotePacer"]
