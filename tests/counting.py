"""serve-sim on loopback that counts how often it answered each request body.

A hosted API bills a request once it has read it, whether or not the client stays to read
the reply; so the count is taken when the body arrives and is answered (before the
configured latency), and a body answered twice is a request paid for twice.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio.from_thread

from harness.serve import Outcome, ServerConfig, SimServer, base_url


@dataclass
class Answered:
    """Bodies answered with a 200, by SHA-1 of the bytes received."""

    counts: Counter[bytes] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        """Answers given."""
        return sum(self.counts.values())

    @property
    def twice(self) -> int:
        """Answers beyond the first for the same body: requests paid for again."""
        return sum(n - 1 for n in self.counts.values() if n > 1)


@contextmanager
def counting_server(config: ServerConfig) -> Iterator[tuple[str, Answered]]:
    """serve-sim in a background thread; yields its base URL and the live count."""
    server = SimServer(config)
    answered = Answered()
    methods, answer = server.app.routes[config.route]

    def counted(raw: bytes, headers: Mapping[str, str]) -> Outcome:
        out = answer(raw, headers)
        if out.status == 200 and not out.reset:
            answered.counts[hashlib.sha1(raw).digest()] += 1
        return out

    server.app.routes[config.route] = (methods, counted)
    with anyio.from_thread.start_blocking_portal() as portal:
        port = portal.call(server.start)
        try:
            yield base_url(config.host, port), answered
        finally:
            portal.call(server.stop)
