"""``numericjev run --ray [ADDRESS] --workers N``: N shards as Ray actors, one rate limit,
one writer.

The driver (this process) writes one ordinary run folder; the shards, one Ray actor each on
any node, answer their jobs and stream their records back (``actor``), so the cluster needs
no shared filesystem and no ``merge``. One ``RateLimiter`` actor paces every attempt of
every shard (``limiter``). A shard lost with its node is started again elsewhere from what
the folder holds (``driver``).

Ray is an optional extra (``pip install 'numericjev[ray]'``), imported only where used.
Without ADDRESS, ``ray.init()`` starts a local Ray; with one, it joins that cluster (whose
nodes need this package installed).
"""

from harness.spreading.raylaunch.driver import Ray
from harness.spreading.raylaunch.limiter import RateLimiter, RemotePacer

__all__ = ["RateLimiter", "Ray", "RemotePacer"]
