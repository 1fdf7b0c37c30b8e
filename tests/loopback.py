"""A bare aiohttp app on a free loopback port, for backend tests that need a server that
misbehaves in one particular way (serve-sim answers correctly; this answers as told), and a
scripted server whose every reply a test writes (status, body, headers, a dropped connection)."""

from __future__ import annotations

import inspect
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

import orjson
from aiohttp import web


@asynccontextmanager
async def serve_post(
    route: str,
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    tls: ssl.SSLContext | None = None,
) -> AsyncIterator[str]:
    """Answer ``POST route`` with ``handler``; yields ``http://127.0.0.1:PORT`` (``https``
    with ``tls``)."""
    app = web.Application()
    app.router.add_post(route, handler)
    runner = web.AppRunner(app, handler_cancellation=True)  # a client gone ends its handler
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


# --- a scripted server: each request answered as a test says --------------------------


class Seen(NamedTuple):
    """A request as the server saw it."""

    method: str
    path: str
    headers: Mapping[str, str]  # case-insensitive
    content: bytes


class Reply(NamedTuple):
    """What the server answers: a status, a body and headers."""

    status: int
    content: bytes = b""
    headers: Mapping[str, str] = {}

    @classmethod
    def json(cls, status: int, body: Any, **headers: str) -> Reply:
        """A JSON reply."""
        return cls(status, orjson.dumps(body), {"Content-Type": "application/json", **headers})

    @classmethod
    def text(cls, status: int, text: str, **headers: str) -> Reply:
        """A plain-text reply (``content-type`` may be overridden in ``headers``)."""
        return cls(status, text.encode(), {"Content-Type": "text/plain", **headers})


DROP = Reply(-1)  # close the connection without answering: a "connection" failure
Handler = Callable[[Seen], Reply | Awaitable[Reply]]


@asynccontextmanager
async def scripted_server(
    handler: Handler, tls: ssl.SSLContext | None = None
) -> AsyncIterator[str]:
    """Answer every POST with ``handler``; yields ``http://127.0.0.1:PORT``; an assertion
    the handler raised (e.g. a script run out) is raised again when the server stops."""
    failures: list[BaseException] = []

    async def answer(request: web.Request) -> web.StreamResponse:
        seen = Seen(request.method, request.path, request.headers, await request.read())
        try:
            reply = handler(seen)
            if inspect.isawaitable(reply):
                reply = await reply
        except AssertionError as exc:
            failures.append(exc)
            raise
        if reply is DROP:
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)  # never sent: the connection is gone
        return web.Response(status=reply.status, body=reply.content, headers=reply.headers)

    async with serve_post("/{tail:.*}", answer, tls) as url:
        yield url
    if failures:
        raise failures[0]
