"""serve-sim on loopback that counts how often it answered each request body.

A hosted API bills a request once it has read it, whether or not the client stays to read
the reply; so the count is taken when the body arrives and is answered (before the
configured latency), and a body answered twice is a request paid for twice.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio.from_thread

from harness.serve import Outcome, ServerConfig, SimServer, base_url


@dataclass
class Answered:
    """Bodies answered with a 200, by SHA-1 of the bytes received."""

    counts: Counter[bytes] = field(default_factory=Counter)
    connections: Callable[[], int] = lambda: 0

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait until the server has closed every connection: after a client is killed, the
        bodies it sent are read (and counted) or dropped by then, however busy the machine."""
        deadline = time.monotonic() + timeout_s
        while self.connections() and time.monotonic() < deadline:
            time.sleep(0.005)  # noqa: TID251 - watching the server's thread
        assert not self.connections(), "the server kept a connection of a dead client open"

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

        async def open_connections() -> int:
            runner = server._runner  # the test's view of the server's sockets
            return len(runner.server.connections) if runner and runner.server else 0

        answered.connections = lambda: portal.call(open_connections)
        try:
            yield base_url(config.host, port), answered
        finally:
            portal.call(server.stop)
