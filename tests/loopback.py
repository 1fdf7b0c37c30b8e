"""A bare aiohttp app on a free loopback port, for backend tests that need a server that
misbehaves in one particular way (serve-sim answers correctly; this answers as told)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serve_post(
    route: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[str]:
    """Answer ``POST route`` with ``handler``; yields ``http://127.0.0.1:PORT``."""
    app = web.Application()
    app.router.add_post(route, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
